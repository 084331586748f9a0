import { createHash } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { IngestConfig } from "./Config.ts"
import type { Terminated } from "../platform/ActorDefinition.ts"
import { Db } from "../platform/Db.ts"
import { normalizedId, textProblem } from "../contract/FieldLimits.ts"
import {
  Forbidden,
  PayloadTooLarge,
  decodeUtf8,
  parseExactJson,
  parseJsonText,
  ServiceUnavailable,
  Unprocessable,
  type Caller,
} from "../platform/Http.ts"
import { Nats } from "../platform/Nats.ts"
import { partitionedSubject } from "../platform/Partition.ts"
import { readCache } from "../platform/ReadCache.ts"
import { decodeFields, joinedMessages } from "../platform/Validation.ts"
import { ProspectInvalid } from "../prospects/Domain.ts"
import { checkFields } from "../prospects/Merge.ts"
import { type EventWrite, ProspectBatches } from "../prospects/ProspectBatches.ts"
import { Sources } from "../prospects/Sources.ts"
import { Roster } from "../roster/Roster.ts"
import {
  type EventMapping,
  IngestEvent,
  type IngestOutcome,
  MappingRejected,
  MAX_EVENT_BYTES,
  type SourceMapping,
} from "./Domain.ts"
import { eventTime, extractFields, mappedTextProblems, parseMapping } from "./Mapping.ts"
import { type IngestLogEntry, IngestRepo, type IngestLogFilter } from "./Repo.ts"

/** Partitions of `ingest.<source>.<event_type>`: one prospect's events land in one, in order. */
export const INGEST_PARTITIONS = 16
/** How long the gateway waits for JetStream's acknowledgement before answering 503. */
const PUBLISH_TIMEOUT = "5 seconds"
/** How long a process trusts its copy of a source's mappings without a change notification. */
const MAPPING_CACHE_MILLIS = 5_000

export const HEADER_RECEIVED_AT = "Ingest-Received-At"
export const HEADER_CLIENT = "Ingest-Client"

const decodeEvent = decodeFields(IngestEvent)
const decoder = new TextDecoder()

/** JSON with object keys sorted, so one event has one id however its sender spaced or ordered it. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : typeof value === "object" && value !== null
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
          .join(",")}}`
      : JSON.stringify(value)

/** The event's id: the same source, type and payload always give the same id. */
export const eventId = (event: IngestEvent) =>
  createHash("sha256")
    .update(canonical([event.source, event.event_type, event.payload]))
    .digest("hex")

/** Whether a NUL character is anywhere in a JSON value, keys included. */
const holdsNul = (value: unknown): boolean =>
  typeof value === "string"
    ? value.includes("\u0000")
    : Array.isArray(value)
      ? value.some(holdsNul)
      : typeof value === "object" && value !== null
        ? Object.entries(value).some(([key, item]) => key.includes("\u0000") || holdsNul(item))
        : false

/** A subject token or header as the log can keep it: one that is too long or holds a control character is not. */
const loggable = (text: string) => (textProblem("external_system_id", text) === undefined ? text : "")

/**
 * A mapped identifier as text, in the form ids are stored (NFC): partners send ids as strings or numbers. A number a
 * double would change arrives as the text sent (`exactNumbers`); any other is written out as the value it is, so two
 * numbers are one id only when they are one value (`1e3` and `1000`).
 */
const identifier = (value: unknown) =>
  typeof value === "string" && value.trim() !== ""
    ? normalizedId(value)
    : typeof value === "number" && Number.isFinite(value)
      ? String(value)
      : undefined

/** The prospect key an event's mapping yields, if it yields one. */
const prospectKey = (source: string, mapping: EventMapping | undefined, payload: unknown) => {
  const id = mapping && identifier(extractFields({ id: mapping.source_prospect_id! }, payload).id)
  return id === undefined ? undefined : `${source}/${id}`
}

export interface ConsumedEvent {
  readonly event: IngestEvent
  readonly eventId: string
  readonly receivedAt: string
  readonly clientId: string
  readonly streamSequence: number
}

interface Found {
  readonly fields?: Readonly<Record<string, unknown>>
  readonly sourceProspectId?: string
  readonly occurredAt?: Date
  readonly prospectId?: string
}

/** An event's log record. */
const entryOf = (
  consumed: ConsumedEvent,
  outcome: IngestOutcome,
  reason: string | null,
  found: Found,
): IngestLogEntry & { readonly outcome: IngestOutcome } => ({
  event_id: consumed.eventId,
  received_at: consumed.receivedAt,
  source: consumed.event.source,
  event_type: consumed.event.event_type,
  source_prospect_id: found.sourceProspectId ?? null,
  occurred_at: found.occurredAt?.toISOString() ?? null,
  outcome,
  reason,
  prospect_id: found.prospectId ?? null,
  stream_seq: consumed.streamSequence,
  client_id: consumed.clientId === "" ? null : consumed.clientId,
  fields: found.fields ?? null,
})

