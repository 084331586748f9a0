import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream"
import { Duration, Effect } from "effect"
import { AppConfig } from "../Config.ts"
import { NatsClient } from "./Client.ts"
import { isNotFound } from "./Reports.ts"
import { type StreamBase, StreamTable } from "./StreamTable.ts"
import type { DurableConsumer } from "./Types.ts"

const nanos = (d: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d)) * 1_000_000
const STREAM_MAX_AGE = nanos("7 days")
const DUPLICATE_WINDOW = nanos("2 minutes")

/** How `Nats` names a stream and its subjects, with the deployment's prefix. */
export interface StreamNaming {
  readonly subject: (name: string) => string
  readonly streamName: (base: StreamBase) => string
  readonly streamSubjects: (base: StreamBase) => string
}

const streamConfig = (
  name: string,
  subjects: Array<string>,
  replicas: number,
  maxBytes: number,
  discard: DiscardPolicy,
): Partial<StreamConfig> & { name: string } => ({
  name,
  subjects,
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  discard,
  max_age: STREAM_MAX_AGE,
  max_bytes: maxBytes,
  duplicate_window: DUPLICATE_WINDOW,
  num_replicas: replicas,
})

const differs = (want: Partial<StreamConfig>, have: StreamConfig) =>
  JSON.stringify(want.subjects) !== JSON.stringify(have.subjects) ||
  want.max_age !== have.max_age ||
  want.max_bytes !== have.max_bytes ||
  want.duplicate_window !== have.duplicate_window ||
  want.discard !== have.discard ||
  want.num_replicas !== have.num_replicas

/** The streams of the table and the durable consumers, created or brought to what is asked of them. */
export const makeProvisioning = ({ subject, streamName, streamSubjects }: StreamNaming) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const streams = yield* StreamTable
    const { jsm } = yield* NatsClient

    const ensureStream = Effect.fn("Nats.ensureStream")(function* (base: StreamBase) {
      const want = streamConfig(
        streamName(base),
        [subject(streamSubjects(base))],
        config.natsStreamReplicas,
        streams[base]?.maxBytes ?? -1,
        streams[base]?.discard === "old" ? DiscardPolicy.Old : DiscardPolicy.New,
      )
      const have = yield* Effect.promise(() =>
        jsm.streams
          .info(want.name)
          .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error))),
      )
      if (have === undefined) {
        yield* Effect.promise(() => jsm.streams.add(want))
        yield* Effect.logInfo("stream created").pipe(Effect.annotateLogs({ stream: want.name }))
      } else if (differs(want, have.config)) {
        yield* Effect.promise(() => jsm.streams.update(want.name, { ...have.config, ...want }))
        yield* Effect.logInfo("stream updated").pipe(Effect.annotateLogs({ stream: want.name }))
      }
    })

    const ensureConsumer = Effect.fn("Nats.ensureConsumer")(function* (consumer: DurableConsumer) {
      const want = {
        durable_name: consumer.name,
        // Left out when empty: nats.js would put an empty token in the create request's subject.
        ...(consumer.filterSubject === "" ? {} : { filter_subject: consumer.filterSubject }),
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(consumer.ackWait),
        max_ack_pending: consumer.maxAckPending,
        max_deliver: -1,
      }
      const have = yield* Effect.promise(() =>
        jsm.consumers
          .info(consumer.stream, consumer.name)
          .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error))),
      )
      if (have === undefined) {
        yield* Effect.promise(() => jsm.consumers.add(consumer.stream, want))
        return
      }
      // A consumer made with a filter keeps it: nats.js cannot send an update that clears one (an empty filter
      // ends up as an empty token of the request's subject, which the server does not answer as an update).
      const filter =
        consumer.filterSubject === "" ? (have.config.filter_subject ?? "") : consumer.filterSubject
      if (
        (have.config.filter_subject ?? "") !== filter ||
        have.config.ack_wait !== want.ack_wait ||
        have.config.max_ack_pending !== want.max_ack_pending
      ) {
        const { ack_policy: _a, deliver_policy: _d, durable_name: _n, ...mutable } = want
        yield* Effect.promise(() =>
          jsm.consumers.update(consumer.stream, consumer.name, {
            ...mutable,
            ...(filter === "" ? {} : { filter_subject: filter }),
          }),
        )
      }
    })

    return {
      ensureStreams: Effect.forEach(Object.keys(streams), ensureStream, { discard: true }),
      ensureConsumer,
    }
  })
