import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "./Config.ts"
import { Db, ensureDatabase } from "./Db.ts"
import { Nats, type Streams } from "./Nats.ts"
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
 * Postgres (database created and migrated) and NATS (`streams` provisioned), plus the outbox writer. The
 * service's own is `PlatformLayer` of `backend/Infrastructure.ts`, on the contract's streams.
 */
export const platformLayer = (streams: Streams) =>
  Outbox.layer.pipe(
    Layer.provideMerge(Prepare),
    Layer.provideMerge(Layer.mergeAll(Db.layer.pipe(Layer.provide(EnsureDatabase)), Nats.layerOn(streams))),
  )
