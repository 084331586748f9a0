import { randomUUID } from "node:crypto"
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { Queue, Worker, type Job } from "bullmq"
import { Redis } from "ioredis"
import postgres from "postgres"
import { Agent } from "undici"
import { backoffUnits } from "../../backend/webhooks/delivery/Backoff.ts"
import { deliveryHeaders } from "../../backend/webhooks/delivery/Signer.ts"

/**
 * What a user would otherwise run to deliver the same webhooks, outside Effect and our runtime, for the bench to
 * set beside the engine (and for test/webhooks/Peers.test.ts to keep honest):
 *
 * - the BullMQ peer: what a careful Node team builds on BullMQ and Redis. Per delivery: the delivery row inserted
 *   with its job (the row first, its id the job's id, so a crash between the two leaves a row to re-enqueue, never
 *   a job without a row); the job's worker signs (the engine's `deliveryHeaders`), POSTs with the engine's 10 s
 *   timeout, and writes the attempt row and the delivery's outcome in one transaction before the job completes or
 *   fails; BullMQ's lock is the claim, its retries with a custom backoff (the engine's `backoffUnits`) the retry
 *   schedule;
 * - the floor: the least the engine's guarantees need, by hand. Per delivery: the delivery row; an attempt message
 *   on JetStream (msgID, so a publish retried is not a second attempt), consumed by a durable pull consumer and
 *   acknowledged after the outcome is recorded; the claim (lease) before the POST, the outcome and the attempt row
 *   after it, each a single statement over every delivery in hand (group commit: whatever arrived while the
 *   previous statement ran goes in the next); the signed POST.
 *
 * Both write tables of their own, with the columns (and indexes) of `webhook_deliveries` and `webhook_attempts`,
 * in the database they are given, which must hold the migrated schema.
 */

/** The engine's default request timeout (`WEBHOOK_TIMEOUT_MS`). */
export const TIMEOUT_MS = 10_000
/** The engine's default attempts before a delivery fails (`WEBHOOK_MAX_ATTEMPTS`). */
export const MAX_ATTEMPTS = 25
/** How long the floor's claim holds a delivery. */
const LEASE_MS = 30_000

export interface PeerEvent {
  readonly event: string
  readonly eventId: string
  readonly ownerSlug: string
  readonly endpointId: number
  /** The JSON body, as sent. */
  readonly payload: string
}

export interface PeerOptions {
  readonly databaseUrl: string
  /** `https://host:port/path` each delivery is POSTed to; endpoint `e` POSTs to `${url}/e<e>`. */
  readonly url: string
  readonly secret: string
  /** PEM CA certificates the POSTs trust. */
  readonly ca: ReadonlyArray<string>
  /** Table names: `<tables>_deliveries` and `<tables>_attempts`. */
  readonly tables: string
  /** Milliseconds a backoff unit lasts (one second in production). */
  readonly backoffUnitMs?: number
}

/** Tables with the engine's columns, defaults, identity and indexes (foreign keys aside). */
const createTables = async (sql: postgres.Sql, tables: string) => {
  await sql`drop table if exists ${sql(`${tables}_attempts`)}, ${sql(`${tables}_deliveries`)}`
  await sql`create table ${sql(`${tables}_deliveries`)} (like webhook_deliveries including all)`
  await sql`create table ${sql(`${tables}_attempts`)} (like webhook_attempts including all)`
}

const agentFor = (ca: ReadonlyArray<string>, connections: number) =>
  new Agent({
    connections,
    keepAliveTimeout: 30_000,
    connect: { ca: [...ca], timeout: TIMEOUT_MS },
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
  })

interface Outcome {
  readonly statusCode: number | null
  readonly startedAt: Date
  readonly durationMs: number
  readonly failureReason: string | null
}

/** The signed POST: the engine's headers (no custom ones), its timeout; never throws. */
const post = async (
  agent: Agent,
  url: URL,
  secret: string,
  delivery: { readonly id: number | string; readonly event: string; readonly payload: Uint8Array },
): Promise<Outcome> => {
  const startedAt = new Date()
  const start = performance.now()
  const headers = deliveryHeaders({
    custom: undefined,
    event: delivery.event,
    deliveryId: delivery.id,
    timestamp: Math.floor(startedAt.getTime() / 1000),
    secrets: [secret],
    body: delivery.payload,
  })
  try {
    const response = await agent.request({
      origin: url.origin,
      path: url.pathname,
      method: "POST",
      headers,
      body: delivery.payload,
    })
    await response.body.dump()
    const ok = response.statusCode >= 200 && response.statusCode < 300
    return {
      statusCode: response.statusCode,
      startedAt,
      durationMs: Math.round(performance.now() - start),
      failureReason: ok ? null : `HTTP ${response.statusCode}`,
    }
  } catch (error) {
    return {
      statusCode: null,
      startedAt,
      durationMs: Math.round(performance.now() - start),
      failureReason: error instanceof Error ? error.message : String(error),
    }
  }
}

