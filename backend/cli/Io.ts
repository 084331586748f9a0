import { readFile } from "node:fs/promises"
import { resolve } from "node:path"
import { Context, Effect } from "effect"

/**
 * What a CLI run reads and writes besides the platform: its output streams, its environment and where relative
 * paths start. The binary hands it the process's; tests hand it buffers and an environment of their own.
 */
export interface CliIoShape {
  /** The command's result: JSON where it returns data. */
  readonly stdout: (text: string) => void
  /** Everything else: progress, logs, refusals. */
  readonly stderr: (text: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
  /** Where a relative path on the command line starts. */
  readonly cwd: string
  /** Aborted to stop a command that runs until stopped (tail, the test receiver). */
  readonly signal?: AbortSignal | undefined
}

export class CliIo extends Context.Service<CliIo, CliIoShape>()("partner-service/cli/CliIo") {}

export const printJson = (value: unknown) =>
  CliIo.use((io) => Effect.sync(() => io.stdout(`${JSON.stringify(value, null, 2)}\n`)))

export const printLine = (line: string) => CliIo.use((io) => Effect.sync(() => io.stdout(`${line}\n`)))

/** A JSON file named on the command line, relative to where the operator ran the command. */
export const readJsonFile = <E>(file: string, reject: (message: string) => E) =>
  Effect.gen(function* () {
    const path = resolve((yield* CliIo).cwd, file)
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) => reject(`cannot read ${file}: ${(error as Error).message}`),
    })
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) => reject(`${file} is not valid JSON: ${(error as Error).message}`),
    })
  })
