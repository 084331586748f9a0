import { Effect } from "effect"
import { Roster } from "../roster/Roster.ts"
import { CliUsage, list, parse, printJson } from "./Usage.ts"

/** `owners create-managed|grant`: owners with an existing relationship with the service. */
export const owners = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const roster = yield* Roster
    switch (command) {
      case "create-managed": {
        const { values } = yield* parse(rest, {
          name: { type: "string" },
          "external-org-id": { type: "string" },
        })
        if (!values.name || !values["external-org-id"]) {
          return yield* new CliUsage({
            message: "usage: owners create-managed --name NAME --external-org-id ID",
          })
        }
        const owner = yield* roster.createManagedOwner(values.name, values["external-org-id"])
        return yield* printJson({
          owner_slug: owner.slug,
          name: owner.name,
          external_org_id: owner.external_org_id,
        })
      }
      case "grant": {
        const { values } = yield* parse(rest, {
          owner: { type: "string" },
          client: { type: "string" },
          buildings: { type: "string" },
        })
        if (!values.owner || !values.client) {
          return yield* new CliUsage({
            message: "usage: owners grant --owner SLUG --client CLIENT_ID [--buildings PMS_PROPERTY_ID,...]",
          })
        }
        const owner = yield* roster.ownerBySlug(values.owner)
        if (owner === undefined) return yield* new CliUsage({ message: `no owner ${values.owner}` })
        const buildings = list(values.buildings) ?? null
        yield* roster
          .grantOwner(owner.id, values.client, buildings)
          .pipe(
            Effect.catchDefect(() => Effect.fail(new CliUsage({ message: `no client ${values.client}` }))),
          )
        return yield* printJson({ owner_slug: owner.slug, client_id: values.client, buildings })
      }
      default:
        return yield* new CliUsage({ message: `unknown owners command: ${command ?? "(none)"}` })
    }
  })
