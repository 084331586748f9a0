import { Effect } from "effect"
import type { IngestOutcome } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import { CliUsage, parse } from "./Usage.ts"

const LOG_USAGE =
  "usage: ingest log [--source CODE] [--prospect SOURCE_PROSPECT_ID] " +
  "[--outcome applied|stale|duplicate|ignored] [--limit N]"

const OUTCOMES: ReadonlyArray<IngestOutcome> = ["applied", "stale", "duplicate", "ignored"]
const DEFAULT_LIMIT = 50
const MAX_LIMIT = 1000

const isOutcome = (value: string): value is IngestOutcome => OUTCOMES.includes(value as IngestOutcome)

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
export const ingest = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const service = yield* Ingest
    switch (command) {
      case "log": {
        const { values, positionals } = yield* parse(rest, {
          source: { type: "string" },
          prospect: { type: "string" },
          outcome: { type: "string" },
          limit: { type: "string" },
        })
        if (positionals.length > 0) return yield* new CliUsage({ message: LOG_USAGE })
        const outcome = values.outcome
        if (outcome !== undefined && !isOutcome(outcome)) {
          return yield* new CliUsage({
            message: `--outcome must be ${OUTCOMES.join(", ")}, not '${outcome}'`,
          })
        }
        const records = yield* service.log({
          source: values.source,
          sourceProspectId: values.prospect,
          outcome,
          limit: yield* limitOf(values.limit),
        })
        return yield* Effect.sync(() =>
          process.stdout.write(records.map((record) => `${JSON.stringify(record)}\n`).join("")),
        )
      }
      default:
        return yield* new CliUsage({ message: `unknown ingest command: ${command ?? "(none)"}` })
    }
  })
