import { Effect } from "effect"
import { type ApiError, json, NotFound, type Route, Unprocessable } from "../../platform/Http.ts"
import type { EndpointNotFound, OwnerUnknown, ProviderNotProvisioned } from "../Domain.ts"
import {
  type ReplayBeyondRetention,
  ReplayCreatedResponse,
  type ReplayInvalid,
  type ReplayNotFound,
  readReplay,
  ReplayRequest,
  ReplayResponse,
} from "./Domain.ts"
import { PER_SECOND } from "./ReplayRunner.ts"
import { Replays } from "./Replays.ts"
import {
  body,
  ENDPOINTS_PATH,
  type Kind,
  notFound,
  refOf,
  subscriberNotFound,
  webhookRoute,
} from "../Routes.ts"

const PREFIX: Record<Kind, string> = {
  owner: `${ENDPOINTS_PATH.owner}/:endpoint_id`,
  provider: `${ENDPOINTS_PATH.provider}/:endpoint_id`,
}

type ReplayError =
  | ReplayInvalid
  | ReplayBeyondRetention
  | ReplayNotFound
  | EndpointNotFound
  | ProviderNotProvisioned
  | OwnerUnknown

/** The one place where the replay failures become the contract's error bodies. */
const apiErrors = <A, R>(
  effect: Effect.Effect<A, ReplayError | ApiError, R>,
): Effect.Effect<A, ApiError, R> =>
  Effect.mapError(effect, (error): ApiError => {
    switch (error._tag) {
      case "ReplayInvalid":
        return new Unprocessable({
          message: "Invalid replay params.",
          resource: "replay",
          fields: error.fields,
        })
      case "ReplayBeyondRetention":
        return new Unprocessable({
          message: `Since is before the oldest event kept, ${error.oldest}.`,
          resource: "replay",
          fields: { since: `Since must be ${error.oldest} or later (the oldest event kept)` },
        })
      case "ReplayNotFound":
        return new NotFound({ message: "Replay not found." })
      case "EndpointNotFound":
      case "ProviderNotProvisioned":
      case "OwnerUnknown":
        return subscriberNotFound(error)
      default:
        return error
    }
  })

const route = webhookRoute(apiErrors)

const replayRoutesOf = (kind: Kind): ReadonlyArray<Route<Replays>> => {
  const base = PREFIX[kind]
  const whose = kind === "provider" ? "a provider " : "an "
  return [
    route({
      method: "POST",
      path: `${base}/replay`,
      doc: {
        summary: `Replay events to ${whose}endpoint`,
        description:
          "Sends the endpoint again what it missed: every event " +
          (kind === "owner" ? "of the owner" : "of the owners and buildings the provider covers") +
          " stored since `since` (and until `until`, now when omitted) that the endpoint subscribes to (only " +
          "`events` when given) and has no delivery of yet. The events are found when the replay is asked for " +
          "(`total`); each goes out as a new delivery, signed, rate-limited and retried like any other, at most " +
          `${PER_SECOND} a second, in the order they were stored. A replay survives a restart of the service; ` +
          "`GET .../replays/{id}` shows its progress and `POST .../replays/{id}/cancel` stops it. A second " +
          "replay of the same range finds nothing new (`total` 0). Events are kept seven days: a `since` before " +
          "the oldest one kept is a 422 naming it.",
        body: ReplayRequest,
        responses: [
          {
            status: 202,
            description: "The replay, started (or completed at once when `total` is 0)",
            schema: ReplayCreatedResponse,
          },
          { status: 400, description: "The body is not JSON" },
          { status: 404, description: notFound(kind) },
          {
            status: 422,
            description:
              "`Invalid replay params.` with a message per field (`since`, `until`, `events`), or `Since is " +
              "before the oldest event kept, <time>.`",
          },
        ],
      },
      handle: (request) =>
        Effect.gen(function* () {
          const input = yield* body(request)
          const replay = yield* Replays.use((replays) =>
            replays.start(refOf(kind, request), request.params.endpoint_id ?? "", readReplay(input)),
          )
          return json(202, { status_code: 202, replay })
        }),
    }),
    route({
      method: "GET",
      path: `${base}/replays/:id`,
      doc: {
        summary: `Fetch a replay of ${whose}endpoint`,
        description:
          "Its status (`running`, `completed`, `canceled`), how many events it found and how many went out.",
        responses: [
          { status: 200, description: "The replay", schema: ReplayResponse },
          { status: 404, description: `${notFound(kind)}, or no such replay of it` },
        ],
      },
      handle: (request) =>
        Replays.use((replays) =>
          replays.show(refOf(kind, request), request.params.endpoint_id ?? "", request.params.id ?? ""),
        ).pipe(Effect.map((replay) => json(200, { status_code: 200, replay }))),
    }),
    route({
      method: "POST",
      path: `${base}/replays/:id/cancel`,
      doc: {
        summary: `Cancel a replay of ${whose}endpoint`,
        description:
          "Stops a running replay: the events not sent yet are not sent (the deliveries already made go on). A " +
          "replay that already ended is answered as it ended. The body is ignored.",
        responses: [
          { status: 200, description: "The replay, canceled", schema: ReplayResponse },
          { status: 404, description: `${notFound(kind)}, or no such replay of it` },
        ],
      },
      handle: (request) =>
        Replays.use((replays) =>
          replays.cancel(refOf(kind, request), request.params.endpoint_id ?? "", request.params.id ?? ""),
        ).pipe(Effect.map((replay) => json(200, { status_code: 200, replay }))),
    }),
  ]
}

/** The replay routes of the partner gateway, on the owner and provider paths. */
export const replayRoutes: ReadonlyArray<Route<Replays>> = [
  ...replayRoutesOf("owner"),
  ...replayRoutesOf("provider"),
]
