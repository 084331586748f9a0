import { parseArgs, type ParseArgsConfig } from "node:util"
import { Effect, Schema } from "effect"

/** A command line that does not fit the command: printed with the usage, exit status 2. */
export class CliUsage extends Schema.TaggedError<CliUsage>()("CliUsage", { message: Schema.String }) {}

/** `node:util` parseArgs, with its errors (unknown option, missing value) as CliUsage. */
export const parse = <const O extends NonNullable<ParseArgsConfig["options"]>>(
  args: ReadonlyArray<string>,
  options: O,
) =>
  Effect.try({
    try: () => parseArgs({ args: [...args], options, allowPositionals: true, strict: true }),
    catch: (error) => new CliUsage({ message: (error as Error).message }),
  })

/** A comma-separated option as a list; absent stays absent. */
export const list = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(/[,\s]+/)
        .map((item) => item.trim())
        .filter((item) => item !== "")

export const printJson = (value: unknown) =>
  Effect.sync(() => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`))
