import { spawn } from "node:child_process"
import { Effect } from "effect"

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface RunningProcess {
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Waits until the output so far matches `pattern`; dies with the output if the process ends first. */
  readonly waitFor: (stream: "stdout" | "stderr", pattern: RegExp) => Effect.Effect<void>
  /** Once the process has ended and its output is closed. */
  readonly exited: Effect.Effect<Exit>
  /** Signals the whole process group, as ctrl-C in a terminal does. */
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** Whether any process of the group (the command and whatever it started) is still there. */
  readonly groupRunning: Effect.Effect<boolean>
}

/** Sends `signal` to the process group led by `pid`; false when no process of the group is left. */
const signalGroup = (pid: number, signal: NodeJS.Signals | 0) => {
  try {
    return process.kill(-pid, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false
    throw error
  }
}

/**
 * Starts a command in a process group of its own, collecting its output. When the scope closes, whatever is
 * left of the group is killed, so a failed test leaves no process behind.
 */
export const spawnProcess = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: Record<string, string | undefined> },
) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      })
      const output = { stdout: "", stderr: "" }
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output.stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output.stderr += chunk))
      const state: { exit?: Exit } = {}
      const closed = new Promise<Exit>((resolve) =>
        child.once("close", (code, signal) => resolve((state.exit = { code, signal }))),
      )
      return { child, output, state, closed }
    }),
    ({ child }) => Effect.sync(() => void signalGroup(child.pid!, "SIGKILL")),
  ).pipe(
    Effect.map(({ child, output, state, closed }): RunningProcess => {
      const describe = () => `stdout:\n${output.stdout}\nstderr:\n${output.stderr}`
      return {
        pid: child.pid!,
        stdout: () => output.stdout,
        stderr: () => output.stderr,
        waitFor: (stream, pattern) =>
          Effect.callback<void>((resume) => {
            const check = () => {
              if (pattern.test(output[stream])) finish(Effect.void)
              else if (state.exit)
                finish(
                  Effect.die(
                    new Error(
                      `ended (${JSON.stringify(state.exit)}) before ${stream} matched ${pattern}\n${describe()}`,
                    ),
                  ),
                )
            }
            const stop = () => {
              child[stream].off("data", check)
              child.off("close", check)
            }
            const finish = (result: Effect.Effect<void>) => {
              stop()
              resume(result)
            }
            child[stream].on("data", check)
            child.once("close", check)
            check()
            return Effect.sync(stop)
          }),
        exited: Effect.promise(() => closed),
        signal: (signal) => Effect.sync(() => void signalGroup(child.pid!, signal)),
        groupRunning: Effect.sync(() => signalGroup(child.pid!, 0)),
      }
    }),
  )