const ignored = (consumed: ConsumedEvent, reason: string, found: Found) => ({
  entry: entryOf(consumed, "ignored", reason, found),
})

/**
 * What can be told of an event without the database: ignored (NUL, unmapped type, a required field missing), or
 * the prospect key, building and time it is about, with the prospect fields it carries.
 */
const plan = (consumed: ConsumedEvent, mappings: SourceMapping) => {
  const { event } = consumed
  // Postgres cannot store U+0000: the event is refused like any other value, not retried into dead letters.
  if (holdsNul(event.payload)) {
    return ignored(consumed, "payload holds a NUL character (\\u0000), which no field accepts", {})
  }
  const mapping = mappings[event.event_type]
  if (mapping === undefined) {
    return ignored(consumed, `no mapping for event type ${event.event_type} on source ${event.source}`, {})
  }
  const fields = extractFields(mapping, event.payload)
  const sourceProspectId = identifier(fields.source_prospect_id)
  const pmsPropertyId = identifier(fields.pms_property_id)
  const occurredAt = eventTime(fields.occurred_at)
  const problems = mappedTextProblems(mapping, fields)
  const found = {
    fields,
    // The log keeps the prospect id only when it is one the prospect endpoint would take.
    ...(sourceProspectId === undefined || problems.source_prospect_id !== undefined
      ? {}
      : { sourceProspectId }),
    ...(occurredAt === undefined ? {} : { occurredAt }),
  }
  if (Object.keys(problems).length > 0) {
    return ignored(
      consumed,
      Object.entries(problems)
        .map(([field, messages]) => `${field} ${messages.join("; ")}`)
        .join("; "),
      found,
    )
  }
  const missing = [
    ...(sourceProspectId === undefined ? [`source_prospect_id at ${mapping.source_prospect_id}`] : []),
    ...(pmsPropertyId === undefined ? [`pms_property_id at ${mapping.pms_property_id}`] : []),
    ...(occurredAt === undefined ? [`a timestamp occurred_at at ${mapping.occurred_at}`] : []),
  ]
  if (missing.length > 0) return ignored(consumed, `payload has no ${missing.join(", ")}`, found)
  const { occurred_at: _, earliest_move_in_date: moveIn, ...prospectFields } = fields
  return {
    consumed,
    found,
    pmsPropertyId: pmsPropertyId!,
    occurredAt: occurredAt!,
    raw: {
      ...(moveIn === undefined ? {} : { lease_start_date: moveIn }),
      ...prospectFields,
      source: event.source,
      source_prospect_id: sourceProspectId,
      pms_property_id: pmsPropertyId,
    },
  }
}

/** The batch cut before each event whose id already appeared in the current run. */
const runsOfDistinctIds = (batch: ReadonlyArray<ConsumedEvent>) => {
  const runs: Array<Array<ConsumedEvent>> = []
  let ids = new Set<string>()
  for (const consumed of batch) {
    if (runs.length === 0 || ids.has(consumed.eventId)) {
      runs.push([])
      ids = new Set()
    }
    ids.add(consumed.eventId)
    runs.at(-1)!.push(consumed)
  }
  return runs
}

