import { Effect } from "effect"
import { Secrets } from "../webhooks/Secrets.ts"
import { CliUsage, list, parse, printJson } from "./Usage.ts"
import { cliActor } from "./Webhooks.ts"

const CREATE_USAGE =
  "usage: providers create NAME --owners slug1,slug2 | --properties OWNER_SLUG/PROPERTY_EXTERNAL_ID,..."

/** `providers create|list`: platform providers, whose one webhook subscriber covers several owners. */
export const providers = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const service = yield* Secrets
    switch (command) {
      case "create": {
        const { values, positionals } = yield* parse(rest, {
          owners: { type: "string" },
          properties: { type: "string" },
        })
        const owners = list(values.owners)
        const properties = list(values.properties)
        // One kind of coverage: every event of the owners, or only those of the named buildings.
        if (positionals.length !== 1 || (owners === undefined) === (properties === undefined)) {
          return yield* new CliUsage({ message: CREATE_USAGE })
        }
        if ((owners ?? properties ?? []).length === 0) {
          return yield* new CliUsage({ message: `${CREATE_USAGE}\n(the list must name at least one)` })
        }
        const provider = yield* service.provisionProvider(
          positionals[0]!,
          owners !== undefined ? { owners } : { properties: properties ?? [] },
          cliActor(),
        )
        return yield* printJson(provider)
      }
      case "list": {
        const { positionals } = yield* parse(rest, {})
        if (positionals.length > 0) return yield* new CliUsage({ message: "usage: providers list" })
        return yield* printJson(yield* service.providers)
      }
      default:
        return yield* new CliUsage({ message: `unknown providers command: ${command ?? "(none)"}` })
    }
  })
