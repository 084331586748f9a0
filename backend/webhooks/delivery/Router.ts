import { Clock, Context, Effect, Layer, Schema } from "effect"
import { actorCheckpoints } from "../../platform/ConsumerCheckpoints.ts"
import {
  ack,
  type ActorDefinition,
  type Delivery,
  type Outcome,
  term,
} from "../../platform/ActorDefinition.ts"
import { type FollowedMessage, Nats, type NatsShape } from "../../platform/Nats.ts"
import { ACCEPTED_AT_HEADER, WRITTEN_AT_HEADER } from "../../platform/Outbox.ts"
import { currentTraceparent, TRACEPARENT, Traced } from "../../platform/Tracing.ts"
import { batched } from "./Batch.ts"
import { RouterRepo, type EventToRoute } from "./RouterRepo.ts"
import { isEventName } from "../../events/Catalog.ts"
import { EVENT_PROPERTY_HEADER } from "../../events/Envelope.ts"
import { attemptSubject, encodeAttempt, type StatusMessage, statusSubject } from "./Messages.ts"

/**
 * The event router: for each event on `EVENTS`, one delivery per active or suspended endpoint subscribed to it
 * (the owner's, and every provider's covering the owner or the event's property), and one attempt message per
 * delivery still pending; a suspended endpoint's is recorded held, with no attempt message, until it is active.
 * The event id (its `Nats-Msg-Id`) and the endpoint make a delivery unique, so an event the router sees
 * twice is recorded once. Its attempts are published before the event is acked: only a redelivered event (whose
 * earlier routing may have stopped in between) has its deliveries still pending announced again. Attempt messages
 * carry no `Nats-Msg-Id`: a repeat is dropped by the claim (it accepts an attempt once), and the server's duplicate
 * tracking would cost every message for the sake of that rare one.
 */

/**
 * Events on `EVENTS` need no order among themselves: every process takes up to this many at once (pulled many
 * per request), and those in hand are routed together, one statement (with its publishes) at a time.
 */
const CONCURRENCY = 512
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** An outbox time header's instant; null when the event came without it (published before the outbox sent it). */
const timeOf = (header: string | undefined) => {
  const at = header === undefined ? Number.NaN : Date.parse(header)
  return Number.isNaN(at) ? null : new Date(at)
}

interface EventBody {
  readonly event: string
  readonly property_owner_slug: string
  readonly data: unknown
}

const isEventBody = (value: unknown): value is EventBody =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as EventBody).event === "string" &&
  typeof (value as EventBody).property_owner_slug === "string" &&
  typeof (value as EventBody).data === "object"

interface EventInHand {
  readonly message: unknown
  readonly delivery: Delivery
  readonly traceparent?: string | undefined
}

export class EventRouter extends Context.Service<
  EventRouter,
  {
    readonly route: (body: unknown, delivery: Delivery) => Effect.Effect<Outcome>
    /**
     * Many events in one statement, their attempts published together; one outcome per event, in order. An
     * event's `traceparent` (set while traces are exported) goes on its attempt messages.
     */
    readonly routeAll: (events: ReadonlyArray<EventInHand>) => Effect.Effect<ReadonlyArray<Outcome>>
    /** `routeAll` for events read back from the stream: how many deliveries it made (those that were missing). */
    readonly reroute: (events: ReadonlyArray<EventInHand>) => Effect.Effect<number>
  }
