import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "./Config.ts"
import { Db, ensureDatabase } from "./Db.ts"
import { Nats, StreamTable, type Streams } from "./Nats.ts"
import { BucketTable, type Buckets, ObjectStore } from "./ObjectStore.ts"
import { Outbox } from "./Outbox.ts"

const EnsureDatabase = Layer.effectDiscard(
  Effect.gen(function* () {
    const created = yield* ensureDatabase(Redacted.value((yield* AppConfig).databaseUrl))
    if (created) yield* Effect.logInfo("database created")
  }),
)

const Prepare = Layer.effectDiscard(
  Effect.gen(function* () {
    const applied = yield* (yield* Db).migrate
    if (applied.length > 0) yield* Effect.logInfo("migrations applied").pipe(Effect.annotateLogs({ applied }))
    yield* (yield* Nats).ensureStreams
  }),
)

/**
 * Postgres (database created and migrated), NATS (`streams` provisioned) and its object store (`buckets`), their
 * byte limits read from the settings, plus the outbox writer. The service's own is `PlatformLayer` of `backend/Infrastructure.ts`, on the
 * contract's streams.
 */
export const platformLayer = (streams: Streams, buckets: Buckets = {}) =>
  Outbox.layer.pipe(
    Layer.provideMerge(Prepare),
    Layer.provideMerge(ObjectStore.layer),
    Layer.provideMerge(Layer.mergeAll(Db.layer.pipe(Layer.provide(EnsureDatabase)), Nats.layer)),
    // Read first, so an invalid byte limit stops the start before the database is created.
    Layer.provide(Layer.mergeAll(StreamTable.layerOn(streams), BucketTable.layerOn(buckets))),
  )
