import { Schema } from "effect"

/** A command line that does not fit the command: printed with the command list, exit status 2. */
export class CliUsage extends Schema.TaggedError<CliUsage>()("CliUsage", { message: Schema.String }) {}
