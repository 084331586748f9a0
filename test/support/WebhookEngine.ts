import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto"
import { fileURLToPath } from "node:url"
import { Effect, Layer, References } from "effect"
import { appLayer } from "../../backend/App.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { Db, type Sql } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { EventCatalog, type EventName, type Payload } from "../../backend/events/Catalog.ts"
import { encodeEnvelope, EVENT_PROPERTY_HEADER, makeEnvelope } from "../../backend/events/Envelope.ts"
import type { AttemptRow } from "../../backend/webhooks/endpoints/Repo.ts"
import { spawnProcess } from "./ChildProcess.ts"
import { startReceiver, testCa } from "./Receiver.ts"
import { eventually } from "./Streams.ts"
import { isolatedEnv, isolationLayer } from "./TestPlatform.ts"

/**
 * The delivery engine under test: subscribers, secrets and endpoints written with SQL as the management side
 * writes them (secrets sealed with the Crypto service), events published to `EVENTS` as their producers will,
 * and the records read back.
 */

/** An isolated env whose workers trust the test receiver's CA, with a fast backoff unit. */
export const engineEnv = (overrides: Record<string, string> = {}) =>
  isolatedEnv({
    ROLES: "workers",
    WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
    WEBHOOK_BACKOFF_UNIT_MS: "5",
    WEBHOOK_TIMEOUT_MS: "2000",
    ...overrides,
  })

/** The service (every layer of `ROLES`, workers by default) in the test process, plus Crypto for fixtures. */
export const engineService = (overrides: Record<string, string> = {}) => {
  const env = engineEnv(overrides)
  const layer = Crypto.layer.pipe(
    Layer.provideMerge(Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer))),
    Layer.provideMerge(isolationLayer(env)),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  )
  return { env, layer }
}

/** Only the platform (database, streams) and Crypto: for tests whose workers run in processes of their own. */
export const enginePlatform = (overrides: Record<string, string> = {}) => {
  const env = engineEnv(overrides)
  const layer = Crypto.layer.pipe(
    Layer.provideMerge(PlatformLayer),
    Layer.provideMerge(isolationLayer(env)),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  )
  return { env, layer }
}

export const query = <A>(run: (sql: Sql) => Promise<A>) =>
  Effect.flatMap(Effect.service(Db), (db) => db.query(run))

