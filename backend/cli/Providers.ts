import { Effect } from "effect"
import { Secrets } from "../webhooks/endpoints/Secrets.ts"
import { type Input, list, usageOf } from "./CommandLine.ts"
import { CliIo, printJson } from "./Io.ts"
import { CliUsage } from "./Usage.ts"
import { cliActor } from "./Webhooks.ts"

/** `providers create`: a platform provider, whose one webhook subscriber covers several owners or buildings. */
export const createProvider = Effect.fn("cli.providers.create")(function* (input: Input<"providers create">) {
  const owners = list(input.options.owners)
  const properties = list(input.options.properties)
  // One kind of coverage: every event of the owners, or only those of the named buildings.
  if ((owners === undefined) === (properties === undefined)) {
    return yield* new CliUsage({ message: usageOf("providers create") })
  }
  if ((owners ?? properties ?? []).length === 0) {
    return yield* new CliUsage({
      message: `${usageOf("providers create")}\n(the list must name at least one)`,
    })
  }
  const provider = yield* (yield* Secrets).provisionProvider(
    input.args[0],
    owners !== undefined ? { owners } : { properties: properties ?? [] },
    cliActor((yield* CliIo).env),
  )
  return yield* printJson(provider)
})

export const listProviders = Effect.fn("cli.providers.list")(function* () {
  return yield* printJson(yield* (yield* Secrets).providers)
})
