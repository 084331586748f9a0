import { Clock, Context, Effect, Layer } from "effect"
import { isEventName } from "../../events/Catalog.ts"
import { EVENT_PROPERTY_HEADER } from "../../events/Envelope.ts"
import { recordAudit } from "../../audit/Audit.ts"
import { Db } from "../../platform/Db.ts"
import { iso } from "../../platform/Dates.ts"
import { Nats } from "../../platform/Nats.ts"
import { EndpointNotFound, type SubscriberRef } from "../Domain.ts"
import { WebhooksRepo } from "../endpoints/Repo.ts"
import { Secrets } from "../endpoints/Secrets.ts"
import {
  ReplayBeyondRetention,
  type ReplayBody,
  ReplayInvalid,
  ReplayNotFound,
  type WebhookReplay,
} from "./Domain.ts"
import { type Coverage, type ReplayEventInput, type ReplayRow, ReplaysRepo } from "./Repo.ts"

/** Ids are positive integers that JSON carries exactly; anything else names no record (404). */
const ID = /^[1-9]\d{0,14}$/

type Fields = Record<string, string>

export interface ReplayRange {
  readonly since: Date
  readonly until: Date
  readonly events: ReadonlyArray<string>
}

/** The range a replay body asks for, checked against the endpoint's subscriptions and the time now. */
const checkReplay = (
  body: ReplayBody,
  subscribed: ReadonlyArray<string>,
  now: Date,
): { readonly range: ReplayRange } | { readonly fields: Fields } => {
  if (body.fields.base !== undefined) return { fields: { ...body.fields } }
  // Each field's messages in the order a partner has always read them: the schema's, then those of the time now.
  const fields: Fields = {}
  if (body.fields.since !== undefined) fields.since = body.fields.since
  if (body.fields.until !== undefined) fields.until = body.fields.until
  const since = body.since
  const until = body.fields.until === undefined ? (body.until ?? now) : undefined
  if (since !== undefined && since.getTime() > now.getTime()) fields.since = "Since must not be in the future"
  if (
    fields.since === undefined &&
    since !== undefined &&
    until !== undefined &&
    until.getTime() < since.getTime()
  )
    fields.until = "Until must not be before since"
  let events = subscribed
  if (body.fields.events !== undefined) fields.events = body.fields.events
  else if (body.events !== undefined) {
    const other = body.events.filter((e) => !subscribed.includes(e))
    if (other.length > 0) {
      const named = other.slice(0, 10).map((e) => (e.length > 80 ? `${e.slice(0, 80)}…` : e))
      fields.events = `Events must be events the endpoint subscribes to, not ${named.join(", ")}`
    } else events = [...new Set(body.events)]
  }
  if (Object.keys(fields).length > 0 || since === undefined || until === undefined) return { fields }
  return { range: { since, until: until.getTime() > now.getTime() ? now : until, events } }
}

export const toReplay = (row: ReplayRow): WebhookReplay => ({
  id: Number(row.id),
  endpoint_id: Number(row.endpoint_id),
  status: row.status,
  total: row.total,
  sent: row.sent,
  since: iso(row.since),
  until: iso(row.until),
  events: row.events,
  created_at: iso(row.created_at),
  ended_at: row.ended_at === null ? null : iso(row.ended_at),
})

/**
 * Replays of an endpoint's events: what `EVENTS` still holds of its owner (or its provider's coverage) in the
 * range, subscribed, and not delivered to it yet, found when the replay is asked for and kept with it; the
 * runner (`ReplayRunner.ts`) sends them.
 */
