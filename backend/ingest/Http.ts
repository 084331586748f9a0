import { Effect } from "effect"
import { json, requireJsonType, type Route } from "../platform/Http.ts"
import { Ingest } from "./Ingest.ts"

/**
 * `POST /events` on the ingestion gateway: 202 once JetStream has stored the event, 503 (nothing accepted) when
 * it cannot; the partner learns what became of it only through webhooks.
 */
const eventsRoute: Route<Ingest> = {
  method: "POST",
  path: "/events",
  access: { scope: "ingest:events" },
  handle: (request) =>
    Effect.gen(function* () {
      const bytes = yield* request.bytes
      yield* requireJsonType(request.headers, bytes.byteLength)
      const accepted = yield* Ingest.use((ingest) => ingest.accept(request.caller!, bytes))
      return json(202, accepted)
    }),
}

export const ingestRoutes: ReadonlyArray<Route<Ingest>> = [eventsRoute]
