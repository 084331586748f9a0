import { Effect } from "effect"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { createClient, gatewayPort, httpRequest, obtainToken } from "./Auth.ts"

/** The `ProspectUpdate` mapping of the example, for a payload shaped like `prospectUpdate` below. */
export const PROSPECT_UPDATE_MAPPING = {
  ProspectUpdate: {
    source_prospect_id: "/id",
    pms_property_id: "/property/code",
    occurred_at: "/updated_at",
    first_name: "/applicant/first_name",
    last_name: "/applicant/last_name",
    email: "/applicant/email",
    phone: "/applicant/phone",
    earliest_move_in_date: "/move_in",
  },
}

/** A `ProspectUpdate` payload in the partner's own field names. */
export const prospectUpdate = (id: string, updatedAt: string, overrides: Record<string, unknown> = {}) => ({
  id,
  property: { code: "pms-prop-1" },
  updated_at: updatedAt,
  applicant: { first_name: "Jane", last_name: "Roe", email: "jane@example.com", phone: "5551234567" },
  move_in: "2026-03-01",
  ...overrides,
})

export interface IngestClient {
  readonly clientId: string
  readonly token: string
}

/** An ingestion client of `source` granted `owners`, with a real token from the ingestion gateway. */
export const ingestClient = (source: string, owners: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "ingest", owners, source })
    return { clientId: client.clientId, token: yield* obtainToken("ingest", client) } satisfies IngestClient
  })

/** The source's mappings become `mapping`, as `sources mapping set` makes them. */
export const setMapping = (source: string, mapping: unknown) =>
  Effect.flatMap(Effect.service(Ingest), (ingest) => ingest.setMapping(source, mapping)).pipe(Effect.orDie)

/** `POST /events` on the ingestion gateway. */
export const postEvent = (client: IngestClient, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("ingest-api"), "/events", {
      method: "POST",
      headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    })
    return { status: answer.status, text: answer.text, headers: answer.headers }
  })
