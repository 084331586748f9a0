import { Effect } from "effect"
import { normalizedId, textProblem } from "../contract/FieldLimits.ts"
import { Roster } from "../roster/Roster.ts"
import { type Input, list } from "./CommandLine.ts"
import { printJson } from "./Io.ts"
import { CliUsage } from "./Usage.ts"

/** `owners create-managed`: an owner with an existing relationship with the service. */
export const createManagedOwner = Effect.fn("cli.owners.createManaged")(function* (
  input: Input<"owners create-managed">,
) {
  const externalOrgId = input.options["external-org-id"]
  const problem = textProblem("external_org_id", externalOrgId)
  if (problem !== undefined) return yield* new CliUsage({ message: `--external-org-id ${problem}` })
  const owner = yield* (yield* Roster).createManagedOwner(input.options.name, normalizedId(externalOrgId))
  return yield* printJson({
    owner_slug: owner.slug,
    name: owner.name,
    external_org_id: owner.external_org_id,
  })
})

/** `owners grant`: an owner, or only named buildings of it, granted to a client. */
export const grantOwner = Effect.fn("cli.owners.grant")(function* (input: Input<"owners grant">) {
  const { options } = input
  const roster = yield* Roster
  const owner = yield* roster.ownerBySlug(options.owner)
  if (owner === undefined) return yield* new CliUsage({ message: `no owner ${options.owner}` })
  const buildings = list(options.buildings) ?? null
  yield* roster
    .grantOwner(owner.id, options.client, buildings)
    .pipe(Effect.catchDefect(() => Effect.fail(new CliUsage({ message: `no client ${options.client}` }))))
  return yield* printJson({ owner_slug: owner.slug, client_id: options.client, buildings })
})
