import { performance } from "node:perf_hooks"
import { AckPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream"
import postgres from "postgres"
import { makeEnvelope } from "../../backend/events/Envelope.ts"
import { HEADER_CLIENT, HEADER_RECEIVED_AT, INGEST_PARTITIONS } from "../../backend/ingest/Ingest.ts"
import { OUTBOX_PARTITIONS, partitionedSubject, partitionOf } from "../../backend/platform/Partition.ts"
import { ELIGIBILITY_PARTITIONS } from "../../backend/prospects/Events.ts"
import { WRITE_COLUMNS } from "../../backend/prospects/Repo.ts"
import { prospectUpdate } from "../support/Ingest.ts"
import type { Usage } from "./IngestProbes.ts"

/*
 * The bench's bare durable apply of inbound events: what the ingest actor writes per event, by hand, as the floor
 * the ingest rows compare with.
 */

const RAW_TABLE = "bench_ingest_raw"
const RAW_LOG = "bench_ingest_raw_log"
const RAW_OUTBOX = "bench_ingest_raw_outbox"

/** The prospect columns a write sets: the service's own. */
const RAW_COLUMNS = WRITE_COLUMNS
const RAW_COLUMN_LIST = RAW_COLUMNS.join(", ")
/** The owner's one building with the row's PMS id, else none (as the service resolves an unnamed building). */
const RAW_BUILDING = `(select case when count(*) = 1 then min(c.id) end from (
  select id from properties where owner_id = r.owner_id and pms_property_id = r.pms_property_id limit 2) c)`
const RAW_UPSERT_SET = RAW_COLUMNS.filter((c) => c !== "source" && c !== "source_prospect_id")
  .map((c) => (c === "version" ? `version = ${RAW_TABLE}.version + 1` : `${c} = excluded.${c}`))
  .join(", ")

/**
 * A bare apply of the raw stream's first `count` messages, writing what the ingest actor writes for each event: the
 * 41-column prospect row (newer event wins), the 14-column ingest-log row, and the two outbox rows a new complete
 * prospect announces (`prospect.created`, `eligibility.requested`), in tables with the service's columns, defaults
 * and indexes. One durable pull consumer per partition (as the actor has), each message parsed and mapped by hand
 * (the bench's mapping), then one transaction per `batch` messages of a partition: the multi-row upsert returning
 * the ids, the log rows and the outbox rows; acked after commit. `batch` 1 with `max_ack_pending` 1 is the actor's
 * shape at its barest: BEGIN, upsert, log, outbox, COMMIT.
 */
export const rawApply = async (
  jsm: JetStreamManager,
  js: JetStreamClient,
  stream: string,
  subject: (partition: number) => string,
  databaseUrl: string,
  owner: { readonly id: string; readonly slug: string },
  count: number,
  batch: number,
  startProbe: () => Promise<(count: number) => Promise<Usage>>,
) => {
  const sql = postgres(databaseUrl, { max: INGEST_PARTITIONS, onnotice: () => undefined })
  for (const table of [RAW_TABLE, RAW_LOG, RAW_OUTBOX]) await sql`drop table if exists ${sql(table)}`
  await sql`create table ${sql(RAW_TABLE)} (like prospects including all)`
  await sql`create table ${sql(RAW_LOG)} (like ingest_log including all)`
  await sql`create table ${sql(RAW_OUTBOX)} (like outbox including all)`
  const name = `rawapply${batch}`
  let handled = 0
  let done: () => void = () => undefined
  const finished = new Promise<void>((resolve) => (done = resolve))
  const decoder = new TextDecoder()
  const write = (
    rows: ReadonlyArray<Record<string, unknown>>,
    logs: ReadonlyArray<Record<string, unknown>>,
  ) =>
    sql.begin(async (tx) => {
      // The building is resolved as the service does it: the owner's property with that PMS id, if any.
      const written = await tx<
        Array<{ id: string; source: string; source_prospect_id: string; version: number; created: boolean }>
      >`
        insert into ${tx(RAW_TABLE)} (${tx.unsafe(RAW_COLUMN_LIST)})
        select ${tx.unsafe(RAW_COLUMNS.map((c) => (c === "property_id" ? RAW_BUILDING : `r.${c}`)).join(", "))}
        from jsonb_populate_recordset(null::${tx(RAW_TABLE)}, ${tx.json(rows as never)}) r
        on conflict (source, source_prospect_id) do update set ${tx.unsafe(RAW_UPSERT_SET)}, updated_at = now()
        where ${tx(RAW_TABLE)}.last_event_at is null or ${tx(RAW_TABLE)}.last_event_at <= excluded.last_event_at
        returning id, source, source_prospect_id, version, xmax = 0 as created`
      const ids = new Map(written.map((w) => [w.source_prospect_id, w]))
      await tx`
        insert into ${tx(RAW_LOG)} (event_id, received_at, source, event_type, source_prospect_id, occurred_at,
                                    outcome, prospect_id, stream_seq, client_id, fields)
        select event_id, received_at, source, event_type, source_prospect_id, occurred_at, outcome, prospect_id,
               stream_seq, client_id, fields
        from jsonb_to_recordset(${tx.json(
          logs.map((l) => ({
            ...l,
            prospect_id: ids.get(l.source_prospect_id as string)?.id ?? null,
          })) as never,
        )}) as l(event_id text, received_at timestamptz, source text, event_type text, source_prospect_id text,
                 occurred_at timestamptz, outcome text, prospect_id bigint, stream_seq bigint, client_id text,
                 fields jsonb)`
      const messages = written.flatMap((w) => {
        const key = `prospect:${w.id}`
        const requested = {
          subject: partitionedSubject(`eligibility.requested.${owner.slug}`, key, ELIGIBILITY_PARTITIONS),
          key,
          payload: {
            prospect_id: String(w.id),
            version: w.version,
            source: w.source,
            source_prospect_id: w.source_prospect_id,
          },
        }
        if (!w.created) return [requested]
        const created = {
          subject: `events.${owner.slug}.prospect.created`,
          key,
          payload: makeEnvelope("prospect.created", owner.slug, { id: w.source_prospect_id }),
        }
        return [created, requested]
      })
      await tx`
        insert into ${tx(RAW_OUTBOX)} (key, partition, subject, headers, payload, accepted_at)
        select k, p, s, '{}'::jsonb, convert_to(b, 'UTF8'), now()
        from unnest(${messages.map((m) => m.key)}::text[],
                    ${messages.map((m) => partitionOf(m.key, OUTBOX_PARTITIONS))}::int2[],
                    ${messages.map((m) => m.subject)}::text[],
                    ${messages.map((m) => JSON.stringify(m.payload))}::text[]) as u(k, p, s, b)`
    })
  const apply = async (msgs: ReadonlyArray<JsMsg>) => {
    const byKey = new Map<string, Record<string, unknown>>()
    const logs: Array<Record<string, unknown>> = []
    for (const msg of msgs) {
      const event = JSON.parse(decoder.decode(msg.data)) as {
        source: string
        event_type: string
        payload: ReturnType<typeof prospectUpdate>
      }
      const p = event.payload
      const fields = {
        source_prospect_id: p.id,
        pms_property_id: p.property.code,
        occurred_at: p.updated_at,
        first_name: p.applicant.first_name,
        last_name: p.applicant.last_name,
        email: p.applicant.email,
        phone: p.applicant.phone,
        earliest_move_in_date: p.move_in,
      }
      // Complete (the source's required fields are all there): `processing`, undecided, version 1 when new. The
      // other columns are left out, as the service leaves out its null ones: over a null base record a missing key
      // reads as null.
      byKey.set(p.id, {
        owner_id: owner.id,
        source: event.source,
        source_prospect_id: p.id,
        status: "processing",
        email: fields.email,
        phone: fields.phone,
        first_name: fields.first_name,
        last_name: fields.last_name,
        lease_start_date: fields.earliest_move_in_date,
        guarantor_coverage: false,
        pms_property_id: fields.pms_property_id,
        version: 1,
        last_event_at: fields.occurred_at,
      })
      logs.push({
        event_id: msg.headers?.get("Nats-Msg-Id") ?? "",
        received_at: msg.headers?.get(HEADER_RECEIVED_AT) ?? new Date().toISOString(),
        source: event.source,
        event_type: event.event_type,
        source_prospect_id: p.id,
        occurred_at: fields.occurred_at,
        outcome: "applied",
        stream_seq: msg.seq,
        client_id: msg.headers?.get(HEADER_CLIENT) ?? null,
        fields,
      })
    }
    // In key order, so that two partitions' transactions holding the same prospects lock them in one order; a
    // deadlock all the same (the upsert's index locks) is retried, as bare code must.
    const rows = [...byKey.values()].sort((a, b) =>
      (a.source_prospect_id as string) < (b.source_prospect_id as string) ? -1 : 1,
    )
    for (let tries = 1; ; tries++) {
      try {
        await write(rows, logs)
        break
      } catch (error) {
        if ((error as postgres.PostgresError).code !== "40P01" || tries >= 5) throw error
      }
    }
    for (const msg of msgs) msg.ack()
    handled += msgs.length
    if (handled >= count) done()
  }
  const partitions = await Promise.all(
    Array.from({ length: INGEST_PARTITIONS }, async (_, partition) => {
      await jsm.consumers.add(stream, {
        durable_name: `${name}_p${partition}`,
        ack_policy: AckPolicy.Explicit,
        filter_subject: subject(partition),
        max_ack_pending: batch,
      })
      return (await js.consumers.get(stream, `${name}_p${partition}`)).consume({
        max_messages: Math.max(64, batch),
      })
    }),
  )
  // Connections up front, so the probe sees their backends.
  await Promise.all(Array.from({ length: INGEST_PARTITIONS }, () => sql`select 1`))
  const stopProbe = await startProbe()
  const start = performance.now()
  const loops = partitions.map(async (messages) => {
    // What arrived while the previous transaction ran is the next batch.
    const buffer: Array<JsMsg> = []
    let wake: (() => void) | undefined
    const reader = (async () => {
      for await (const msg of messages) {
        buffer.push(msg)
        wake?.()
      }
      wake?.()
    })()
    let open = true
    void reader.finally(() => (open = false))
    while (handled < count && (open || buffer.length > 0)) {
      if (buffer.length === 0) {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
        continue
      }
      await apply(buffer.splice(0, batch))
    }
    await reader
  })
  await finished
  const seconds = (performance.now() - start) / 1000
  const figures = await stopProbe(handled)
  for (const messages of partitions) messages.stop()
  await Promise.all(loops)
  const [transactions] = await sql<
    Array<{ n: number }>
  >`select count(distinct created_at)::int as n from ${sql(RAW_LOG)}`
  const [outboxRows] = await sql<Array<{ n: number }>>`select count(*)::int as n from ${sql(RAW_OUTBOX)}`
  for (const table of [RAW_TABLE, RAW_LOG, RAW_OUTBOX]) await sql`drop table ${sql(table)}`
  await sql.end({ timeout: 5 })
  return { seconds, handled, transactions: transactions!.n, outboxRows: outboxRows!.n, figures }
}
