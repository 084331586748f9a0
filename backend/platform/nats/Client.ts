import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection, type Status } from "@nats-io/transport-node"
import { Context, Effect, identity, Layer, Stream } from "effect"
import { AppConfig } from "../Config.ts"
import { recountsPendingPerDelivery } from "./ServerVersion.ts"

export interface NatsClientShape {
  readonly connection: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
}

/**
 * The nats.js connection and JetStream clients, for the platform's `Nats` service and for tests that inspect
 * streams and consumers. Contexts use `Nats`; lint keeps this folder's imports inside `platform/`.
 */
export class NatsClient extends Context.Service<NatsClient, NatsClientShape>()(
  "partner-service/platform/nats/NatsClient",
) {
  static readonly layer = Layer.effect(
    NatsClient,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const servers = config.natsUrl.split(",").map((s) => s.trim())
      const connection = yield* Effect.acquireRelease(
        Effect.promise(() =>
          connect({
            servers,
            name: "partner-service",
            maxReconnectAttempts: -1,
            // No stack captured for every request's error objects: they cost more than the publish itself.
            noAsyncTraces: true,
            reconnectTimeWait: 1000,
            pingInterval: 10_000,
          }),
        ),
        (nc) =>
          Effect.promise(() => nc.drain()).pipe(
            Effect.timeout("5 seconds"),
            Effect.catchCause(() => Effect.promise(() => nc.close())),
          ),
      )
      const version = connection.info?.version ?? "unknown"
      yield* Effect.logInfo("nats connected").pipe(
        Effect.annotateLogs({ server: connection.getServer(), version }),
      )
      // Info, not a warning: every CLI command connects too, and would print it.
      if (recountsPendingPerDelivery(version)) {
        yield* Effect.logInfo(
          "this nats-server recounts a consumer's pending messages on every delivery after a consumer info call " +
            "(fixed in 2.9.15): draining a backlog after a restart can be several times slower",
        ).pipe(Effect.annotateLogs({ version }))
      }
      yield* watchStatus(connection)
      const js = jetstream(connection)
      const jsm = yield* Effect.promise(() => jetstreamManager(connection))
      return NatsClient.of({ connection, js, jsm })
    }),
  )
}

/** Logs connection loss and recovery for as long as the layer lives. */
const watchStatus = (connection: NatsConnection) =>
  Stream.fromAsyncIterable(connection.status(), identity).pipe(
    Stream.runForEach((status: Status) =>
      status.type === "disconnect"
        ? Effect.logWarning("nats connection lost").pipe(Effect.annotateLogs({ server: status.server }))
        : status.type === "reconnect"
          ? Effect.logInfo("nats connection recovered").pipe(Effect.annotateLogs({ server: status.server }))
          : status.type === "error"
            ? Effect.logError("nats error").pipe(Effect.annotateLogs({ error: String(status.error) }))
            : Effect.void,
    ),
    Effect.orDie,
    Effect.forkScoped,
  )
