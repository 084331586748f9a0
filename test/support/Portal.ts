import { assert } from "@effect/vitest"
import { Effect } from "effect"
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

/** Helpers of the portal's tests: sessions opened over the Partner API, and calls on the portal's port. */

export const ownerSessions = (slug: string) => `/partners/${slug}/webhooks/portal_sessions`

export interface PortalAnswer {
  readonly status: number
  readonly text: string
  readonly body: Record<string, unknown>
}

/** A portal session's cookie header and the CSRF token its changes carry. */
export interface PortalCaller {
  readonly cookie: string
  readonly csrf: string
}

/** A call on the portal's port as `caller` (its CSRF token sent on anything but a GET). */
export const portalCall = (caller: PortalCaller | undefined, method: string, path: string, body?: unknown) =>
  Effect.gen(function* () {
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (caller !== undefined) {
      headers.cookie = caller.cookie
      if (method !== "GET") headers[CSRF_HEADER] = caller.csrf
    }
    const answer = yield* httpRequest(yield* gatewayPort("portal"), path, {
      method,
      redirect: "manual",
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return {
      status: answer.status,
      text: answer.text,
      body: (answer.text === "" ? {} : JSON.parse(answer.text)) as Record<string, unknown>,
    } satisfies PortalAnswer
  })

/** Opens a portal session over the Partner API (`options` its body), exchanges its link and reads its token. */
export const openPortal = (partner: WebhookPartner, path: string, options: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const made = yield* api(partner, "POST", path, options)
    assert.strictEqual(made.status, 201, made.text)
    const url = new URL(made.body!.url as string)
    const started = yield* httpRequest(yield* gatewayPort("portal"), `${url.pathname}${url.search}`, {
      redirect: "manual",
    })
    assert.strictEqual(started.status, 303, started.text)
    const cookie = started.headers.get("set-cookie")!.split(";")[0]!
    const session = yield* portalCall({ cookie, csrf: "" }, "GET", "/portal/api/session")
    assert.strictEqual(session.status, 200, session.text)
    return { cookie, csrf: session.body.csrf_token as string } satisfies PortalCaller
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
