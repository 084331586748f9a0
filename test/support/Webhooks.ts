import { Effect } from "effect"
import { Db, type Sql } from "../../backend/platform/Db.ts"
import type { DeliveryStatus } from "../../backend/webhooks/Domain.ts"
import type { ProviderCoverage } from "../../backend/webhooks/endpoints/Providers.ts"
import { Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import { authService, createClient, createOwner, gatewayPort, httpRequest, obtainToken } from "./Auth.ts"

/** The partner gateway (no workers: nothing attempts the deliveries a test writes) on an isolated database. */
export const webhookService = () => authService()

export interface WebhookPartner {
  readonly clientId: string
  readonly token: string
}

export const query = <A>(run: (sql: Sql) => Promise<A>) =>
  Effect.flatMap(Effect.service(Db), (db) => db.query(run))

/** A partner client with `webhooks:manage` (or `scopes`), granted `owners` and acting for `provider`. */
export const webhookPartner = (
  options: {
    readonly owners?: ReadonlyArray<string>
    readonly provider?: string
    readonly scopes?: ReadonlyArray<string>
  } = {},
) =>
  Effect.gen(function* () {
    const client = yield* createClient({
      gateway: "partner",
      scopes: options.scopes ?? ["webhooks:manage"],
      owners: options.owners ?? [],
      ...(options.provider === undefined ? {} : { provider: options.provider }),
    })
    return {
      clientId: client.clientId,
      token: yield* obtainToken("partner", client),
    } satisfies WebhookPartner
  })

/** A new owner row and a partner granted it. */
export const ownerWithPartner = (slug: string) =>
  Effect.gen(function* () {
    yield* createOwner(slug)
    return yield* webhookPartner({ owners: [slug] })
  })

/** Provisions a provider as the operator's `providers create` does. */
export const provisionProvider = (name: string, coverage: ProviderCoverage) =>
  Secrets.use((secrets) => secrets.provisionProvider(name, coverage, "test")).pipe(
    Effect.provide(Secrets.layer),
    Effect.orDie,
  )

export interface ApiAnswer {
  readonly status: number
  readonly text: string
  /** The parsed body; undefined when there was none. */
  readonly body: Record<string, unknown> | undefined
}

/** One request to the partner gateway with the partner's token; `body` is sent as JSON unless it is a string. */
export const api = (partner: WebhookPartner, method: string, path: string, body?: unknown) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("partner-api"), path, {
      method,
      headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    })
    return {
      status: answer.status,
      text: answer.text,
      body: answer.text === "" ? undefined : (JSON.parse(answer.text) as Record<string, unknown>),
    } satisfies ApiAnswer
  })

export interface EndpointBody {
  readonly id: number
  readonly name: string
  readonly destination_url: string
  readonly status: string
  readonly events: ReadonlyArray<string>
  readonly suspension_reason: string | null
  readonly created_at: string
  readonly updated_at: string
}

export const ownerEndpoints = (slug: string) => `/partners/${slug}/webhooks/endpoints`
export const providerEndpoints = (name: string) => `/partners/providers/${name}/webhooks/endpoints`

export const ENDPOINT = {
  name: "Main",
  destination_url: "https://hooks.example.com/partner",
  events: ["prospect.ready", "policy.created"],
}

/** Registers an endpoint at `base` (owner or provider path); dies unless it was created. */
export const createEndpoint = (
  partner: WebhookPartner,
  base: string,
  endpoint: Record<string, unknown> = ENDPOINT,
) =>
  Effect.gen(function* () {
    const answer = yield* api(partner, "POST", base, { endpoint })
    if (answer.status !== 200)
      return yield* Effect.die(new Error(`create answered ${answer.status}: ${answer.text}`))
    return answer.body!.endpoint as EndpointBody
  })

export const ENVELOPE = {
  event: "policy.created",
  property_owner_slug: "acme",
  data: { insurance_policy: { id: "policy_1", policy_number: "SDI-1", status: "active" } },
}

let events = 0

/** A delivery row written as the router writes one (pending, attempt 1, series 1) unless `fields` say otherwise. */
export const insertDelivery = (
  endpointId: number,
  fields: {
    /** As stored: `delivering` is a `lease_until` still to come. */
    readonly status?: Exclude<DeliveryStatus, "delivering">
    readonly lease_until?: Date | null
    readonly payload?: unknown
    readonly attempt_number?: number
    readonly next_retry_at?: Date | null
    readonly last_attempt_failure_reason?: string | null
    readonly delivered_at?: Date | null
  } = {},
) =>
  query(
    (sql) => sql<Array<{ id: string }>>`
      insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, attempt_number,
                                      next_retry_at, last_attempt_failure_reason, delivered_at, lease_until)
      values (${endpointId}, ${`evt-${process.pid}-${++events}`}, 'policy.created', 'acme',
              ${Buffer.from(JSON.stringify(fields.payload ?? ENVELOPE))}, ${fields.status ?? "pending"},
              ${fields.attempt_number ?? 1}, ${fields.next_retry_at ?? null},
              ${fields.last_attempt_failure_reason ?? null}, ${fields.delivered_at ?? null},
              ${fields.lease_until ?? null})
      returning id`,
  ).pipe(Effect.map(([row]) => Number(row!.id)))

export interface DeliveryRowState {
  readonly status: string
  readonly series: number
  readonly attempt_number: number
  readonly next_retry_at: Date | null
  readonly last_attempt_failure_reason: string | null
  readonly lease_until: Date | null
}

export const deliveryRow = (id: number) =>
  query(
    (sql) => sql<Array<DeliveryRowState>>`
      select status, series, attempt_number, next_retry_at, last_attempt_failure_reason, lease_until
      from webhook_deliveries where id = ${id}`,
  ).pipe(Effect.map(([row]) => row!))
