import { Effect, Schema } from "effect"
import { type ApiError, Conflict, json, type Route, Unprocessable } from "../platform/Http.ts"
import { decodeFields, joinedMessages } from "../platform/Validation.ts"
import {
  BankAccountItem,
  BankAccountResult,
  BatchRejected,
  batchResponse,
  MAX_BATCH,
  PropertyItem,
  PropertyOwnerInput,
  PropertyOwnerResponse,
  PropertyResult,
  UnitItem,
  UnitResult,
} from "./Domain.ts"
import { Roster } from "./Roster.ts"

const decodeOwner = decodeFields(PropertyOwnerInput)

const rejectBatch = (error: BatchRejected) => new Unprocessable({ message: error.message })

/** A batch body's items: a JSON array of at most `MAX_BATCH`, or refused whole. */
const batchOf = (parsed: unknown) =>
  !Array.isArray(parsed)
    ? Effect.fail(
        new BatchRejected({ message: "The body must be a JSON array of items (even for one item)." }),
      )
    : parsed.length > MAX_BATCH
      ? Effect.fail(
          new BatchRejected({
            message: `A batch holds at most ${MAX_BATCH} items; this one has ${parsed.length}. Nothing was processed.`,
          }),
        )
      : Effect.succeed(parsed as ReadonlyArray<unknown>)

/** The caller's id: every route here is non-public, so the guard has set it. */
const callerOf = (request: { readonly caller?: { readonly clientId: string } | undefined }) =>
  request.caller?.clientId ?? ""

const ownerRoute: Route<Roster> = {
  method: "POST",
  path: "/partners/property_owners",
  access: { scope: "owners:write" },
  doc: {
    summary: "Create or update a property owner",
    description:
      "An upsert on `external_org_id`, one owner object (not an array). A new owner starts with " +
      "`purchase_flow_enabled` false and is granted to the client that created it; sending " +
      "`purchase_flow_enabled` true later makes it active. HTTP 200 both times; `status_code` is 201 on creation.",
    tag: "Roster",
    body: PropertyOwnerInput,
    responses: [
      { status: 200, description: "The owner, with its slug", schema: PropertyOwnerResponse },
      { status: 409, description: "The `external_org_id` belongs to an owner the service manages directly" },
      { status: 422, description: "Invalid fields" },
    ],
  },
  handle: (request) =>
    Effect.gen(function* () {
      const decoded = decodeOwner(yield* request.json)
      if ("errors" in decoded) {
        return yield* new Unprocessable({
          message: "Property owner invalid.",
          resource: "property_owner",
          fields: joinedMessages(decoded.errors),
        })
      }
      const { created, owner } = yield* Roster.use((roster) =>
        roster.upsertOwner(callerOf(request), decoded.value),
      )
      return json(200, {
        status_code: created ? 201 : 200,
        owner_slug: owner.owner_slug,
        property_owner: owner,
      })
    }).pipe(
      Effect.catchTags({
        OwnerManagedByService: (error): Effect.Effect<never, ApiError> =>
          Effect.fail(
            new Conflict({
              message: `The owner ${error.externalOrgId} is managed by the service directly: coordinate with your partner success contact.`,
            }),
          ),
        OwnerInvalid: (error) =>
          Effect.fail(
            new Unprocessable({
              message: "Property owner invalid.",
              resource: "property_owner",
              fields: error.fields,
            }),
          ),
      }),
    ),
}

const batchRoute = (options: {
  readonly path: string
  readonly scope: string
  readonly summary: string
  readonly description: string
  readonly item: Schema.Top
  readonly result: Schema.Top
  readonly responseName: string
  readonly run: (
    roster: Roster["Service"],
    slug: string,
    clientId: string,
    items: ReadonlyArray<unknown>,
  ) => Effect.Effect<{ readonly results: ReadonlyArray<unknown>; readonly meta: unknown }>
}): Route<Roster> => ({
  method: "POST",
  path: options.path,
  access: { scope: options.scope },
  doc: {
    summary: options.summary,
    description: `${options.description} A JSON array of at most 500 items (even for one); HTTP 200 with one result per item, in order — inspect each item's \`action\` and \`errors\`. A larger batch is refused whole with 422.`,
    tag: "Roster",
    body: Schema.Array(options.item),
    responses: [
      {
        status: 200,
        description: "One result per item",
        schema: batchResponse(options.responseName, options.result),
      },
      { status: 422, description: "Not an array, or more than 500 items: nothing was processed" },
    ],
  },
  handle: (request) =>
    Effect.gen(function* () {
      const items = yield* request.json.pipe(
        Effect.flatMap((body) => Effect.mapError(batchOf(body), rejectBatch)),
      )
      const roster = yield* Roster
      const { results, meta } = yield* options.run(
        roster,
        request.params.owner_slug!,
        callerOf(request),
        items,
      )
      return json(200, { status_code: 200, results, meta })
    }),
})

/** The roster routes of the partner gateway. */
export const rosterRoutes: ReadonlyArray<Route<Roster>> = [
  ownerRoute,
  batchRoute({
    path: "/partners/:owner_slug/bank_accounts",
    scope: "bank_accounts:write",
    summary: "Register bank accounts",
    description:
      "Upserts on `external_system_id`. The owner's first account becomes its default; `default: true` moves the default, and `false` on the current default fails the item. Account numbers are never returned: results echo `account_number_last4`.",
    item: BankAccountItem,
    result: BankAccountResult,
    responseName: "BankAccountBatchResponse",
    run: (roster, slug, _clientId, items) => roster.upsertBankAccounts(slug, items),
  }),
  batchRoute({
    path: "/partners/:owner_slug/properties",
    scope: "properties:write",
    summary: "Create or update properties",
    description:
      "Each item is matched in order: its linked `external_system_id`; then (`pms_type`, `pms_property_id`), with `building_name` choosing among several buildings; then `building_name` with the normalized street line and zip; otherwise a building is created. Results show the stored `building_name` and normalized address.",
    item: PropertyItem,
    result: PropertyResult,
    responseName: "PropertyBatchResponse",
    run: (roster, slug, clientId, items) => roster.upsertProperties(slug, clientId, items),
  }),
  batchRoute({
    path: "/partners/:owner_slug/units",
    scope: "units:write",
    summary: "Create or update units",
    description:
      "Matched within the building by linked `external_system_id`, then `pms_unit_id`, then `name` ignoring case. Without a `name`, it is derived from the unit's address. Send a building's units in one request so the derived building street and unit names resolve at once. Results show the stored `name`.",
    item: UnitItem,
    result: UnitResult,
    responseName: "UnitBatchResponse",
    run: (roster, slug, clientId, items) => roster.upsertUnits(slug, clientId, items),
  }),
]
