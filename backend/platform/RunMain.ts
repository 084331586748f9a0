import { NodeRuntime } from "@effect/platform-node"
import { Cause, type Effect, Exit } from "effect"

/**
 * Runs a program as the process: SIGINT/SIGTERM interrupt it and its scopes close. A run that succeeds or was
 * asked to stop exits with `process.exitCode` (0 unless the program set one); anything else exits 1.
 */
export const runMain = <E>(program: Effect.Effect<void, E>) =>
  NodeRuntime.runMain(program, {
    teardown: (exit, onExit) =>
      onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? Number(process.exitCode ?? 0) : 1),
  })
