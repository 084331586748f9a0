import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { CSRF_HEADER } from "../../backend/portal/Api.ts"
import { createOwner, gatewayPort, httpRequest } from "./Auth.ts"
import {
  api,
  createEndpoint,
  ownerEndpoints,
  query,
  webhookPartner,
  type WebhookPartner,
} from "./Webhooks.ts"

/** Requests to the partner portal's port as a developer's browser makes them: a session's cookie and CSRF token. */

export const ownerSessions = (slug: string) => `/partners/${slug}/webhooks/portal_sessions`
export const providerSessions = (name: string) => `/partners/providers/${name}/webhooks/portal_sessions`

export interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Headers
  readonly body: Record<string, unknown>
}

/** A portal session as a developer's browser holds it: the cookie, the CSRF token and the session's row id. */
export interface Session {
  readonly cookie: string
  readonly csrf: string
  readonly id: string
}

/** A request on the portal's port with the session's cookie; `csrf` is sent in the CSRF header unless null. */
export const call = (
  session: Session | undefined,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly csrf?: string | null } = {},
) =>
  Effect.gen(function* () {
    const csrf = options.csrf === undefined ? session?.csrf : options.csrf
    const answer = yield* httpRequest(yield* gatewayPort("portal"), path, {
      method,
      redirect: "manual",
      headers: {
        "content-type": "application/json",
        ...(session === undefined ? {} : { cookie: session.cookie }),
        ...(csrf === null || csrf === undefined ? {} : { [CSRF_HEADER]: csrf }),
      },
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
    })
    return {
      status: answer.status,
      text: answer.text,
      headers: answer.headers,
      body: answer.text === "" ? {} : (JSON.parse(answer.text) as Record<string, unknown>),
    } satisfies Answer
  })

/** Opens a portal session over the Partner API, exchanges its link and reads its CSRF token. */
export const openSession = (partner: WebhookPartner, path: string, request: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const made = yield* api(partner, "POST", path, request)
    assert.strictEqual(made.status, 201, made.text)
    const url = new URL(made.body!.url as string)
    const started = yield* httpRequest(yield* gatewayPort("portal"), `${url.pathname}${url.search}`, {
      redirect: "manual",
    })
    assert.strictEqual(started.status, 303, started.text)
    const cookie = started.headers.get("set-cookie")!.split(";")[0]!
    const shown = yield* call({ cookie, csrf: "", id: "" }, "GET", "/portal/api/session")
    assert.strictEqual(shown.status, 200, shown.text)
    // The session just exchanged is its holder's newest.
    const [row] = yield* query(
      (sql) => sql<Array<{ id: string }>>`
        select id::text from portal_sessions where exchanged_at is not null order by id desc limit 1`,
    )
    return { cookie, csrf: shown.body.csrf_token as string, id: row!.id } satisfies Session
  })

/** An owner with a partner granted it and an endpoint of its own. */
export const ownerWithEndpoint = (slug: string, events = ["policy.created", "prospect.ready"]) =>
  Effect.gen(function* () {
    yield* createOwner(slug)
    const partner = yield* webhookPartner({ owners: [slug] })
    const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
      name: `${slug} hook`,
      destination_url: `https://hooks.example.com/${slug}`,
      events,
    })
    return { partner, endpoint }
  })

export const decode = <S extends Schema.Top & Schema.Codec<unknown, unknown, never, never>>(
  schema: S,
  answer: Answer,
) => Schema.decodeUnknownSync(schema)(answer.body)

/** A delivery of `endpointId` in `status`, created `ageMs` ago, with `payload` when given. */
export const portalDelivery = (
  endpointId: number,
  options: {
    readonly status?: string
    readonly ageMs?: number
    readonly event?: string
    readonly ownerSlug?: string
    readonly payload?: unknown
  } = {},
) =>
  Effect.gen(function* () {
    const [row] = yield* query(
      (sql) => sql<Array<{ id: string }>>`
        insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status,
                                        last_attempt_failure_reason, created_at)
        values (${endpointId}, ${`evt-portal-${process.pid}-${Math.random().toString(36).slice(2)}`},
                ${options.event ?? "policy.created"}, ${options.ownerSlug ?? "acme"},
                ${Buffer.from(JSON.stringify(options.payload ?? { event: options.event ?? "policy.created" }))},
                ${options.status ?? "failed"},
                ${(options.status ?? "failed") === "failed" ? "Destination answered 500" : null},
                now() - make_interval(secs => ${(options.ageMs ?? 0) / 1000}))
        returning id`,
    )
    return Number(row!.id)
  })
