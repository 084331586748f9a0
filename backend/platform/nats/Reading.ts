import { DeliverPolicy } from "@nats-io/jetstream"
import { Effect, identity, type Scope, Stream } from "effect"
import { DependencyUnavailable } from "../Unavailable.ts"
import { NatsClient } from "./Client.ts"
import { isNotFound, streamReport } from "./Reports.ts"
import { type StreamBase, StreamTable } from "./StreamTable.ts"
import type { FollowedMessage, StreamState } from "./Types.ts"

/**
 * A read of JetStream's state (a stream's info, its stored messages): when the server is away or does not answer
 * in time, the read dies with `DependencyUnavailable`, which callers report as a 503 or retry, never as a bug.
 */
const read = <A>(run: () => Promise<A>) =>
  Effect.promise(() =>
    run().catch((error: unknown) =>
      Promise.reject(
        new DependencyUnavailable({
          dependency: "nats",
          reason: error instanceof Error ? error.message : String(error),
        }),
      ),
    ),
  )

/**
 * The reads of `Nats`: streams' and consumers' state, stored messages by time or sequence, followers, and the
 * reports of the table's streams (named by `streamName`).
 */
export const makeReading = (streamName: (base: StreamBase) => string) =>
  Effect.gen(function* () {
    const streams = yield* StreamTable
    const { js, jsm } = yield* NatsClient

    const follow = (
      stream: string,
      filter: string,
      since: Date | undefined,
      onMessage: (msg: FollowedMessage) => void,
    ): Effect.Effect<void, never, Scope.Scope> =>
      Effect.gen(function* () {
        const consumer = yield* Effect.promise(() =>
          js.consumers.get(stream, {
            filter_subjects: filter,
            ...(since
              ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() }
              : { deliver_policy: DeliverPolicy.New }),
          }),
        )
        const messages = yield* Effect.acquireRelease(
          Effect.promise(() => consumer.consume()),
          (messages) => Effect.promise(() => messages.close()).pipe(Effect.ignore),
        )
        yield* Stream.fromAsyncIterable(messages, identity).pipe(
          Stream.runForEach((msg) => Effect.sync(() => onMessage(msg))),
          Effect.orDie,
          Effect.forkScoped,
        )
      })

    const streamExists = (stream: string) =>
      read(() =>
        jsm.streams.info(stream).then(
          () => true,
          (error: unknown) => (isNotFound(error) ? false : Promise.reject(error)),
        ),
      )

    const streamState = (stream: string) =>
      read(() => jsm.streams.info(stream)).pipe(
        Effect.map((info): StreamState => ({
          lastSeq: info.state.last_seq,
          keptSince:
            info.state.first_seq <= 1
              ? undefined
              : new Date(info.state.messages === 0 ? info.state.last_ts : info.state.first_ts),
        })),
      )

    const consumerProgress = (stream: string, consumer: string) =>
      read(() =>
        jsm.consumers.info(stream, consumer).then(
          (info) => ({ ackFloor: info.ack_floor.stream_seq, delivered: info.delivered.stream_seq }),
          (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)),
        ),
      )

    /**
     * The stored messages of `filter` from where `start` says, up to `upTo` (a stream sequence) and at most `max`.
     * The read ends after as many messages as matched when it started, counted by the server (a message's own
     * pending count is not exact on every server). None matching: a consume would wait for a message that may
     * never come.
     */
    const readFrom = (
      stream: string,
      filter: string,
      start:
        | { readonly deliver_policy: typeof DeliverPolicy.StartTime; readonly opt_start_time: string }
        | { readonly deliver_policy: typeof DeliverPolicy.StartSequence; readonly opt_start_seq: number },
      upTo: number,
      max = Infinity,
    ) =>
      read(async () => {
        const found: Array<FollowedMessage> = []
        if (max <= 0) return found
        const consumer = await js.consumers.get(stream, { filter_subjects: filter, ...start })
        const matching = (await consumer.info()).num_pending
        if (matching === 0) return found
        const messages = await consumer.consume()
        try {
          let read = 0
          for await (const msg of messages) {
            if (msg.seq > upTo) break
            found.push(msg)
            if (msg.seq === upTo || ++read >= matching || found.length >= max) break
          }
        } finally {
          await messages.close()
        }
        return found
      })
    const readStored = (stream: string, filter: string, since: Date, upTo: number) =>
      readFrom(
        stream,
        filter,
        { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() },
        upTo,
      )
    const readRange = (stream: string, filter: string, from: number, upTo: number, max: number) =>
      from > upTo
        ? Effect.succeed([])
        : readFrom(
            stream,
            filter,
            { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from },
            upTo,
            max,
          )

    const streamReports = read(() =>
      Promise.all(Object.keys(streams).map((base) => streamReport(jsm, streamName(base)))).then((all) =>
        all.filter((s) => s !== undefined),
      ),
    ).pipe(Effect.withSpan("Nats.streamReports"))

    return {
      follow,
      streamExists,
      streamState,
      consumerProgress,
      readStored,
      readRange,
      streamReports,
    }
  })
