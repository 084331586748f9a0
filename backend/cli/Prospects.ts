import { Effect } from "effect"
import { Prospects } from "../prospects/Prospects.ts"
import { CliUsage, parse, printJson } from "./Usage.ts"

/** `--source CODE --id SOURCE_PROSPECT_ID`, the key every prospects command takes, and nothing else. */
const prospectKey = (command: string, rest: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* parse(rest, {
      source: { type: "string" },
      id: { type: "string" },
    })
    if (!values.source || !values.id || positionals.length > 0) {
      return yield* new CliUsage({
        message: `usage: prospects ${command} --source CODE --id SOURCE_PROSPECT_ID`,
      })
    }
    return { source: values.source, id: values.id }
  })

/** `prospects show|recheck`: a prospect as the API shows it, whatever its owner, and a fresh decision. */
export const prospects = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const service = yield* Prospects
    switch (command) {
      case "show": {
        const key = yield* prospectKey(command, rest)
        return yield* printJson(yield* service.show(key.source, key.id))
      }
      case "recheck": {
        // The prospect goes to `processing`; the workers decide it, as they decide a POSTed one.
        const key = yield* prospectKey(command, rest)
        return yield* printJson(yield* service.recheck(key.source, key.id))
      }
      default:
        return yield* new CliUsage({ message: `unknown prospects command: ${command ?? "(none)"}` })
    }
  })
