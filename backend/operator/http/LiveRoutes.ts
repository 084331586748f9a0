import { Effect } from "effect"
import { Unauthorized } from "../../platform/Http.ts"
import { LiveFeed } from "../LiveFeed.ts"
import { Sessions } from "../Sessions.ts"
import { sessionToken } from "./Cookie.ts"
import { route } from "./Route.ts"

/**
 * The live view: Server-Sent Events of deliveries, endpoints and bulk retries for every page a viewer may open.
 * The guard already checked the session; it is read again here for its id, which the stream checks as it runs.
 */
export const liveRoutes = [
  route("GET", "/api/live", "viewer", (request) =>
    Effect.gen(function* () {
      const session = yield* (yield* Sessions).current(sessionToken(request.headers))
      if (session === undefined) return yield* new Unauthorized()
      const stream = (yield* LiveFeed).open(session.id)
      return new Response(stream, {
        status: 200,
        headers: {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-store",
          // A buffering proxy in front would hold the events back.
          "x-accel-buffering": "no",
        },
      })
    }),
  ),
]
