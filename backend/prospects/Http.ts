import { Effect, Schema } from "effect"
import { normalizedId, textProblem } from "../contract/FieldLimits.ts"
import { type HttpRequest, json, NotFound, jsonBody, type Route, Unprocessable } from "../platform/Http.ts"
import { isJsonObject } from "../platform/Validation.ts"
import { PropertyResult, UnitResult } from "../roster/Domain.ts"
import {
  ProspectInvalid,
  ProspectRequest,
  ProspectResponse,
  ResidentsReset,
  TestResidentReset,
  TestUsersReset,
} from "./Domain.ts"
import { validate } from "./Merge.ts"
import { type ProspectPost, Prospects } from "./Prospects.ts"
import { StagingResets } from "./StagingResets.ts"
import { unknownSourceErrors } from "./Sources.ts"

const prospectInvalid = (fields: Record<string, string>) =>
  new Unprocessable({ message: "Prospect invalid.", resource: "prospect", fields })

/** The prospect of a `{"prospect": {...}}` body, or ProspectInvalid with a sentence per bad field. */
const prospectPostOf = (parsed: unknown): Effect.Effect<ProspectPost, ProspectInvalid> => {
  const raw = isJsonObject(parsed) ? parsed.prospect : undefined
  if (!isJsonObject(raw)) {
    return Effect.fail(
      new ProspectInvalid({
        fields: { prospect: "The body must be an object whose one key, prospect, holds the prospect fields" },
      }),
    )
  }
  return Effect.map(validate(raw), (input) => ({ input, nested: { property: raw.property, unit: raw.unit } }))
}

const notFound = (message: string) => () => Effect.fail(new NotFound({ message }))

const PostProspectResponse = ProspectResponse.mapFields((fields) => ({
  ...fields,
  property: Schema.optionalKey(PropertyResult),
  unit: Schema.optionalKey(UnitResult),
})).annotate({
  identifier: "PostProspectResponse",
  description:
    "The prospect (`status_code` 201 when this POST created it, 200 otherwise), with the roster result of a " +
    "nested `property` or `unit` when one was sent.",
})

const upsertRoute: Route<Prospects> = {
  method: "POST",
  path: "/partners/:owner_slug/prospects",
  access: { scope: "prospects:write" },
  doc: {
    summary: "Create or update a prospect",
    description:
      'Body `{"prospect": {...}}`, upserted on (`source`, `source_prospect_id`). HTTP 200 both times; `status_code` ' +
      "is 201 when the prospect was created. A prospect missing a required field is stored `incomplete` " +
      "(`missing_fields` lists them): POST again with the values. A complete one is `processing` until its " +
      "eligibility is decided (`prospect.ready`, or GET it); the enrollment links appear then, when it is eligible " +
      "for at least one product. Nested `property` and `unit` items follow the roster endpoints' rules and report " +
      "their own result. Field errors and an unknown source are a 422 and change nothing.",
    tag: "Prospects",
    body: ProspectRequest,
    responses: [
      { status: 200, description: "The prospect as stored", schema: PostProspectResponse },
      {
        status: 422,
        description:
          "Invalid fields (a phone that is not 10 digits: 'Phone is not valid'), or a source not issued to these credentials",
      },
    ],
  },
  handle: (request) =>
    Effect.gen(function* () {
      const post = yield* Effect.flatMap(request.json, prospectPostOf)
      const caller = request.caller!
      const { created, ...result } = yield* Prospects.use((prospects) =>
        prospects.upsert(request.params.owner_slug!, caller, post),
      )
      return json(200, { status_code: created ? 201 : 200, ...result })
    }).pipe(
      Effect.catchTags({
        ProspectInvalid: (error) => Effect.fail(prospectInvalid(error.fields)),
        UnknownSource: () => Effect.fail(prospectInvalid(unknownSourceErrors)),
      }),
    ),
}

const getRoute: Route<Prospects> = {
  method: "GET",
  path: "/partners/:owner_slug/prospects/:source/:source_prospect_id",
  access: { scope: "prospects:read" },
  doc: {
    summary: "Fetch a prospect",
    description:
      "The prospect as it is now: status, enrollment links, and the ineligibility reasons the webhook omits " +
      "(`sdi_ineligibility_reasons`, `cd_ineligibility_reasons`, present when there is something to report).",
    tag: "Prospects",
    responses: [
      { status: 200, description: "The prospect", schema: ProspectResponse },
      { status: 404, description: "No such prospect for this owner" },
    ],
  },
  handle: (request) =>
    Prospects.use((prospects) =>
      prospects.get(
        request.params.owner_slug!,
        normalizedId(request.params.source!),
        normalizedId(request.params.source_prospect_id!),
      ),
    ).pipe(
      Effect.map((prospect) => json(200, { status_code: 200, prospect })),
      Effect.catchTag("ProspectNotFound", notFound("Prospect not found.")),
    ),
}

