import { Cause, Data, Duration, Effect, Fiber, FiberSet, Layer, Schema, type Scope, Semaphore } from "effect"
import { Db, type Sql } from "./Db.ts"
import { type DurableConsumer, Nats, type PulledMessage, type StreamBase } from "./Nats.ts"
import { metrics } from "./Observability.ts"
import { perTurnBatch } from "./PerTurnBatch.ts"
import { type DependencyUnavailable, unavailableIn } from "./Unavailable.ts"

/** What a handler decided: exactly one of these settles every message. */
export type Outcome = Data.TaggedEnum<{
  Ack: Record<never, never>
  Nak: { readonly delay: Duration.Duration }
  Term: { readonly reason: string }
}>
const Outcome = Data.taggedEnum<Outcome>()
export const ack: Outcome = Outcome.Ack()
export const nak = (delay: Duration.Input): Outcome => Outcome.Nak({ delay: Duration.fromInputUnsafe(delay) })
export const term = (reason: string): Outcome => Outcome.Term({ reason })

export interface Delivery {
  /** Subject without the deployment prefix. */
  readonly subject: string
  readonly streamSequence: number
  /** 1 on first delivery. */
  readonly deliveryCount: number
  /** Messages of the consumer that JetStream had not yet delivered when it delivered this one. */
  readonly pending: number
  readonly headers: Readonly<Record<string, string>>
  /** The message's exact bytes, as published (the decoded message is what the handler gets first). */
  readonly raw: Uint8Array
}

/** A decoded message with its delivery, as a batch handler gets it. */
export interface Delivered<A> {
  readonly message: A
  readonly delivery: Delivery
}

export interface ActorBatch<A, R> {
  /** Most messages one batch holds (the consumer's `max_ack_pending`). */
  readonly size: number
  /**
   * Handles the batch, in stream order (later messages of a key after earlier ones), and returns one outcome per
   * message, in the same order; messages are settled only after it returns (after its commit).
   */
  readonly handle: (messages: ReadonlyArray<Delivered<A>>) => Effect.Effect<ReadonlyArray<Outcome>, never, R>
}

/** A message the actor gave up on (terminated and kept in `dead_letters`), as its `onTerminated` sees it. */
export interface Terminated {
  /** Subject without the deployment prefix. */
  readonly subject: string
  readonly streamSequence: number
  readonly headers: Readonly<Record<string, string>>
  readonly raw: Uint8Array
  readonly reason: string
}

export interface ActorDefinition<A, R> {
  /** Durable consumer names derive from it: `<name>_p<partition>`. */
  readonly name: string
  readonly stream: StreamBase
  /** Subject pattern (`docs/architecture.md`) without prefix and without the trailing partition token. */
  readonly subject: string
  /**
   * Publishers append `partitionOf(key, partitions)` as the last subject token. 0: the subject carries no
   * partition token and one consumer takes all of it (for messages that need no order among themselves).
   */
  readonly partitions: number
  readonly schema: Schema.Codec<A, unknown>
  readonly handle: (message: A, delivery: Delivery) => Effect.Effect<Outcome, never, R>
  /** How long a delivered message may stay unsettled before JetStream redelivers it. */
  readonly ackWait?: Duration.Input
  /** A handler that dies this many times on one message gets it terminated and recorded. */
  readonly maxDefects?: number
  /**
   * Messages of one partition handled at once (its consumer's `max_ack_pending`); default 1, which keeps one
   * key's messages in stream order. Raise it only for work whose messages need no order among themselves.
   */
  readonly concurrency?: number
  /**
   * Batch mode: one process at a time leads each partition (a Postgres advisory lock held by a connection of its
   * own) and pulls up to `size` of its messages at once for `batch.handle`. A batch that dies, or answers with the
   * wrong number of outcomes, is handled again one message at a time with `handle`, so one poison message cannot
   * hold back the others. `concurrency` does not apply.
   */
  readonly batch?: ActorBatch<A, R>
  /**
   * Called once a message is terminated (undecodable, or its handler died `maxDefects` times), after it is
   * recorded in `dead_letters`: where the actor's own records should say so too. Its failures are logged only.
   */
  readonly onTerminated?: (terminated: Terminated) => Effect.Effect<void, never, R>
}

