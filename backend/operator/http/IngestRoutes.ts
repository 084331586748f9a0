import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { IngestOutcomes } from "../IngestApi.ts"
import { IngestLog } from "../IngestLog.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { route } from "./Route.ts"

const SERVICE_PROSPECT_ID = /^tpp_(\d{1,18})$/

/** The ingest log: every inbound event with its outcome, newest first, a page at a time. */
export const ingestRoutes = [
  route("GET", "/api/ingest", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const outcome = reader.text("outcome", 20)
      if (outcome !== undefined && !(IngestOutcomes as ReadonlyArray<string>).includes(outcome)) {
        reader.fields.outcome = `must be one of ${IngestOutcomes.join(", ")}`
      }
      // A prospect is the service's `tpp_<n>` or the partner's own id.
      const prospect = reader.text("prospect")
      const serviceId = prospect === undefined ? undefined : SERVICE_PROSPECT_ID.exec(prospect)?.[1]
      const filter = yield* checkedQuery(reader, {
        source: reader.text("source"),
        outcome: outcome as (typeof IngestOutcomes)[number] | undefined,
        prospectId: serviceId,
        sourceProspectId: serviceId === undefined ? prospect : undefined,
        since: reader.date("since"),
        until: reader.date("until"),
        before: reader.cursor(),
        limit: reader.limit(),
      })
      const page = yield* (yield* IngestLog).page(filter)
      return json(200, { entries: page.entries, next_cursor: encodeCursor(page.lastId) })
    }),
  ),
]