const endpointUrl = (base: string, endpointId: number) => new URL(`${base}/e${endpointId}`)

// ---------------------------------------------------------------------------------------------------------------
// The BullMQ peer

interface JobData {
  readonly deliveryId: string
  readonly endpointId: number
  readonly event: string
  readonly payload: string
}

export interface BullPeer {
  /** Inserts the delivery rows (one statement) and adds their jobs (one `addBulk`). */
  readonly enqueue: (events: ReadonlyArray<PeerEvent>) => Promise<void>
  /** Starts the worker with `concurrency` jobs at once. */
  readonly start: (concurrency: number) => Promise<void>
  readonly stopWorker: () => Promise<void>
  /** Delivery rows whose status is `delivered`. */
  readonly delivered: () => Promise<number>
  readonly sql: postgres.Sql
  readonly close: () => Promise<void>
}

export const bullPeer = async (options: PeerOptions & { readonly redisUrl: string }): Promise<BullPeer> => {
  const sql = postgres(options.databaseUrl, { max: 8, onnotice: () => undefined })
  await createTables(sql, options.tables)
  const deliveries = `${options.tables}_deliveries`
  const attempts = `${options.tables}_attempts`
  const unitMs = options.backoffUnitMs ?? 1000
  // BullMQ's workers block on Redis: each needs a connection of its own with no retry limit per request.
  const connection = () => new Redis(options.redisUrl, { maxRetriesPerRequest: null })
  const queueName = `${options.tables}_${randomUUID().slice(0, 8)}`
  const queueConnection = connection()
  const queue = new Queue<JobData>(queueName, { connection: queueConnection })
  let worker: Worker<JobData> | undefined
  let workerConnection: Redis | undefined
  const agent = agentFor(options.ca, 64)

  const record = async (job: Job<JobData>, outcome: Outcome) => {
    const attempt = job.attemptsMade + 1
    const delivered = outcome.failureReason === null
    const status = delivered ? "delivered" : attempt >= MAX_ATTEMPTS ? "failed" : "retrying"
    const nextRetryAt =
      status === "retrying" ? new Date(Date.now() + backoffUnits(attempt + 1) * unitMs) : null
    await sql.begin(async (tx) => {
      await tx`
        insert into ${tx(attempts)} (delivery_id, series, attempt_number, started_at, status_code, duration_ms, failure_reason)
        values (${job.data.deliveryId}, 1, ${attempt}, ${outcome.startedAt}, ${outcome.statusCode},
                ${outcome.durationMs}, ${outcome.failureReason})`
      await tx`
        update ${tx(deliveries)} set status = ${status},
          attempt_number = ${status === "retrying" ? attempt + 1 : attempt},
          last_attempted_at = ${outcome.startedAt}, duration_ms = ${outcome.durationMs},
          last_attempt_failure_reason = ${outcome.failureReason}, next_retry_at = ${nextRetryAt},
          delivered_at = ${delivered ? outcome.startedAt : null}, updated_at = now()
        where id = ${job.data.deliveryId}`
    })
  }

  return {
    sql,
    enqueue: async (events) => {
      if (events.length === 0) return
      const rows = await sql<Array<{ id: string }>>`
        insert into ${sql(deliveries)} ${sql(
          events.map((e) => ({
            endpoint_id: e.endpointId,
            event_id: e.eventId,
            event: e.event,
            owner_slug: e.ownerSlug,
            payload: Buffer.from(e.payload),
          })),
        )}
        returning id`
      await queue.addBulk(
        events.map((e, i) => ({
          name: e.event,
          data: {
            deliveryId: String(rows[i]!.id),
            endpointId: e.endpointId,
            event: e.event,
            payload: e.payload,
          },
          opts: {
            jobId: `d${rows[i]!.id}`,
            attempts: MAX_ATTEMPTS,
            backoff: { type: "custom" },
            removeOnComplete: true,
            removeOnFail: 1000,
          },
        })),
      )
    },
    start: async (concurrency) => {
      workerConnection = connection()
      worker = new Worker<JobData>(
        queueName,
        async (job) => {
          const outcome = await post(agent, endpointUrl(options.url, job.data.endpointId), options.secret, {
            id: job.data.deliveryId,
            event: job.data.event,
            payload: Buffer.from(job.data.payload),
          })
          await record(job, outcome)
          if (outcome.failureReason !== null) throw new Error(outcome.failureReason)
        },
        {
          connection: workerConnection,
          concurrency,
          settings: { backoffStrategy: (attemptsMade: number) => backoffUnits(attemptsMade + 1) * unitMs },
        },
      )
      await worker.waitUntilReady()
    },
    stopWorker: async () => {
      await worker?.close()
      worker = undefined
      workerConnection?.disconnect()
      workerConnection = undefined
    },
    delivered: async () => {
      const [row] = await sql<Array<{ n: number }>>`
        select count(*)::int as n from ${sql(deliveries)} where status = 'delivered'`
      return row!.n
    },
    close: async () => {
      await worker?.close()
      workerConnection?.disconnect()
      await queue.obliterate({ force: true }).catch(() => undefined)
      await queue.close()
      queueConnection.disconnect()
      await agent.close()
      await sql`drop table if exists ${sql(attempts)}, ${sql(deliveries)}`
      await sql.end()
    },
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The floor

/**
 * Runs `run` over every item handed in while the previous run was under way (the first one on the next turn of
 * the event loop): one statement for all deliveries in hand, as bare code batches.
 */
const groupCommit = <I, O>(run: (items: ReadonlyArray<I>) => Promise<ReadonlyArray<O>>) => {
  let waiting: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = []
  let running = false
  const flush = async () => {
    running = true
    while (waiting.length > 0) {
      const batch = waiting
      waiting = []
      try {
        const out = await run(batch.map((b) => b.item))
        batch.forEach((b, i) => b.resolve(out[i]!))
      } catch (error) {
        batch.forEach((b) => b.reject(error))
      }
    }
    running = false
  }
  return (item: I) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ item, resolve, reject })
      if (!running && waiting.length === 1) setImmediate(() => void (running || flush()))
    })
}

