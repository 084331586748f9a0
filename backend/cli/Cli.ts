import { runCli } from "./RunCli.ts"

const STOP_BUDGET_MS = 10_000

/**
 * `npm run cli -- ...`: the CLI as a process. Its result goes to stdout, everything else to stderr. SIGINT/SIGTERM
 * stop a command that runs until stopped (tail, the test receiver), which then exits 0. Later signals are ignored
 * (ctrl-C reaches npm, the bootstrap and this process at once, and the first two pass it on again); a stop that
 * takes longer than its budget exits 1.
 */
const stop = new AbortController()
const onSignal = () => {
  if (stop.signal.aborted) return
  stop.abort()
  setTimeout(() => {
    process.stderr.write(`stopping took longer than ${STOP_BUDGET_MS} ms; exiting\n`)
    process.exit(1)
  }, STOP_BUDGET_MS).unref()
}
process.on("SIGINT", onSignal).on("SIGTERM", onSignal)

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  // npm runs scripts from the package root and says in INIT_CWD where the operator ran it.
  cwd: process.env.INIT_CWD ?? process.cwd(),
  signal: stop.signal,
})
// Exits now rather than once the event loop drains: while Node tears a drained loop down, SIGINT and SIGTERM are back
// to their default action, so a copy of ctrl-C arriving then (npm and the bootstrap pass it on) would end the process
// by the signal, status 130, after a clean stop. stdout and stderr are written synchronously on Linux, so nothing is
// cut short.
process.exit(code)
