import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { readReplay } from "../../webhooks/replays/Domain.ts"
import { Replays } from "../../webhooks/replays/Replays.ts"
import { actorOf, objectBody, route } from "./Route.ts"

/**
 * Replays of an endpoint, as the partner API has them but for any endpoint: the list, a preview of how many events
 * a replay would send, the start and the cancel (both audited), and one replay's progress.
 */
export const replayRoutes = [
  route("GET", "/api/endpoints/:id/replays", "viewer", (request) =>
    Effect.map(
      Replays.use((replays) => replays.listFor(request.params.id ?? "")),
      (list) => json(200, { replays: list }),
    ),
  ),
  route("POST", "/api/endpoints/:id/replays/preview", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "replay")
      const count = yield* (yield* Replays).preview(request.params.id ?? "", readReplay(body))
      return json(200, { count })
    }),
  ),
  route("POST", "/api/endpoints/:id/replays", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "replay")
      const replay = yield* (yield* Replays).startFor(
        request.params.id ?? "",
        readReplay(body),
        actorOf(request),
      )
      return json(202, { replay })
    }),
  ),
  route("GET", "/api/endpoints/:id/replays/:replay_id", "viewer", (request) =>
    Effect.map(
      Replays.use((replays) => replays.showFor(request.params.id ?? "", request.params.replay_id ?? "")),
      (replay) => json(200, { replay }),
    ),
  ),
  route("POST", "/api/endpoints/:id/replays/:replay_id/cancel", "operator", (request) =>
    Effect.gen(function* () {
      const replay = yield* (yield* Replays).cancelFor(
        request.params.id ?? "",
        request.params.replay_id ?? "",
        actorOf(request),
      )
      return json(200, { replay })
    }),
  ),
]
