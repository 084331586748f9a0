import { Effect } from "effect"
import { runCli as cliMain } from "../../backend/cli/RunCli.ts"

export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export interface RunningCli {
  readonly stdout: () => string
  readonly stderr: () => string
  /** Waits until the output so far matches `pattern`; dies with the output if the command ends first. */
  readonly waitFor: (stream: "stdout" | "stderr", pattern: RegExp) => Effect.Effect<void>
  /** The exit status once the command ended by itself. */
  readonly exited: Effect.Effect<number>
  /** Stops the command as ctrl-C does, and waits for its exit status. */
  readonly stop: Effect.Effect<number>
}

/**
 * A command that runs until stopped (`tail`, `webhooks test-receiver`), in this process through the entry function
 * the binary uses, with `env` as its environment; stopped when the scope closes.
 */
export const startCli = (env: Record<string, string | undefined>, ...args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const output = { stdout: "", stderr: "" }
      const listeners = new Set<() => void>()
      const notify = () => listeners.forEach((listener) => listener())
      const controller = new AbortController()
      const state: { code?: number } = {}
      const done = cliMain(args, {
        stdout: (text) => ((output.stdout += text), notify()),
        stderr: (text) => ((output.stderr += text), notify()),
        env,
        cwd: process.cwd(),
        signal: controller.signal,
      }).then((code) => {
        state.code = code
        notify()
        return code
      })
      return { output, listeners, controller, state, done }
    }),
    ({ controller, done }) => Effect.promise(() => (controller.abort(), done)),
  ).pipe(
    Effect.map(({ output, listeners, controller, state, done }): RunningCli => {
      const describe = () => `stdout:\n${output.stdout}\nstderr:\n${output.stderr}`
      return {
        stdout: () => output.stdout,
        stderr: () => output.stderr,
        waitFor: (stream, pattern) =>
          Effect.callback<void>((resume) => {
            const check = () => {
              if (pattern.test(output[stream])) finish(Effect.void)
              else if (state.code !== undefined)
                finish(Effect.die(new Error(`ended before ${stream} matched ${pattern}\n${describe()}`)))
            }
            const finish = (result: Effect.Effect<void>) => {
              listeners.delete(check)
              resume(result)
            }
            listeners.add(check)
            check()
            return Effect.sync(() => listeners.delete(check))
          }),
        exited: Effect.promise(() => done),
        stop: Effect.promise(() => (controller.abort(), done)),
      }
    }),
  )

/** `npm run cli -- ...args` with `env`, to the end, in this process through the entry function the binary uses. */
export const runCli = (env: Record<string, string | undefined>, ...args: ReadonlyArray<string>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const cli = yield* startCli(env, ...args)
      const code = yield* cli.exited
      return { code, stdout: cli.stdout(), stderr: cli.stderr() } satisfies CliRun
    }),
  )
