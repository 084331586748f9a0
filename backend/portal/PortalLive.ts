import { Context, Effect, Layer } from "effect"
import { type LiveChange, LiveChanges, liveFrame, makeLiveStreams } from "../webhooks/Live.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import type { PortalLiveEventNames, Recovery } from "./Api.ts"
import type { HolderId, PortalSession } from "./Domain.ts"
import { PortalSessions } from "./PortalSessions.ts"

type PortalLiveEventName = (typeof PortalLiveEventNames)[number]

/** What a connection keeps: whose endpoints it shows, the set read when it opened and again on endpoint changes. */
interface Holder {
  readonly holderId: HolderId
  endpoints: ReadonlySet<number>
}

const holderKey = (holderId: HolderId) =>
  "ownerId" in holderId ? `owner:${holderId.ownerId}` : `provider:${holderId.providerId}`

const iso = (text: string | null | undefined) => (text == null ? null : new Date(text).toISOString())

/**
 * The portal's live view (`GET /portal/api/live`): the webhooks context's changes (`webhooks/Live.ts`, one
 * subscription per portal process), each connection sent only those of its holder's endpoints, filtered here on
 * the server: `delivery` of those endpoints, `endpoint` for them, `recovery` for recoveries of them. The endpoint
 * set is read when a stream opens and again when an endpoint it does not know of changes (a new one may be the
 * holder's).
 */
export class PortalLive extends Context.Service<PortalLive>()("partner-service/portal/PortalLive", {
  make: Effect.gen(function* () {
    const sessions = yield* PortalSessions
    const endpointReads = yield* EndpointReads
    const streams = yield* makeLiveStreams<Holder, unknown, never>({
      stillLive: (id) => sessions.stillLive(id),
    })
    const context = yield* Effect.context<never>()

    const endpointSet = (holderId: HolderId) =>
      Effect.map(endpointReads.subscriberEndpoints(holderId), (rows) => new Set(rows.map((row) => row.id)))

    const send = (
      holder: Holder | undefined,
      name: PortalLiveEventName,
      data: unknown,
      endpointId: number,
    ) => {
      let bytes: Uint8Array | undefined
      for (const connection of streams.connections) {
        if (holder !== undefined && connection.meta !== holder) continue
        if (!connection.meta.endpoints.has(endpointId)) continue
        bytes ??= liveFrame(name, data)
        connection.send(bytes)
      }
    }

    /** Reads again the endpoint sets of the holders that do not know `endpointId`, then tells those it is theirs. */
    const endpointChanged = (endpointId: number, data: unknown) => {
      const unknownTo = new Map<string, Array<Holder>>()
      for (const connection of streams.connections) {
        const holder = connection.meta
        if (holder.endpoints.has(endpointId)) continue
        const key = holderKey(holder.holderId)
        unknownTo.set(key, [...(unknownTo.get(key) ?? []), holder])
      }
      send(undefined, "endpoint", data, endpointId)
      for (const holders of unknownTo.values()) {
        Effect.runForkWith(context)(
          endpointSet(holders[0]!.holderId).pipe(
            Effect.map((set) => {
              for (const holder of holders) {
                holder.endpoints = set
                send(holder, "endpoint", data, endpointId)
              }
            }),
            Effect.catchCause((cause) =>
              Effect.logWarning("portal live view: endpoint set not read").pipe(
                Effect.annotateLogs({ cause: String(cause) }),
              ),
            ),
          ),
        )
      }
    }

    const onChange = (change: LiveChange) => {
      if (streams.connections.size === 0) return
      switch (change.kind) {
        case "delivery":
          return send(undefined, "delivery", change.data, change.data.endpoint_id)
        case "endpoint":
          return endpointChanged(Number(change.data.id), change.data)
        case "bulk_retry": {
          const { endpoint_id, since, created_at, finished_at, id, status, total, done } = change.data
          if (endpoint_id == null || since == null || created_at == null) return
          const recovery: Recovery = {
            id: Number(id),
            endpoint_id,
            since: iso(since)!,
            status,
            total,
            done,
            created_at: iso(created_at)!,
            finished_at: iso(finished_at),
          }
          return send(undefined, "recovery", recovery, endpoint_id)
        }
      }
    }
    yield* (yield* LiveChanges).subscribe(onChange)

    /** A stream of the session's live view, its holder's endpoint set read first. */
    const open = Effect.fn("PortalLive.open")(function* (session: PortalSession) {
      const endpoints = yield* endpointSet(session.holderId)
      return streams.open(session.id, { holderId: session.holderId, endpoints })
    })

    return { open }
  }),
}) {
  static readonly layer = Layer.effect(PortalLive, PortalLive.make).pipe(Layer.provide(EndpointReads.layer))
}