/** The prospect routes of the partner gateway. */
export const prospectRoutes: ReadonlyArray<Route<Prospects>> = [upsertRoute, getRoute]

const STAGING_ONLY = "Staging only: this route does not exist in other environments (404)."

/**
 * The email a `test/sayrhino_users` reset narrows to, from the `email` query parameter or a JSON body's `email`;
 * undefined (every test user of the owner) when neither names one. The published route shows no parameter.
 */
const resetEmail = (request: HttpRequest) =>
  Effect.gen(function* () {
    const fromQuery = request.query.get("email")?.trim()
    if (fromQuery) return fromQuery
    const text = (yield* request.text).trim()
    if (text === "") return undefined
    const body = yield* jsonBody(request.headers, text)
    const email = typeof body === "object" && body !== null ? (body as { email?: unknown }).email : undefined
    if (typeof email !== "string" || email.trim() === "") return undefined
    const problem = textProblem("email", email)
    if (problem !== undefined) {
      return yield* new Unprocessable({
        message: "Reset invalid.",
        resource: "reset",
        fields: { email: `Email ${problem}` },
      })
    }
    return email.trim()
  })

/** Routes that reset test data; the partner gateway serves them only when `SERVICE_ENV=staging`. */
export const stagingRoutes: ReadonlyArray<Route<StagingResets>> = [
  {
    method: "DELETE",
    path: "/partners/:owner_slug/test/residents/:source/:source_prospect_id",
    access: { scope: "prospects:write" },
    doc: {
      summary: "Reset a test resident",
      description: `Removes the prospect so its identifiers can be reused; the next POST creates it again. Its policies in force are canceled. ${STAGING_ONLY}`,
      tag: "Staging",
      responses: [
        { status: 200, description: "What was reset", schema: TestResidentReset },
        { status: 404, description: "No such prospect for this owner" },
      ],
    },
    handle: (request) =>
      StagingResets.use((resets) =>
        resets.resetTestResident(
          request.params.owner_slug!,
          request.params.source!,
          request.params.source_prospect_id!,
        ),
      ).pipe(
        Effect.map((reset) => json(200, { reset, status_code: 200 })),
        Effect.catchTag("ProspectNotFound", notFound("Resident not found.")),
      ),
  },
  {
    method: "DELETE",
    path: "/residents/reset",
    access: { scope: "prospects:write", ownerFromQuery: true },
    doc: {
      summary: "Reset test data of a renter",
      description: `Removes every prospect of \`owner_slug\` whose email is \`email\` (query parameters), so their identifiers can be reused, and cancels their policies in force. ${STAGING_ONLY}`,
      tag: "Staging",
      responses: [
        { status: 200, description: "The prospects removed", schema: ResidentsReset },
        { status: 422, description: "`email` or `owner_slug` missing" },
      ],
    },
    handle: (request) =>
      Effect.gen(function* () {
        const email = request.query.get("email")?.trim() ?? ""
        const slug = request.query.get("owner_slug") ?? ""
        if (email === "" || slug === "") {
          return yield* new Unprocessable({
            message: "Reset invalid.",
            resource: "reset",
            fields: {
              ...(email === "" ? { email: "Email is required" } : {}),
              ...(slug === "" ? { owner_slug: "Owner slug is required" } : {}),
            },
          })
        }
        const reset = yield* StagingResets.use((resets) => resets.resetByEmail(slug, email))
        return json(200, { reset, status_code: 200 })
      }),
  },
  {
    method: "DELETE",
    path: "/partners/:owner_slug/test/sayrhino_users",
    access: { scope: "prospects:write" },
    doc: {
      summary: "Reset the owner's test users",
      description:
        "The published API's name for the staging reset: removes the owner's prospects (only those whose email " +
        "is `email`, when a query parameter or JSON body names one), so their identifiers can be reused, and " +
        "cancels their policies in force. " +
        STAGING_ONLY,
      tag: "Staging",
      responses: [{ status: 200, description: "The prospects removed", schema: TestUsersReset }],
    },
    handle: (request) =>
      Effect.gen(function* () {
        const email = yield* resetEmail(request)
        const { prospect_ids, insurance_policy_ids } = yield* StagingResets.use((resets) =>
          resets.resetByEmail(request.params.owner_slug!, email),
        )
        return json(200, {
          reset: {
            insurance_policy_ids,
            third_party_prospect_ids: prospect_ids,
            unlinked_yardi_resident_ids: [],
            deleted_third_party_prospect_ids: prospect_ids,
          },
          status_code: 200,
        })
      }),
  },
]