export class Replays extends Context.Service<Replays>()("partner-service/webhooks/Replays", {
  make: Effect.gen(function* () {
    const repo = yield* ReplaysRepo
    const webhooks = yield* WebhooksRepo
    const secrets = yield* Secrets
    const nats = yield* Nats
    const db = yield* Db

    const endpointOf = (ref: SubscriberRef, id: string) =>
      Effect.gen(function* () {
        const subscriberId = yield* secrets.subscriber(ref, false)
        const row =
          subscriberId === undefined || !ID.test(id) ? undefined : yield* webhooks.endpoint(subscriberId, id)
        if (row === undefined) return yield* new EndpointNotFound()
        return row
      })

    /** The events of the range `EVENTS` holds for the coverage, oldest first; fails past the stream's retention. */
    const eventsFor = Effect.fn("Replays.eventsFor")(function* (
      endpointId: string,
      coverage: Coverage,
      range: ReplayRange,
    ) {
      const stream = nats.streamName("EVENTS")
      const state = yield* nats.streamState(stream)
      if (state.keptSince !== undefined && range.since.getTime() < state.keptSince.getTime())
        return yield* new ReplayBeyondRetention({ oldest: iso(state.keptSince) })
      const owners = new Set(coverage.ownerSlugs)
      const properties = new Set(coverage.propertyIds)
      const wanted = new Set(range.events)
      const slugs = [...new Set([...coverage.ownerSlugs, ...coverage.propertyOwnerSlugs])]
      if (slugs.length === 0) return []
      // One owner's subjects, or every event when the coverage spans several owners (read and sorted out here).
      const stored = yield* nats.readStored(
        stream,
        nats.subject(slugs.length === 1 ? `events.${slugs[0]}.>` : "events.>"),
        range.since,
        state.lastSeq,
      )
      const found = new Map<string, ReplayEventInput>()
      for (const msg of stored) {
        if (msg.info.timestampNanos / 1e6 > range.until.getTime()) break
        // `events.<owner_slug>.<event name>`, the event name holding dots of its own (as the router reads it).
        const [, slug = "", ...name] = nats.unprefixed(msg.subject).split(".")
        const event = name.join(".")
        const eventId = msg.headers?.get("Nats-Msg-Id") ?? ""
        if (eventId === "" || found.has(eventId) || !isEventName(event) || !wanted.has(event)) continue
        const property = msg.headers?.get(EVENT_PROPERTY_HEADER) ?? ""
        if (!owners.has(slug) && !properties.has(property)) continue
        found.set(eventId, { seq: msg.seq, eventId, event, ownerSlug: slug, payload: msg.data })
      }
      const missing = yield* repo.undelivered(endpointId, [...found.keys()])
      return [...found.values()].filter((e) => missing.has(e.eventId))
    })

    /** The endpoint's coverage; the endpoint must exist and not be deleted. */
    const coverageOf = (endpointId: string) =>
      Effect.flatMap(
        ID.test(endpointId) ? repo.coverage(endpointId) : Effect.succeed(undefined),
        (coverage) =>
          coverage === undefined ? Effect.fail(new EndpointNotFound()) : Effect.succeed(coverage),
      )

    /** What a replay of the range would send now, without starting it (the console's preview). */
    const preview = Effect.fn("Replays.preview")(function* (endpointId: string, body: ReplayBody) {
      const coverage = yield* coverageOf(endpointId)
      const read = checkReplay(body, coverage.events, new Date(yield* Clock.currentTimeMillis))
      if ("fields" in read) return yield* new ReplayInvalid({ fields: read.fields })
      return (yield* eventsFor(endpointId, coverage, read.range)).length
    })

    /** Starts a replay of an endpoint (by id, whoever's it is); audited when an operator asks for it. */
    const startFor = Effect.fn("Replays.startFor")(function* (
      endpointId: string,
      body: ReplayBody,
      actor?: string,
    ) {
      const coverage = yield* coverageOf(endpointId)
      const read = checkReplay(body, coverage.events, new Date(yield* Clock.currentTimeMillis))
      if ("fields" in read) return yield* new ReplayInvalid({ fields: read.fields })
      const events = yield* eventsFor(endpointId, coverage, read.range)
      return yield* db.transaction(
        Effect.gen(function* () {
          const replay = toReplay(yield* repo.insert(endpointId, read.range, events))
          if (actor !== undefined) {
            yield* recordAudit(db, {
              actor,
              action: "webhook_replays.start",
              target: `endpoint:${endpointId}`,
              after: {
                replay_id: replay.id,
                since: replay.since,
                until: replay.until,
                events: replay.events,
              },
              details: { total: replay.total },
            })
          }
          return replay
        }),
      )
    })

    const showFor = Effect.fn("Replays.showFor")(function* (endpointId: string, id: string) {
      const row = ID.test(id) && ID.test(endpointId) ? yield* repo.find(endpointId, id) : undefined
      if (row === undefined) return yield* new ReplayNotFound()
      return toReplay(row)
    })

    const listFor = Effect.fn("Replays.listFor")(function* (endpointId: string) {
      yield* coverageOf(endpointId)
      return (yield* repo.list(endpointId, 10)).map(toReplay)
    })

    /** Cancels a running replay of an endpoint (by id); audited when an operator cancels it. */
    const cancelFor = Effect.fn("Replays.cancelFor")(function* (
      endpointId: string,
      id: string,
      actor?: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const before = ID.test(id) && ID.test(endpointId) ? yield* repo.find(endpointId, id) : undefined
          if (before === undefined) return yield* new ReplayNotFound()
          const replay = toReplay((yield* repo.cancel(endpointId, id))!)
          if (actor !== undefined && before.status === "running") {
            yield* recordAudit(db, {
              actor,
              action: "webhook_replays.cancel",
              target: `endpoint:${endpointId}`,
              before: { replay_id: replay.id, status: before.status, sent: before.sent },
              after: { replay_id: replay.id, status: replay.status, sent: replay.sent },
            })
          }
          return replay
        }),
      )
    })

    const start = Effect.fn("Replays.start")(function* (
      ref: SubscriberRef,
      endpointId: string,
      body: ReplayBody,
    ) {
      const endpoint = yield* endpointOf(ref, endpointId)
      return yield* startFor(endpoint.id, body)
    })

    const show = Effect.fn("Replays.show")(function* (ref: SubscriberRef, endpointId: string, id: string) {
      const endpoint = yield* endpointOf(ref, endpointId)
      return yield* showFor(endpoint.id, id)
    })

    const cancel = Effect.fn("Replays.cancel")(function* (
      ref: SubscriberRef,
      endpointId: string,
      id: string,
    ) {
      const endpoint = yield* endpointOf(ref, endpointId)
      return yield* cancelFor(endpoint.id, id)
    })

    return { start, startFor, preview, show, showFor, listFor, cancel, cancelFor }
  }),
}) {
  static readonly layer = Layer.effect(Replays, Replays.make).pipe(
    Layer.provide(Layer.mergeAll(ReplaysRepo.layer, WebhooksRepo.layer, Secrets.layer)),
  )
}