/** How long one pull waits for a message; also how long stopping may wait for an idle partition. */
const PULL_EXPIRES = 1000
const DRAIN_TIMEOUT = "8 seconds"
/** How often a process tries to take the partitions no process leads, and checks it still holds its own. */
const LEASE_INTERVAL = "1 second"
/** How long a partition loop waits before looking again whether its process leads the partition. */
const LEASE_WAIT = "200 millis"
/** Key spaces (first key of the two-key advisory locks) of the partition leases and of the processes' presence. */
const ACTOR_LEASE_LOCK = 7_239_300
const ACTOR_PRESENCE_LOCK = 7_239_301
const decoder = new TextDecoder()

/**
 * Acks and naks made in one turn of the event loop, sent together at its end (`perTurnBatch`): one socket write for
 * many settlements instead of one each. A nak's delay is in milliseconds; an ack has none (-1). `flush` sends what
 * is queued at once (an actor stopping does, before its connection may close).
 */
const makeSettlements = () => {
  const queue = perTurnBatch<readonly [PulledMessage, number | undefined]>((items) => {
    for (const [msg, delay] of items) {
      if (delay === -1) msg.ack()
      else msg.nak(delay)
    }
  })
  return {
    ack: (msg: PulledMessage) => queue.add([msg, -1]),
    nak: (msg: PulledMessage, delay?: number) => queue.add([msg, delay]),
    flush: queue.flush,
  }
}

/** How soon a message whose handler found a dependency unavailable comes back, and how often the actor checks it. */
const UNAVAILABLE_DELAY = Duration.seconds(1)
const PROBE_INTERVAL = "500 millis"

/** Backoff for a handler that died: 1 s, 2 s, 4 s ... capped at one minute. */
const defectDelay = (deliveryCount: number) => Duration.seconds(Math.min(2 ** (deliveryCount - 1), 60))

const readHeaders = (msg: PulledMessage) => {
  const out: Record<string, string> = {}
  for (const key of msg.headers?.keys() ?? []) out[key] = msg.headers?.get(key) ?? ""
  return out
}

type Reserved = Awaited<ReturnType<Sql["reserve"]>>

/**
 * Which partitions of a batch actor this process leads: a session advisory lock per partition, all held by one
 * reserved connection, so a process that dies (its connection closes) lets another take its partitions within
 * `LEASE_INTERVAL`. Every process running the actor also holds a shared "presence" lock, so each knows how many
 * run it and leads at most its fair share, letting go of the rest between two batches: partitions spread over
 * the processes as they start and stop. A connection that fails (Postgres restarted, the backend killed) has lost
 * its session's locks: the process leads nothing until a renewal reserves a new connection and takes them again.
 * Unlocked when the scope closes, after the work in hand is settled.
 */