export interface Floor {
  /** Inserts the delivery rows (one statement) and publishes an attempt message for each (all in flight). */
  readonly enqueue: (events: ReadonlyArray<PeerEvent>) => Promise<void>
  /** Starts the consumer with up to `inHand` messages at once. */
  readonly start: (inHand: number) => Promise<void>
  readonly delivered: () => Promise<number>
  /** Attempt messages acknowledged so far. */
  readonly acked: () => number
  readonly sql: postgres.Sql
  readonly close: () => Promise<void>
}

export const floor = async (
  options: PeerOptions & { readonly natsUrl: string; readonly prefix: string },
): Promise<Floor> => {
  const sql = postgres(options.databaseUrl, { max: 4, onnotice: () => undefined })
  await createTables(sql, options.tables)
  const deliveries = `${options.tables}_deliveries`
  const attempts = `${options.tables}_attempts`
  const unitMs = options.backoffUnitMs ?? 1000
  const nc: NatsConnection = await connect({ servers: options.natsUrl.split(",") })
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc)
  const stream = `${options.prefix.toUpperCase()}_FLOOR`
  const subject = (endpointId: number) => `${options.prefix}.floor.attempt.${endpointId}`
  await jsm.streams.add({
    name: stream,
    subjects: [`${options.prefix}.floor.attempt.*`],
    max_bytes: 128 * 1024 * 1024,
  })
  await jsm.consumers.add(stream, {
    durable_name: "floor",
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: 30_000_000_000,
    max_ack_pending: 4096,
  })
  const agent = agentFor(options.ca, 64)
  const claimer = randomUUID()
  let ackedCount = 0
  let stopping = false
  let consuming: Promise<void> | undefined
  let stopConsumer: (() => void) | undefined

  interface Claimed {
    readonly id: string
    readonly endpoint_id: number
    readonly event: string
    readonly payload: Uint8Array
    readonly attempt_number: number
  }
  // The claim: a lease on every delivery in hand that is still due, in one statement.
  const claim = groupCommit<string, Claimed | undefined>(async (ids) => {
    const rows = await sql<Array<Claimed>>`
      update ${sql(deliveries)} set lease_until = now() + make_interval(secs => ${LEASE_MS / 1000}),
        claimed_by = ${claimer}, last_attempted_at = now(), updated_at = now()
      where id = any(${ids as Array<string>}::bigint[]) and status in ('pending', 'retrying')
        and (lease_until is null or lease_until <= now())
      returning id, endpoint_id, event, payload, attempt_number`
    const byId = new Map(rows.map((r) => [String(r.id), r]))
    return ids.map((id) => byId.get(id))
  })
  // The outcome and the attempt row of every delivery in hand, in one transaction of two statements.
  const record = groupCommit<{ readonly delivery: Claimed; readonly outcome: Outcome }, void>(
    async (items) => {
      const rows = items.map(({ delivery, outcome }) => {
        const delivered = outcome.failureReason === null
        const attempt = delivery.attempt_number
        const status = delivered ? "delivered" : attempt >= MAX_ATTEMPTS ? "failed" : "retrying"
        return {
          id: delivery.id,
          attempt,
          status,
          started_at: outcome.startedAt.toISOString(),
          status_code: outcome.statusCode,
          duration_ms: outcome.durationMs,
          failure_reason: outcome.failureReason,
          next_retry_at:
            status === "retrying"
              ? new Date(Date.now() + backoffUnits(attempt + 1) * unitMs).toISOString()
              : null,
        }
      })
      const json = JSON.stringify(rows)
      await sql.begin(async (tx) => {
        await tx`
        insert into ${tx(attempts)} (delivery_id, series, attempt_number, started_at, status_code, duration_ms, failure_reason)
        select id, 1, attempt, started_at, status_code, duration_ms, failure_reason
        from json_to_recordset(${json}::text::json) as r(id bigint, attempt int, started_at timestamptz, status_code int,
                                                   duration_ms int, failure_reason text)`
        await tx`
        update ${tx(deliveries)} d set status = r.status,
          attempt_number = case when r.status = 'retrying' then r.attempt + 1 else r.attempt end,
          duration_ms = r.duration_ms, last_attempt_failure_reason = r.failure_reason,
          next_retry_at = r.next_retry_at, lease_until = null,
          delivered_at = case when r.status = 'delivered' then r.started_at end, updated_at = now()
        from json_to_recordset(${json}::text::json) as r(id bigint, attempt int, status text, started_at timestamptz, duration_ms int,
                                                   failure_reason text, next_retry_at timestamptz)
        where d.id = r.id`
      })
      return items.map(() => undefined)
    },
  )

  const handle = async (msg: JsMsg) => {
    const id = msg.string()
    const delivery = await claim(id)
    // Not due (delivered already, or claimed elsewhere): the message has done its work.
    if (delivery === undefined) return void (msg.ack(), ackedCount++)
    const outcome = await post(
      agent,
      endpointUrl(options.url, delivery.endpoint_id),
      options.secret,
      delivery,
    )
    await record({ delivery, outcome })
    if (outcome.failureReason === null || delivery.attempt_number >= MAX_ATTEMPTS) {
      msg.ack()
      ackedCount++
    }
    // The retry: the same message again after the backoff (the engine's scheduler republishes instead).
    else msg.nak(backoffUnits(delivery.attempt_number + 1) * unitMs)
  }

  return {
    sql,
    acked: () => ackedCount,
    enqueue: async (events) => {
      if (events.length === 0) return
      const rows = await sql<Array<{ id: string; endpoint_id: number }>>`
        insert into ${sql(deliveries)} ${sql(
          events.map((e) => ({
            endpoint_id: e.endpointId,
            event_id: e.eventId,
            event: e.event,
            owner_slug: e.ownerSlug,
            payload: Buffer.from(e.payload),
          })),
        )}
        returning id, endpoint_id`
      await Promise.all(
        rows.map((row) =>
          js.publish(subject(Number(row.endpoint_id)), String(row.id), { msgID: `floor-${row.id}` }),
        ),
      )
    },
    start: async (inHand) => {
      const consumer = await js.consumers.get(stream, "floor")
      const messages = await consumer.consume({ max_messages: inHand })
      stopConsumer = () => void messages.stop()
      consuming = (async () => {
        const inFlight = new Set<Promise<void>>()
        for await (const msg of messages) {
          if (stopping) break
          const handled: Promise<void> = handle(msg).then(
            () => void inFlight.delete(handled),
            // A claim or record that failed: again once its lease has run out.
            () => (msg.nak(LEASE_MS), void inFlight.delete(handled)),
          )
          inFlight.add(handled)
        }
        await Promise.all(inFlight)
      })()
    },
    delivered: async () => {
      const [row] = await sql<Array<{ n: number }>>`
        select count(*)::int as n from ${sql(deliveries)} where status = 'delivered'`
      return row!.n
    },
    close: async () => {
      stopping = true
      stopConsumer?.()
      await consuming
      await jsm.streams.delete(stream).catch(() => undefined)
      await nc.close()
      await agent.close()
      await sql`drop table if exists ${sql(attempts)}, ${sql(deliveries)}`
      await sql.end()
    },
  }
}
