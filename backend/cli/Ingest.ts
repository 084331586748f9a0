import { Effect } from "effect"
import type { IngestOutcome } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import type { Input } from "./CommandLine.ts"
import { CliIo } from "./Io.ts"
import { CliUsage } from "./Usage.ts"

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 1000

/** `--limit`: a whole number from 1 to MAX_LIMIT, DEFAULT_LIMIT when absent. */
const limitOf = (value: string | undefined) =>
  value === undefined
    ? Effect.succeed(DEFAULT_LIMIT)
    : /^[1-9][0-9]*$/.test(value) && Number(value) <= MAX_LIMIT
      ? Effect.succeed(Number(value))
      : Effect.fail(
          new CliUsage({ message: `--limit must be a whole number from 1 to ${MAX_LIMIT}, not '${value}'` }),
        )

/** `ingest log`: what became of each inbound event (applied, or why not), newest first, one JSON per line. */
export const ingestLog = Effect.fn("cli.ingest.log")(function* (input: Input<"ingest log">) {
  const { options } = input
  const records = yield* (yield* Ingest).log({
    source: options.source,
    sourceProspectId: options.prospect,
    outcome: options.outcome as IngestOutcome | undefined,
    limit: yield* limitOf(options.limit),
  })
  const io = yield* CliIo
  io.stdout(records.map((record) => `${JSON.stringify(record)}\n`).join(""))
})
