import { Effect } from "effect"
import { PortalLive } from "./PortalLive.ts"
import { portalRoute } from "./Routes.ts"

/** `GET /portal/api/live`: Server-Sent Events of the holder's deliveries, endpoints and recoveries. */
export const liveRoutes = [
  portalRoute({
    method: "GET",
    path: "/portal/api/live",
    change: false,
    handle: (session) =>
      Effect.gen(function* () {
        const stream = yield* PortalLive.use((live) => live.open(session))
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
  }),
]
