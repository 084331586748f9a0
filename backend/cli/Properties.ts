import { Effect } from "effect"
import { normalizedId } from "../contract/FieldLimits.ts"
import { AddressCorrectionRejected } from "../roster/Domain.ts"
import { Roster } from "../roster/Roster.ts"
import type { Input } from "./CommandLine.ts"
import { CliIo, printJson, readJsonFile } from "./Io.ts"
import { cliActor } from "./Webhooks.ts"

/** `properties set-address`: service staff correct a building's address, which locks it (audited). */
export const setPropertyAddress = Effect.fn("cli.properties.setAddress")(function* (
  input: Input<"properties set-address">,
) {
  const [slug, externalId] = input.args
  const file = yield* readJsonFile(
    input.options.file,
    (message) => new AddressCorrectionRejected({ message }),
  )
  const actor = cliActor((yield* CliIo).env)
  return yield* printJson(yield* (yield* Roster).correctAddress(slug, normalizedId(externalId), file, actor))
})