export const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`

/** An owner row with `slug`. */
export const owner = (slug: string) =>
  query((sql) => sql`insert into owners (slug, name) values (${slug}, ${`Owner ${slug}`}) returning id`).pipe(
    Effect.map(([row]) => ({ slug, id: String(row!.id) })),
  )

/** A property of an owner, for provider coverage by property; its service id. */
export const property = (ownerId: string, externalId: string) =>
  query(
    (sql) => sql`
      insert into properties (owner_id, external_system_id, building_name, street_key, street, city, state, zip,
                              pms_type, pms_property_id)
      values (${ownerId}, ${externalId}, 'Tower', '1 MAIN ST', '1 Main St', 'Springfield', 'IL', '62701', 'yardi',
              ${`pms-${externalId}`})
      returning id`,
  ).pipe(Effect.map(([row]) => String(row!.id)))

/** Seals `secret` as the management side does and stores it for the subscriber. */
export const addSecret = (subscriberId: string, secret: string = newSecret()) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const sealed = yield* crypto.seal(Buffer.from(secret, "utf8"))
    yield* query(
      (sql) =>
        sql`insert into webhook_secrets (subscriber_id, secret_sealed) values (${subscriberId}, ${sealed})`,
    )
    return secret
  })

export interface Subscriber {
  readonly id: string
  readonly secret: string
}

/** The subscriber of an owner (by id) or a provider, with one signing secret. */
export const subscriber = (
  of: { readonly ownerId: string } | { readonly providerId: string },
  customHeaders: Record<string, unknown> = {},
) =>
  Effect.gen(function* () {
    const [row] = yield* query(
      (sql) => sql`
        insert into webhook_subscribers (owner_id, provider_id, custom_headers)
        values (${"ownerId" in of ? of.ownerId : null}, ${"providerId" in of ? of.providerId : null},
                ${sql.json(customHeaders as never)})
        returning id`,
    )
    const id = String(row!.id)
    return { id, secret: yield* addSecret(id) } satisfies Subscriber
  })

/** A provider covering the given owners (ids) and properties (ids). */
export const provider = (
  name: string,
  cover: { readonly owners?: ReadonlyArray<string>; readonly properties?: ReadonlyArray<string> },
) =>
  Effect.gen(function* () {
    const [row] = yield* query((sql) => sql`insert into providers (name) values (${name}) returning id`)
    const id = String(row!.id)
    for (const ownerId of cover.owners ?? []) {
      yield* query(
        (sql) => sql`insert into provider_owners (provider_id, owner_id) values (${id}, ${ownerId})`,
      )
    }
    for (const propertyId of cover.properties ?? []) {
      yield* query(
        (sql) =>
          sql`insert into provider_properties (provider_id, property_id) values (${id}, ${propertyId})`,
      )
    }
    return id
  })

export const endpoint = (
  subscriberId: string,
  url: string,
  events: ReadonlyArray<string>,
  status: "active" | "suspended" | "disabled" = "active",
) =>
  query(
    (sql) => sql`
      insert into webhook_endpoints (subscriber_id, name, destination_url, events, status)
      values (${subscriberId}, 'test endpoint', ${url}, ${events as Array<string>}, ${status})
      returning id`,
  ).pipe(Effect.map(([row]) => Number(row!.id)))

/** A receiver, and an owner whose subscriber has one active endpoint on `path` of it subscribed to `events`. */
export const receiverEndpoint = (slug: string, path: string, events: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const receiver = yield* startReceiver
    const ownerRow = yield* owner(slug)
    const sub = yield* subscriber({ ownerId: ownerRow.id })
    const id = yield* endpoint(sub.id, receiver.url(path), events)
    return { receiver, owner: ownerRow, subscriber: sub, endpointId: id }
  })

export interface PublishedEvent {
  readonly eventId: string
  readonly body: string
  /** Its sequence in `EVENTS`. */
  readonly seq: number
}

/**
 * Publishes an event to `EVENTS` as its producer will: `events.<owner_slug>.<event>`, the encoded envelope as
 * the body, a fresh event id as `Nats-Msg-Id`, and the property's service id in a header when given.
 */
export const publishEvent = <E extends EventName>(
  event: E,
  ownerSlug: string,
  payload: Payload<E>,
  options: { readonly propertyId?: string; readonly eventId?: string } = {},
) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const encoded = yield* encodeEnvelope(makeEnvelope(event, ownerSlug, payload)).pipe(Effect.orDie)
    const body = JSON.stringify(encoded)
    const eventId = options.eventId ?? randomUUID()
    const ack = yield* nats.publish(nats.subject(`events.${ownerSlug}.${event}`), Buffer.from(body), {
      msgID: eventId,
      ...(options.propertyId ? { headers: { [EVENT_PROPERTY_HEADER]: options.propertyId } } : {}),
    })
    return { eventId, body, seq: ack.seq } satisfies PublishedEvent
  })

/** A valid payload of every event: the catalog's own examples. */
export const examplePayload = <E extends EventName>(event: E): Payload<E> =>
  EventCatalog[event].example as Payload<E>

export interface DeliveryRow {
  readonly id: string
  readonly endpoint_id: string
  readonly event_id: string
  readonly event: string
  readonly status: string
  readonly series: number
  readonly attempt_number: number
  readonly next_retry_at: Date | null
  readonly last_attempted_at: Date | null
  readonly duration_ms: number | null
  readonly last_attempt_failure_reason: string | null
  readonly delivered_at: Date | null
  readonly payload: Buffer
}

export const deliveriesOf = (endpointId: number) =>
  query(
    (sql) => sql<Array<DeliveryRow>>`
      select id, endpoint_id, event_id, event, status, series, attempt_number, next_retry_at, last_attempted_at,
             duration_ms, last_attempt_failure_reason, delivered_at, payload
      from webhook_deliveries where endpoint_id = ${endpointId} order by id`,
  ).pipe(Effect.map((rows): ReadonlyArray<DeliveryRow> => [...rows]))

export const attemptsOf = (deliveryId: string) =>
  query(
    (sql) => sql<Array<AttemptRow>>`
      select series, attempt_number, started_at, status_code, duration_ms, failure_reason, response_body
      from webhook_attempts where delivery_id = ${deliveryId} order by series, attempt_number`,
  ).pipe(Effect.map((rows): ReadonlyArray<AttemptRow> => [...rows]))

/** Waits until the endpoint's deliveries satisfy `check`. */
export const awaitDeliveries = (endpointId: number, check: (rows: ReadonlyArray<DeliveryRow>) => boolean) =>
  eventually(deliveriesOf(endpointId), check)

/** A receiver's check of `X-Webhook-Signature`: which of `secrets` verify over the raw body, in header order. */
export const verifySignature = (
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  secrets: ReadonlyArray<string>,
) => {
  const header = headers["x-webhook-signature"] ?? ""
  const parts = header.split(",").map((p) => p.split("="))
  const t = parts.find(([k]) => k === "t")?.[1] ?? ""
  const v1 = parts.filter(([k]) => k === "v1").map(([, v]) => v ?? "")
  const expected = (secret: string) =>
    createHmac("sha256", secret)
      .update(Buffer.concat([Buffer.from(`${t}.`), body]))
      .digest("hex")
  return {
    timestamp: t,
    signatures: v1,
    verifiedBy: secrets.filter((secret) =>
      v1.some((sig) => sig.length === 64 && timingSafeEqual(Buffer.from(sig), Buffer.from(expected(secret)))),
    ),
  }
}

const root = fileURLToPath(new URL("../..", import.meta.url))

/** A service process (`backend/main.ts`) with only the workers role, once it has logged that it started. */
export const workerProcess = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const child = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
      cwd: root,
      env: { ...env, ROLES: "workers", LOG_LEVEL: "info" },
    })
    yield* child.waitFor("stdout", /started/)
    return child
  })

/** Two processes (at least) pull the router's and the delivery actor's consumers. */
export const bothPulling = Effect.gen(function* () {
  const nats = yield* Nats
  const client = yield* NatsClient
  const waiting = (stream: "EVENTS" | "WEBHOOKS", name: string) =>
    Effect.promise(() =>
      client.jsm.consumers.info(nats.streamName(stream), name).then(
        (info) => info.num_waiting,
        () => 0,
      ),
    )
  yield* eventually(
    Effect.all([waiting("EVENTS", "webhook_router_p0"), waiting("WEBHOOKS", "webhook_delivery_p0")]),
    (counts) => counts.every((n) => n >= 2),
  )
})