export class Ingest extends Context.Service<Ingest>()("partner-service/ingest/Ingest", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const nats = yield* Nats
    const repo = yield* IngestRepo
    const sources = yield* Sources
    const batches = yield* ProspectBatches
    const roster = yield* Roster
    const config = yield* IngestConfig
    // While Postgres does not answer, no mapping can change: the gateway keeps accepting with the last one.
    const mappings = readCache<string, SourceMapping, never>({
      freshMillis: MAPPING_CACHE_MILLIS,
      maxSize: 10_000,
    })
    // A change in any process (`sources mapping set`) notifies `mappings_changed` (migration 0007).
    yield* db.listen(
      "mappings_changed",
      (source) => mappings.forget(source),
      () => mappings.forget(),
    )
    const cachedMapping = (source: string) => mappings.get(source, () => repo.mappings(source))

    /**
     * `POST {ingest_url}/events`: checks the envelope, size and source, then publishes the raw event on
     * `ingest.<source>.<event_type>.<partition>` (partition of its prospect, so one prospect's events stay in
     * order) with its id as `Nats-Msg-Id`, and returns only once JetStream has stored it. Untraced, like
     * `Auth.authenticate`: it runs once per event at the gateway's full rate.
     */
    const accept = Effect.fnUntraced(function* (caller: Caller, bytes: Uint8Array) {
      if (bytes.byteLength > MAX_EVENT_BYTES)
        return yield* new PayloadTooLarge({ limitBytes: MAX_EVENT_BYTES })
      // The event id hashes the payload recursively: a body nested without bound is refused first.
      const body = yield* Effect.flatMap(decodeUtf8(bytes), (text) =>
        parseJsonText(text, { exactNumbers: true }),
      )
      const decoded = decodeEvent(body)
      if ("errors" in decoded) {
        return yield* new Unprocessable({
          message: "Event invalid.",
          resource: "event",
          fields: joinedMessages(decoded.errors),
        })
      }
      const event = decoded.value
      if (caller.source == null || caller.source !== event.source) return yield* new Forbidden()
      const id = eventId(event)
      const mapping = (yield* cachedMapping(event.source))[event.event_type]
      // Where the mapping is known here, a field the prospect endpoint would refuse for its length or a control
      // character is refused now, where the partner can see it; otherwise the ingest actor logs it `ignored`.
      if (mapping !== undefined) {
        const problems = mappedTextProblems(mapping, extractFields(mapping, event.payload))
        if (Object.keys(problems).length > 0) {
          return yield* new Unprocessable({
            message: "Event invalid.",
            resource: "event",
            fields: joinedMessages(problems),
          })
        }
      }
      const subject = partitionedSubject(
        `ingest.${event.source}.${event.event_type}`,
        prospectKey(event.source, mapping, event.payload) ?? id,
        INGEST_PARTITIONS,
      )
      const receivedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
      yield* nats
        .tryPublish(nats.subject(subject), bytes, {
          msgID: id,
          headers: { [HEADER_RECEIVED_AT]: receivedAt, [HEADER_CLIENT]: caller.clientId },
          timeout: PUBLISH_TIMEOUT,
        })
        .pipe(
          Effect.tapError((error) =>
            Effect.logWarning("ingest publish failed").pipe(Effect.annotateLogs({ reason: error.message })),
          ),
          Effect.mapError(
            () =>
              new ServiceUnavailable({
                message: "The event was not confirmed as stored. Retry it: the same event is applied once.",
                retryAfterSeconds: 1,
              }),
          ),
        )
      return { status_code: 202 as const, event_id: id }
    })

    /** One run of events with no event id twice: `consumeBatch` minus the splitting. */
    const consumeRun = (run: ReadonlyArray<ConsumedEvent>) =>
      Effect.gen(function* () {
        const mappings = new Map<string, SourceMapping>()
        for (const { event } of run) {
          if (!mappings.has(event.source)) mappings.set(event.source, yield* cachedMapping(event.source))
        }
        const planned = run.map((consumed) => plan(consumed, mappings.get(consumed.event.source)!))
        const candidates = planned.flatMap((p) => ("entry" in p ? [] : [p]))
        const pairs = new Map(
          candidates.map((c) => {
            const asked = { clientId: c.consumed.clientId, pmsPropertyId: c.pmsPropertyId }
            return [JSON.stringify([asked.clientId, asked.pmsPropertyId]), asked] as const
          }),
        )
        const codes = [...new Set(candidates.map((c) => c.consumed.event.source))]
        // Independent reads, pipelined on the transaction's connection.
        const [applied, owners, found] = yield* Effect.all(
          [
            repo.appliedAmong(candidates.map((c) => c.consumed.eventId)),
            roster.ownersWithProperties([...pairs.values()]),
            Effect.forEach(codes, (code) => sources.find(code), { concurrency: "unbounded" }),
          ],
          { concurrency: "unbounded" },
        )
        const sourceOf = new Map(codes.map((code, i) => [code, found[i]]))

        // Each candidate either ends here (duplicate, ignored) or becomes a write, in stream order.
        const writes: Array<EventWrite> = []
        const decided = planned.map((p) => {
          if ("entry" in p) return p.entry
          const { consumed, found } = p
          if (applied.has(consumed.eventId)) {
            return entryOf(consumed, "duplicate", "this event was already applied", found)
          }
          const owned = owners.get(JSON.stringify([consumed.clientId, p.pmsPropertyId])) ?? []
          if (owned.length !== 1) {
            return entryOf(
              consumed,
              "ignored",
              owned.length === 0
                ? `unknown pms_property_id ${p.pmsPropertyId}`
                : `pms_property_id ${p.pmsPropertyId} is a building of several owners (${owned.map((o) => o.slug).join(", ")})`,
              found,
            )
          }
          const input = checkFields(p.raw)
          if (input instanceof ProspectInvalid) {
            return entryOf(consumed, "ignored", Object.values(input.fields).join("; "), found)
          }
          const source = sourceOf.get(consumed.event.source)
          if (source === undefined) {
            return entryOf(consumed, "ignored", `unknown source ${consumed.event.source}`, found)
          }
          writes.push({
            owner: owned[0]!,
            source,
            input,
            clientId: consumed.clientId,
            occurredAt: p.occurredAt,
            acceptedAt: consumed.receivedAt,
          })
          return { write: writes.length - 1, consumed, found }
        })
        const results = yield* batches.apply(writes)
        const entries = decided.map((d) => {
          if (!("write" in d)) return d
          const result = results[d.write]!
          return result.outcome === "refused"
            ? entryOf(d.consumed, "ignored", Object.values(result.error.fields).join("; "), d.found)
            : entryOf(
                d.consumed,
                result.outcome,
                result.outcome === "stale" ? "a newer event was already applied" : null,
                { ...d.found, prospectId: result.id },
              )
        })
        yield* repo.recordAll(entries)
        return entries.map((e) => e.outcome)
      })

    /**
     * The ingest actor's work for a batch of events, in stream order: map each, find their owners, and write their
     * prospects as the REST API does (a later event of a prospect after an earlier one), in one transaction with
     * their log records; one outcome per event. Whatever happens is logged; nothing reaches the partner but the
     * prospects' own events.
     */
    const consumeBatch = Effect.fn("Ingest.consumeBatch")(function* (batch: ReadonlyArray<ConsumedEvent>) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const outcomes: Array<IngestOutcome> = []
          // An event twice in a batch: the second copy must see the first one's log record, so it starts a run.
          for (const run of runsOfDistinctIds(batch)) outcomes.push(...(yield* consumeRun(run)))
          return outcomes
        }),
      )
    })

    /** `consumeBatch` of one event. */
    const consume = Effect.fn("Ingest.consume")(function* (consumed: ConsumedEvent) {
      return (yield* consumeBatch([consumed]))[0]!
    })

    /**
     * An event the ingest actor gave up on (undecodable, or failing every attempt; it is kept in dead letters):
     * logged `failed` with the reason, so the ingest log tells what became of every event. What can be read of
     * the event is kept; what cannot (a body that is not JSON, an unusable prospect id) is left out.
     */
    const recordTerminated = Effect.fn("Ingest.recordTerminated")(function* (terminated: Terminated) {
      const [, source = "", eventType = ""] = terminated.subject.split(".").map(loggable)
      const payload = yield* Effect.try(
        () =>
          (parseExactJson(decoder.decode(terminated.raw)) as { readonly payload?: unknown } | null)?.payload,
      ).pipe(Effect.orElseSucceed(() => undefined))
      const mapping = source === "" ? undefined : (yield* cachedMapping(source))[eventType]
      const key = mapping && identifier(extractFields({ id: mapping.source_prospect_id! }, payload).id)
      const receivedAt = terminated.headers[HEADER_RECEIVED_AT]
      yield* repo.recordAll([
        {
          event_id: loggable(terminated.headers["Nats-Msg-Id"] ?? ""),
          received_at:
            receivedAt !== undefined && !Number.isNaN(Date.parse(receivedAt))
              ? receivedAt
              : new Date(yield* Clock.currentTimeMillis).toISOString(),
          source,
          event_type: eventType,
          source_prospect_id:
            key === undefined || textProblem("source_prospect_id", key) !== undefined ? null : key,
          occurred_at: null,
          outcome: "failed",
          reason: terminated.reason,
          prospect_id: null,
          stream_seq: terminated.streamSequence,
          client_id: loggable(terminated.headers[HEADER_CLIENT] ?? "") || null,
          fields: null,
        },
      ])
    })

    /** Operators: the source's mappings become exactly those of the file (a JSON object by event type). */
    const setMapping = Effect.fn("Ingest.setMapping")(function* (source: string, file: unknown) {
      if ((yield* sources.find(source)) === undefined) {
        return yield* new MappingRejected({ message: `unknown source ${source}` })
      }
      const parsed = parseMapping(file)
      if ("problems" in parsed) return yield* new MappingRejected({ message: parsed.problems.join("; ") })
      yield* repo.replaceMappings(source, parsed.mapping)
      mappings.forget(source)
      return yield* repo.mappings(source)
    })

    return {
      accept,
      consume,
      consumeBatch,
      recordTerminated,
      setMapping,
      mapping: (source: string) => repo.mappings(source),
      log: (filter: IngestLogFilter) => repo.log(filter),
      prune: repo.prune(config.logRetentionDays),
    }
  }),
}) {
  static readonly layer = Layer.effect(Ingest, Ingest.make).pipe(
    Layer.provide(IngestRepo.layer),
    Layer.provide(IngestConfig.layer),
  )
}