const partitionLeases = (actor: string, partitions: number) =>
  Effect.gen(function* () {
    const db = yield* Db
    const held = new Set<number>()
    const leaving = new Set<number>()
    const all = Array.from({ length: partitions }, (_, i) => i)
    let connection: Reserved | undefined
    let failing = false
    /** Lets go of every lock and of the connection; a connection already gone is simply forgotten. */
    const letGo = () => {
      const reserved = connection
      connection = undefined
      held.clear()
      leaving.clear()
      if (reserved === undefined) return Promise.resolve()
      return reserved
        .unsafe("select pg_advisory_unlock_all()")
        .catch(() => undefined)
        .then(() => reserved.release())
    }
    const renew = Effect.gen(function* () {
      if (connection === undefined) {
        const reserved = yield* db.query<Reserved>((sql) => sql.reserve())
        connection = reserved
        yield* db.query(() =>
          reserved.unsafe("select pg_advisory_lock_shared($1, hashtext($2))", [ACTOR_PRESENCE_LOCK, actor]),
        )
      }
      const session = connection
      const [row] = yield* db.query(() =>
        session.unsafe<Array<{ processes: number }>>(
          `select count(*)::int as processes from pg_locks
           where locktype = 'advisory' and mode = 'ShareLock' and granted
             and database = (select oid from pg_database where datname = current_database())
             and classid = $1::oid and objid = hashtext($2)::oid and objsubid = 2`,
          [ACTOR_PRESENCE_LOCK, actor],
        ),
      )
      const fair = Math.ceil(partitions / Math.max(row!.processes, 1))
      const leading = [...held].filter((p) => !leaving.has(p))
      // Beyond the fair share: let go of the highest partitions (each once its batch in hand is settled).
      for (const p of leading.sort((x, y) => y - x).slice(0, Math.max(0, leading.length - fair)))
        leaving.add(p)
      const room = fair - (held.size - leaving.size)
      if (room > 0) {
        const [taken] = yield* db.query(() =>
          session.unsafe<Array<{ got: Array<number> }>>(
            `select array(select p from unnest($3::int[]) p
                          where pg_try_advisory_lock($1, hashtext($2 || '_p' || p)) limit $4) as got`,
            [ACTOR_LEASE_LOCK, actor, all.filter((p) => !held.has(p)), room],
          ),
        )
        for (const partition of taken!.got) held.add(partition)
      }
      if (failing) {
        failing = false
        yield* Effect.logInfo("actor leases renewed").pipe(Effect.annotateLogs({ actor }))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.promise(letGo).pipe(
          Effect.andThen(
            failing
              ? Effect.void
              : Effect.logWarning("actor lease check failed; leading no partition until it succeeds").pipe(
                  Effect.annotateLogs({ actor, cause: String(Cause.squash(cause)) }),
                ),
          ),
          Effect.andThen(Effect.sync(() => void (failing = true))),
        ),
      ),
    )
    /** Called by a partition's loop between batches: lets the partition go if it is to be let go. */
    const settle = (partition: number) => {
      const session = connection
      return leaving.has(partition) && session !== undefined
        ? db
            .query(() =>
              session.unsafe("select pg_advisory_unlock($1, hashtext($2 || '_p' || $3::int))", [
                ACTOR_LEASE_LOCK,
                actor,
                partition,
              ]),
            )
            .pipe(
              Effect.exit,
              Effect.andThen(
                Effect.sync(() => {
                  held.delete(partition)
                  leaving.delete(partition)
                }),
              ),
            )
        : Effect.void
    }
    yield* Effect.addFinalizer(() => Effect.promise(letGo))
    yield* renew
    // Uninterruptible: the connection's release must wait for a renewal under way, or a lock that renewal takes
    // after `pg_advisory_unlock_all` would stay held by a pooled connection, and no process would lead the
    // partition again.
    yield* Effect.forkScoped(
      Effect.forever(Effect.sleep(LEASE_INTERVAL).pipe(Effect.andThen(Effect.uninterruptible(renew)))),
    )
    return { leads: (partition: number) => held.has(partition) && !leaving.has(partition), settle }
  })

type Leases = Effect.Success<ReturnType<typeof partitionLeases>>

/**
 * Runs an actor over one durable pull consumer per partition, each with `max_ack_pending` 1 unless the actor
 * asks for more concurrency: JetStream hands out one message of a partition at a time, whichever process pulls
 * it, so the messages of one key are handled one at a time and in stream order across every process, while
 * partitions run concurrently. In batch mode only the process leading a partition pulls from it, up to the batch
 * size at once, and hands each batch to the handler in stream order.
 * On scope close it stops pulling, lets in-flight handlers finish (naking what it cannot finish in time),
 * then returns.
 */
export const runActor = <A, R>(
  actor: ActorDefinition<A, R>,
): Effect.Effect<void, never, Nats | Db | Scope.Scope | R> =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const db = yield* Db
    const stream = nats.streamName(actor.stream)
    // JSON.parse, then the schema: cheaper than `Schema.fromJsonString`, and it runs on every message.
    const decode = Schema.decodeUnknownResult(actor.schema)
    const maxDefects = actor.maxDefects ?? 5
    let stopped = false
    const settlements = makeSettlements()

    const handledCount = {
      Ack: metrics.actorHandled({ actor: actor.name, outcome: "ack" }),
      Nak: metrics.actorHandled({ actor: actor.name, outcome: "nak" }),
      Term: metrics.actorHandled({ actor: actor.name, outcome: "term" }),
    }
    const lag = Array.from({ length: Math.max(actor.partitions, 1) }, (_, partition) =>
      metrics.actorLag({ actor: actor.name, partition: String(partition) }),
    )

    /** Whether this is the message's first record (a term that was lost and repeated is recorded once). */
    const recordDeadLetter = (msg: PulledMessage, reason: string) =>
      db
        .query(
          (sql) => sql`
          insert into dead_letters (actor, stream, stream_seq, subject, headers, payload, reason, delivery_count)
          values (${actor.name}, ${stream}, ${msg.seq}, ${nats.unprefixed(msg.subject)},
                  ${sql.json(readHeaders(msg))}, ${Buffer.from(msg.data)}, ${reason}, ${msg.info.deliveryCount})
          on conflict (actor, stream, stream_seq) do nothing
          returning stream_seq`,
        )
        .pipe(Effect.map((rows) => rows.length > 0))

    const terminated = (msg: PulledMessage, reason: string): Effect.Effect<void, never, R> =>
      actor.onTerminated === undefined
        ? Effect.void
        : Effect.suspend(() =>
            actor.onTerminated!({
              subject: nats.unprefixed(msg.subject),
              streamSequence: msg.seq,
              headers: readHeaders(msg),
              raw: msg.data,
              reason,
            }),
          ).pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("actor could not record a terminated message").pipe(
                Effect.annotateLogs({ actor: actor.name, seq: msg.seq, cause: Cause.pretty(cause) }),
              ),
            ),
          )

    const settle = (msg: PulledMessage, outcome: Outcome): Effect.Effect<void, never, R> => {
      switch (outcome._tag) {
        case "Ack":
          return Effect.sync(() => {
            handledCount.Ack.inc()
            settlements.ack(msg)
          })
        case "Nak":
          return Effect.sync(() => {
            handledCount.Nak.inc()
            settlements.nak(msg, Duration.toMillis(outcome.delay))
          })
        case "Term":
          return Effect.gen(function* () {
            handledCount.Term.inc()
            if (yield* recordDeadLetter(msg, outcome.reason)) yield* terminated(msg, outcome.reason)
            yield* Effect.logWarning("message terminated").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                subject: msg.subject,
                seq: msg.seq,
                reason: outcome.reason,
              }),
            )
            // No reason on the wire: nats-server 2.9 ignores `+TERM <reason>`; the reason is in dead_letters.
            msg.term()
          })
      }
    }

    const poison = (msg: PulledMessage, reason: string) => {
      metrics.actorFailed.inc({ actor: actor.name, reason: "undecodable" })
      return settle(msg, term(`undecodable: ${reason}`))
    }

    /** Counts the delivery and decodes it: the message with its delivery, or why it cannot be decoded. */
    const received = (
      msg: PulledMessage,
      partition: number,
    ): (Delivered<A> & { readonly msg: PulledMessage }) | { readonly undecodable: string } => {
      const deliveryCount = msg.info.deliveryCount
      if (deliveryCount > 1) metrics.actorRedelivered.inc({ actor: actor.name })
      lag[partition]!.set(msg.info.pending)
      let json: unknown
      try {
        json = JSON.parse(decoder.decode(msg.data))
      } catch (error) {
        return { undecodable: `not JSON: ${(error as Error).message}` }
      }
      const decoded = decode(json)
      if (decoded._tag === "Failure") return { undecodable: decoded.failure.message }
      let headers: Readonly<Record<string, string>> | undefined
      const delivery: Delivery = {
        subject: nats.unprefixed(msg.subject),
        streamSequence: msg.seq,
        deliveryCount,
        pending: msg.info.pending,
        // Read when asked for: many handlers never look at them.
        get headers() {
          return (headers ??= readHeaders(msg))
        },
        raw: msg.data,
      }
      return { msg, message: decoded.success, delivery }
    }

    /**
     * A dependency a handler needed did not answer: the actor stops pulling until it answers again (`available`),
     * and the message comes back soon. Expected, so logged once as a warning, counted apart from defects, and
     * never terminated.
     */
    let waitingFor: DependencyUnavailable | undefined
    const pause = (unavailable: DependencyUnavailable) =>
      Effect.suspend(() => {
        metrics.actorFailed.inc({ actor: actor.name, reason: "unavailable" })
        if (waitingFor !== undefined) return Effect.void
        waitingFor = unavailable
        return Effect.logWarning("actor paused: a dependency is unavailable").pipe(
          Effect.annotateLogs({
            actor: actor.name,
            dependency: unavailable.dependency,
            reason: unavailable.reason,
          }),
        )
      })
    /** Returns at once unless paused; then once the dependency answers (or the actor stops). */
    const available = Effect.gen(function* () {
      // Every partition's loop may probe at once; the first to see the dependency back resumes the actor.
      for (let waiting = waitingFor; waiting !== undefined && !stopped; waiting = waitingFor) {
        const probe = waiting.dependency === "postgres" ? db.ping : nats.ping
        const answered = yield* probe.pipe(Effect.timeout("2 seconds"), Effect.exit)
        if (answered._tag === "Failure") yield* Effect.sleep(PROBE_INTERVAL)
        else if (waitingFor === waiting) {
          waitingFor = undefined
          yield* Effect.logInfo("actor resumed").pipe(
            Effect.annotateLogs({ actor: actor.name, dependency: waiting.dependency }),
          )
        }
      }
    })

    /** The single handler's outcome; a handler that dies is retried with backoff, then terminated. */
    const handleOne = (item: Delivered<A> & { readonly msg: PulledMessage }) =>
      actor.handle(item.message, item.delivery).pipe(
        Effect.catchCause((cause) =>
          Effect.gen(function* () {
            const unavailable = unavailableIn(cause)
            if (unavailable !== undefined) {
              yield* pause(unavailable)
              return nak(UNAVAILABLE_DELAY)
            }
            const deliveryCount = item.delivery.deliveryCount
            metrics.actorFailed.inc({ actor: actor.name, reason: "defect" })
            yield* Effect.logError("actor handler died").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                seq: item.msg.seq,
                deliveryCount,
                cause: Cause.pretty(cause),
              }),
            )
            return deliveryCount >= maxDefects
              ? term(`handler died ${deliveryCount} times: ${Cause.pretty(cause).split("\n")[0]}`)
              : nak(defectDelay(deliveryCount))
          }),
        ),
      )

    const process = (msg: PulledMessage, partition: number) =>
      Effect.suspend(() => {
        const item = received(msg, partition)
        return "undecodable" in item
          ? poison(msg, item.undecodable)
          : Effect.flatMap(handleOne(item), (outcome) => settle(msg, outcome))
      }).pipe(
        // No span per message: it costs more than a small handler, and the handler may open its own.
        // Only a drain timeout interrupts a handler: hand the message back at once rather than after ack_wait.
        Effect.onInterrupt(() => Effect.sync(() => settlements.nak(msg))),
      )

    /** The batch handler's outcomes, or undefined when it died or miscounted (logged and counted). */
    const handleWhole = (
      batch: ActorBatch<A, R>,
      items: ReadonlyArray<Delivered<A>>,
      partition: number,
    ): Effect.Effect<ReadonlyArray<Outcome> | undefined, never, R> =>
      batch.handle(items).pipe(
        Effect.flatMap((outcomes) =>
          outcomes.length === items.length
            ? Effect.succeed(outcomes)
            : Effect.die(new Error(`${outcomes.length} outcomes for ${items.length} messages`)),
        ),
        Effect.catchCause((cause) =>
          Effect.gen(function* () {
            const unavailable = unavailableIn(cause)
            if (unavailable !== undefined) {
              yield* pause(unavailable)
              return items.map(() => nak(UNAVAILABLE_DELAY))
            }
            metrics.actorFailed.inc({ actor: actor.name, reason: "batch" })
            yield* Effect.logWarning("actor batch failed; handling its messages one at a time").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                partition,
                messages: items.length,
                cause: Cause.pretty(cause).split("\n")[0],
              }),
            )
            return undefined
          }),
        ),
      )

    /**
     * One batch: decoded in order, handed whole to the batch handler, each message settled with its outcome after
     * the handler returned. A batch handler that dies hands the batch to the single handler, one message at a
     * time in stream order, so a poison message only retries (and is terminated) by itself.
     */
    const processBatch = (
      batch: ActorBatch<A, R>,
      msgs: ReadonlyArray<PulledMessage>,
      partition: number,
    ): Effect.Effect<void, never, R> => {
      const settled = new Set<PulledMessage>()
      const settleOnce = (msg: PulledMessage, outcome: Outcome) =>
        settle(msg, outcome).pipe(Effect.ensuring(Effect.sync(() => settled.add(msg))))
      return Effect.gen(function* () {
        const items: Array<Delivered<A> & { readonly msg: PulledMessage }> = []
        for (const msg of msgs) {
          const item = received(msg, partition)
          if ("undecodable" in item) {
            yield* poison(msg, item.undecodable)
            settled.add(msg)
          } else items.push(item)
        }
        const outcomes = items.length > 1 ? yield* handleWhole(batch, items, partition) : undefined
        for (const [i, item] of items.entries()) {
          let outcome = outcomes?.[i]
          if (outcome === undefined) outcome = yield* handleOne(item)
          yield* settleOnce(item.msg, outcome)
        }
      }).pipe(
        Effect.withSpan(`Actor.${actor.name}.batch`),
        // Only a drain timeout interrupts a batch: hand back at once what was not settled.
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            for (const msg of msgs) if (!settled.has(msg)) settlements.nak(msg)
          }),
        ),
      )
    }

    /**
     * Partitions whose pulls are failing (NATS away, a stream electing its leader): warned of once when they start
     * failing and once when they pull again, not on every retry.
     */
    const pullsFailing = new Set<number>()
    const pullFailed = (partition: number, cause: string) =>
      pullsFailing.has(partition)
        ? Effect.void
        : Effect.logWarning("actor pull failed; retrying every second").pipe(
            Effect.annotateLogs({ actor: actor.name, partition, cause }),
            Effect.andThen(Effect.sync(() => pullsFailing.add(partition))),
          )
    const pullSucceeded = (partition: number) =>
      pullsFailing.delete(partition)
        ? Effect.logInfo("actor pulls again").pipe(Effect.annotateLogs({ actor: actor.name, partition }))
        : Effect.void

    const concurrency = actor.concurrency ?? 1
    const consumerFor = (partition: number, maxAckPending: number) =>
      Effect.gen(function* () {
        const filter = actor.partitions === 0 ? actor.subject : `${actor.subject}.${partition}`
        const consumer: DurableConsumer = {
          stream,
          name: `${actor.name}_p${partition}`,
          // A filter that is the whole stream is left out: nats-server before 2.9.15 can miscount a filtered
          // consumer's pending messages and then recount them on every delivery (see `recountsPendingPerDelivery`);
          // an unfiltered one is counted by arithmetic.
          filterSubject: filter === nats.streamSubjects(actor.stream) ? "" : nats.subject(filter),
          ackWait: actor.ackWait ?? "30 seconds",
          maxAckPending,
        }
        yield* nats.ensureConsumer(consumer)
        const puller = yield* nats.puller(stream, consumer.name)
        /**
         * One pull of up to `count` messages, each handed to `onMessage` as it arrives; the number that came. The
         * pull ends when they have all come or after `PULL_EXPIRES`, when JetStream says it expired: either way no
         * pull of ours is left waiting on the server once this returns, so none can hand a message to a process
         * that is gone. A pull JetStream ended otherwise (its consumer deleted) is logged, and the consumer made
         * again, a second later.
         */
        return (count: number, onMessage: (msg: PulledMessage) => void) =>
          puller.pull(count, PULL_EXPIRES, onMessage).pipe(
            Effect.tap(() => pullSucceeded(partition)),
            Effect.catchTag("PullFailed", (failed) =>
              pullFailed(partition, failed.message).pipe(
                Effect.andThen(Effect.sleep("1 second")),
                Effect.andThen(nats.ensureConsumer(consumer)),
                Effect.as(failed.received),
              ),
            ),
          )
      })

    /**
     * Per partition: one pull at a time, for as many messages as there are free slots (`concurrency`), once at
     * least a quarter of them is free; each message is handled as it arrives, while the pull waits for the rest.
     * The pull thus stays open on the server for up to `PULL_EXPIRES`, and a message published meanwhile reaches its
     * handler at once, with no request of its own; a busy partition makes one pull per many messages. With
     * `concurrency` 1 it is one message per pull, in stream order. A message that arrives while stopping is nak'd
     * back at once; stopping waits for the pull to end and for the messages in hand.
     */
    const consumePartition = (partition: number) =>
      Effect.gen(function* () {
        const pull = yield* consumerFor(partition, concurrency)
        // A slot per message in hand: a pull asks for as many messages as there are free slots.
        const slots = yield* Semaphore.make(concurrency)
        /** Waits until at least `need` slots are free (only handlers free them), then takes every free one. */
        const takeFree = (need: number) =>
          Effect.gen(function* () {
            yield* slots.take(need)
            // Releasing none answers how many are free; only this loop takes slots, so they stay free.
            const more = yield* slots.release(0)
            if (more > 0) yield* slots.take(more)
            return need + more
          })
        const inHand = yield* FiberSet.make()
        const run = yield* FiberSet.runtime(inHand)<R>()
        const start = (msg: PulledMessage) =>
          stopped
            ? Effect.sync(() => settlements.nak(msg)).pipe(Effect.andThen(slots.release(1)))
            : Effect.ensuring(process(msg, partition), slots.release(1))
        const quarter = Math.max(1, Math.floor(concurrency / 4))
        while (!stopped) {
          yield* available
          const count = yield* takeFree(quarter)
          if (stopped) {
            yield* slots.release(count)
            break
          }
          const got = yield* pull(count, (msg) => void run(start(msg)))
          if (got < count) yield* slots.release(count - got)
        }
        yield* FiberSet.awaitEmpty(inHand)
      }).pipe(Effect.scoped)

    /**
     * Batch mode, while this process leads the partition: one message (a pull expiring after `PULL_EXPIRES`),
     * then as many of those JetStream said were waiting behind it as the batch holds, in one more pull. Only the
     * leader pulls, so those are there and the pull ends at once.
     */
    const consumeBatches = (partition: number, batch: ActorBatch<A, R>, leases: Leases) =>
      Effect.gen(function* () {
        const pull = yield* consumerFor(partition, batch.size)
        while (!stopped) {
          yield* available
          if (!leases.leads(partition)) {
            yield* leases.settle(partition)
            yield* Effect.sleep(LEASE_WAIT)
            continue
          }
          const msgs: Array<PulledMessage> = []
          const collect = (msg: PulledMessage) => void msgs.push(msg)
          if ((yield* pull(1, collect)) === 0) continue
          const more = Math.min(msgs[0]!.info.pending, batch.size - 1)
          if (more > 0 && !stopped) yield* pull(more, collect)
          if (stopped || !leases.leads(partition)) {
            for (const msg of msgs) settlements.nak(msg)
            continue
          }
          yield* processBatch(batch, msgs, partition)
        }
      }).pipe(Effect.scoped)

    const pullLoop = (partition: number, leases: Leases) =>
      Effect.suspend(() =>
        actor.batch === undefined
          ? consumePartition(partition)
          : consumeBatches(partition, actor.batch, leases),
      ).pipe(
        Effect.catchCause((cause) =>
          pullFailed(partition, String(Cause.squash(cause))).pipe(Effect.andThen(Effect.sleep("1 second"))),
        ),
        Effect.repeat({ while: () => !stopped }),
      )

    const partitions = Math.max(actor.partitions, 1)
    const leases: Leases =
      actor.batch === undefined
        ? { leads: () => true, settle: () => Effect.void }
        : // Per stream as well: deployments sharing a database under different subject prefixes lead apart.
          yield* partitionLeases(`${stream}/${actor.name}`, partitions)
    const fibers = yield* Effect.forEach(
      Array.from({ length: partitions }, (_, i) => i),
      (partition) => Effect.forkDetach(pullLoop(partition, leases)),
    )
    // Runs before the leases are released (finalizers run last-added first): partitions are let go only once the
    // work in hand was settled.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => void (stopped = true)).pipe(
        Effect.andThen(Fiber.joinAll(fibers)),
        Effect.timeout(DRAIN_TIMEOUT),
        Effect.catchCause(() => Fiber.interruptAll(fibers)),
        Effect.andThen(Effect.sync(settlements.flush)),
        Effect.andThen(Effect.logInfo("actor drained").pipe(Effect.annotateLogs({ actor: actor.name }))),
      ),
    )
  })

export const actorLayer = <A, R>(actor: ActorDefinition<A, R>) => Layer.effectDiscard(runActor(actor))
