import { Objm, type ObjectStore as Bucket } from "@nats-io/obj"
import { StorageType } from "@nats-io/jetstream"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "./Config.ts"
import { withByteLimits } from "./Settings.ts"
import { NatsClient } from "./nats/Client.ts"

/**
 * Blobs in JetStream object store buckets, written once: a name is never written twice, so what a link named
 * stays what it was. Buckets keep objects for ever (no TTL) and carry the deployment's prefix in their name
 * (`<PREFIX>_<BUCKET>`, stream `OBJ_<PREFIX>_<BUCKET>`). A bucket of its table (`BucketTable`) stops at its
 * byte limit (`NATS_MAX_BYTES_<BUCKET>`, else the table's): a full bucket refuses new objects (JetStream's
 * `discard new` for object stores) and keeps the old.
 */
export interface ObjectStoreShape {
  /**
   * Stores `data` under `name` unless an object of that name exists already (then nothing is written): whether it
   * wrote.
   */
  readonly putOnce: (
    bucket: string,
    name: string,
    data: Uint8Array,
    description?: string,
  ) => Effect.Effect<boolean>
  /** The object's bytes, or undefined when there is none of that name. */
  readonly get: (bucket: string, name: string) => Effect.Effect<Uint8Array | undefined>
}

/** Buckets by base name, each with its byte limit unless `NATS_MAX_BYTES_<BUCKET>` sets another. */
export type Buckets = Readonly<Record<string, { readonly maxBytes: number }>>

/** The buckets the deployment's object store holds, each with the byte limit in force. */
export class BucketTable extends Context.Service<BucketTable, Buckets>()(
  "partner-service/platform/BucketTable",
) {
  /** `buckets` with their byte limits read from the settings. */
  static readonly layerOn = (buckets: Buckets) => Layer.effect(BucketTable, withByteLimits(buckets))
}

export class ObjectStore extends Context.Service<ObjectStore, ObjectStoreShape>()(
  "partner-service/platform/ObjectStore",
) {
  static readonly layer = Layer.effect(
    ObjectStore,
    Effect.gen(function* () {
      const { connection, jsm } = yield* NatsClient
      const config = yield* AppConfig
      const limits = yield* BucketTable
      const objm = new Objm(connection)
      const prefix = config.natsSubjectPrefix
      /** As stream names carry the prefix: `staging` makes `STAGING_POLICY_DOCUMENTS`. */
      const bucketName = (base: string) =>
        prefix === "" ? base : `${prefix.replace(/[^A-Za-z0-9]/g, "_").toUpperCase()}_${base}`
      const opened = new Map<string, Promise<Bucket>>()
      /** Creating a bucket that exists opens it; the promise is kept, so each bucket is set up once a process. */
      const bucketOf = (base: string) => {
        let bucket = opened.get(base)
        if (bucket === undefined) {
          const maxBytes = limits[base]?.maxBytes ?? -1
          const stream = `OBJ_${bucketName(base)}`
          // Opening an existing bucket leaves its stream as it is, so a changed limit is applied here.
          bucket = objm
            .create(bucketName(base), {
              storage: StorageType.File,
              replicas: config.natsStreamReplicas,
              max_bytes: maxBytes,
            })
            .then(async (opened) => {
              const info = await jsm.streams.info(stream)
              if (info.config.max_bytes !== maxBytes) {
                await jsm.streams.update(stream, { ...info.config, max_bytes: maxBytes })
              }
              return opened
            })
          bucket.catch(() => opened.delete(base))
          opened.set(base, bucket)
        }
        return Effect.promise(() => bucket)
      }
      return ObjectStore.of({
        putOnce: (base, name, data, description) =>
          Effect.gen(function* () {
            const bucket = yield* bucketOf(base)
            const existing = yield* Effect.promise(() => bucket.info(name))
            if (existing !== null && !existing.deleted) return false
            yield* Effect.promise(() =>
              bucket.putBlob({ name, ...(description === undefined ? {} : { description }) }, data),
            )
            return true
          }),
        get: (base, name) =>
          Effect.gen(function* () {
            const bucket = yield* bucketOf(base)
            const data = yield* Effect.promise(() => bucket.getBlob(name))
            return data ?? undefined
          }),
      })
    }),
  )
}