>()("partner-service/webhooks/EventRouter") {
  static readonly layer = Layer.effect(
    EventRouter,
    Effect.gen(function* () {
      const repo = yield* RouterRepo
      const nats = yield* Nats

      /** The event to route, or why the message is not one. */
      const check = ({ message: body, delivery, traceparent }: EventInHand): EventToRoute | Outcome => {
        const eventId = delivery.headers["Nats-Msg-Id"]
        if (!eventId) return term("event without a Nats-Msg-Id")
        if (!isEventBody(body)) return term("not an event envelope")
        // `events.<owner_slug>.<event name>`, the event name holding dots of its own.
        const [, slug, ...name] = delivery.subject.split(".")
        if (slug !== body.property_owner_slug || name.join(".") !== body.event) {
          return term(`subject ${delivery.subject} does not match the body's event and owner`)
        }
        if (!isEventName(body.event)) return term(`unknown event ${body.event}`)
        const property = delivery.headers[EVENT_PROPERTY_HEADER]
        return {
          acceptedAt: timeOf(delivery.headers[ACCEPTED_AT_HEADER]),
          committedAt: timeOf(delivery.headers[WRITTEN_AT_HEADER]),
          publishedAt: delivery.publishedAt,
          eventId,
          event: body.event,
          ownerSlug: slug,
          propertyId: property !== undefined && /^\d{1,18}$/.test(property) ? property : null,
          // The body as published, byte for byte.
          payload: delivery.raw,
          redelivered: delivery.deliveryCount > 1,
          traceparent: traceparent ?? null,
        }
      }

      /** The events' outcomes, and how many deliveries their routing made. */
      const routeEvents = Effect.fnUntraced(function* (events: ReadonlyArray<EventInHand>) {
        const outcomes = events.map(check)
        let made = 0
        // An event twice in hand (redelivered) is routed once: the first copy's bytes.
        const toRoute = new Map<string, EventToRoute>()
        for (const o of outcomes) {
          if (!("eventId" in o)) continue
          const first = toRoute.get(o.eventId)
          if (first === undefined) toRoute.set(o.eventId, o)
          else if (o.redelivered && !first.redelivered)
            toRoute.set(o.eventId, { ...first, redelivered: true })
        }
        if (toRoute.size > 0) {
          const now = new Date(yield* Clock.currentTimeMillis)
          const routed = yield* repo.route([...toRoute.values()], now)
          made = routed.filter((d) => d.created).length
          yield* nats.publishAll(
            routed
              .filter((d) => !d.held)
              .map((d) => {
                const traceparent = toRoute.get(d.event_id)!.traceparent ?? null
                return {
                  subject: nats.subject(attemptSubject(d.endpoint_id)),
                  data: encodeAttempt(d),
                  ...(traceparent === null ? {} : { options: { headers: { [TRACEPARENT]: traceparent } } }),
                }
              }),
          )
          for (const d of routed) {
            if (!d.created) continue
            yield* publishStatus(nats, {
              delivery_id: d.id,
              endpoint_id: d.endpoint_id,
              event: toRoute.get(d.event_id)!.event,
              status: "pending",
              series: d.series,
              attempt_number: d.attempt_number,
              at: now.toISOString(),
            })
          }
        }
        return { outcomes: outcomes.map((o) => ("eventId" in o ? ack : o)), made }
      })
      const routeAll = Effect.fn("EventRouter.routeAll")(function* (events: ReadonlyArray<EventInHand>) {
        return (yield* routeEvents(events)).outcomes
      })
      const reroute = Effect.fn("EventRouter.reroute")(function* (events: ReadonlyArray<EventInHand>) {
        return (yield* routeEvents(events)).made
      })

      /** Events handled concurrently (the actor's slots) are routed together, a batch per statement. */
      const routeOne = yield* batched({ max: CONCURRENCY, run: routeAll })
      // The event's own span (the actor's, while traces are exported) is the parent of its attempts.
      const route = (yield* Traced)
        ? (body: unknown, delivery: Delivery) =>
            Effect.flatMap(currentTraceparent, (traceparent) =>
              routeOne({ message: body, delivery, traceparent }),
            )
        : (body: unknown, delivery: Delivery) => routeOne({ message: body, delivery })

      return EventRouter.of({ route, routeAll, reroute })
    }),
  )
}

/**
 * Best effort (core NATS, no acknowledgement, sent at the end of this turn of the event loop): the live view may
 * miss one; the database is the record.
 */
export const publishStatus = (nats: NatsShape, status: StatusMessage) =>
  Effect.sync(() =>
    nats.publishUnacknowledged(
      nats.subject(statusSubject(status.endpoint_id)),
      encoder.encode(JSON.stringify(status)),
    ),
  )

export const routerActor: ActorDefinition<unknown, EventRouter> = {
  name: "webhook_router",
  stream: "EVENTS",
  subject: "events.>",
  partitions: 0,
  concurrency: CONCURRENCY,
  schema: Schema.Unknown,
  handle: (body, delivery) => EventRouter.use((router) => router.route(body, delivery)),
}

/**
 * The router's checkpoints (`platform/ConsumerCheckpoints.ts`): after a failover to a standby that lost the last
 * commits, the events past the checkpoint that survived are read back from `EVENTS` and routed again. Routing is
 * idempotent (one delivery per event and endpoint), so only the deliveries that were lost are made, and announced;
 * those that survived are left as they are (a pending one whose attempt message was lost is the scheduler's).
 */
export const routerCheckpointsLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const router = yield* EventRouter
    const nats = yield* Nats
    const inHand = (msg: FollowedMessage): EventInHand | undefined => {
      let message: unknown
      try {
        message = JSON.parse(decoder.decode(msg.data))
      } catch {
        // Not JSON: the actor terminated it; nothing was routed.
        return undefined
      }
      const headers: Record<string, string> = {}
      for (const key of msg.headers?.keys() ?? []) headers[key] = msg.headers?.get(key) ?? ""
      return {
        message,
        delivery: {
          subject: nats.unprefixed(msg.subject),
          streamSequence: msg.seq,
          deliveryCount: 1,
          pending: 0,
          publishedAt: new Date(msg.info.timestampNanos / 1e6),
          headers,
          raw: msg.data,
        },
      }
    }
    yield* actorCheckpoints(routerActor, (messages) =>
      router.reroute(messages.map(inHand).filter((e) => e !== undefined)),
    )
  }),
)
