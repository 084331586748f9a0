import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import {
  DeliveryDetailAnswer,
  DeliveryPage,
  EndpointHealthAnswer,
  EndpointsAnswer,
  EventsAnswer,
  RESPONSE_EXCERPT_BYTES,
} from "../../backend/portal/Api.ts"
import { EventNames } from "../../backend/events/Catalog.ts"
import { BUCKET_MS, LATENCY_SLOTS, latencySlot } from "../../backend/webhooks/delivery/HealthBuckets.ts"
import { authEnv, authService, createOwner, gatewayPort, httpRequest } from "../support/Auth.ts"
import {
  api,
  createEndpoint,
  insertDelivery,
  ownerEndpoints,
  provisionProvider,
  providerEndpoints,
  query,
  webhookPartner,
  type WebhookPartner,
} from "../support/Webhooks.ts"

const env = authEnv({ ROLES: "partner-api,portal", PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.test" })
const service = authService({ env })

const ownerSessions = (slug: string) => `/partners/${slug}/webhooks/portal_sessions`
const providerSessions = (name: string) => `/partners/providers/${name}/webhooks/portal_sessions`

interface Answer {
  readonly status: number
  readonly text: string
  readonly body: Record<string, unknown>
}

/** A GET on the portal's port, with the session's cookie when given. */
const portal = (path: string, cookie?: string) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("portal"), path, {
      redirect: "manual",
      ...(cookie === undefined ? {} : { headers: { cookie } }),
    })
    return {
      status: answer.status,
      text: answer.text,
      body: JSON.parse(answer.text) as Record<string, unknown>,
    } satisfies Answer
  })

/** Opens a portal session over the Partner API and exchanges its link: the cookie header. */
const openSession = (partner: WebhookPartner, path: string) =>
  Effect.gen(function* () {
    const made = yield* api(partner, "POST", path, {})
    assert.strictEqual(made.status, 201, made.text)
    const url = new URL(made.body!.url as string)
    const started = yield* httpRequest(yield* gatewayPort("portal"), `${url.pathname}${url.search}`, {
      redirect: "manual",
    })
    assert.strictEqual(started.status, 303, started.text)
    return started.headers.get("set-cookie")!.split(";")[0]!
  })

/** An owner with a partner granted it and an endpoint of its own. */
const ownerWithEndpoint = (slug: string, events = ["policy.created", "prospect.ready"]) =>
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

/** A delivery of `endpointId` for `event`, created `ageMs` ago. */
const delivery = (endpointId: number, event = "policy.created", ageMs = 0, ownerSlug = "acme") =>
  Effect.gen(function* () {
    const id = yield* insertDelivery(endpointId)
    yield* query(
      (sql) => sql`
        update webhook_deliveries set event = ${event}, owner_slug = ${ownerSlug},
          created_at = now() - make_interval(secs => ${ageMs / 1000})
        where id = ${id}`,
    )
    return id
  })

const decode = <S extends Schema.Top & Schema.Codec<unknown, unknown, never, never>>(
  schema: S,
  answer: Answer,
) => Schema.decodeUnknownSync(schema)(answer.body)

const ids = (answer: Answer) => decode(DeliveryPage, answer).deliveries.map((d) => d.id)

const errorFields = (answer: Answer) => Object.keys(answer.body.errors as object)

describe("portal reads", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("an owner's session lists its own endpoints and deliveries only", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("reads-a")
        const b = yield* ownerWithEndpoint("reads-b")
        const gone = yield* createEndpoint(a.partner, ownerEndpoints("reads-a"), {
          name: "Gone",
          destination_url: "https://hooks.example.com/gone",
          events: ["policy.created"],
        })
        const removed = yield* api(a.partner, "DELETE", `${ownerEndpoints("reads-a")}/${gone.id}`)
        assert.strictEqual(removed.status, 204, removed.text)
        const mineOld = yield* delivery(a.endpoint.id, "policy.created", 60_000)
        const mineNew = yield* delivery(a.endpoint.id, "prospect.ready", 1000)
        const ofGone = yield* delivery(gone.id, "policy.created", 30_000)
        const theirs = yield* delivery(b.endpoint.id)
        // Two of the last hour's attempts, one of them failed.
        const bucket = Array.from({ length: LATENCY_SLOTS }, (_, i) => (i === latencySlot(120) ? 2 : 0))
        yield* query(
          (sql) => sql`
            insert into webhook_endpoint_health (endpoint_id, bucket_start, attempts, succeeded, failed, latency)
            values (${a.endpoint.id}, ${new Date(Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS)}, 2, 1, 1,
                    ${bucket}::int[])`,
        )
        const cookie = yield* openSession(a.partner, ownerSessions("reads-a"))

        const endpoints = yield* portal("/portal/api/endpoints", cookie)
        assert.strictEqual(endpoints.status, 200, endpoints.text)
        const listed = decode(EndpointsAnswer, endpoints).endpoints
        assert.deepStrictEqual(
          listed.map((e) => e.id),
          [a.endpoint.id],
          "B's endpoint and the deleted one are not listed",
        )
        assert.deepInclude(listed[0]!, {
          name: "reads-a hook",
          destination_url: "https://hooks.example.com/reads-a",
          status: "active",
        })
        assert.sameMembers([...listed[0]!.events], ["policy.created", "prospect.ready"])
        assert.deepInclude(listed[0]!.last_hour, { attempts: 2, succeeded: 1, failed: 1, success_rate: 0.5 })
        const health = yield* portal(`/portal/api/endpoints/${a.endpoint.id}/health`, cookie)
        assert.strictEqual(health.status, 200, health.text)
        const { hour, day } = decode(EndpointHealthAnswer, health).health
        assert.deepInclude(hour, { attempts: 2, succeeded: 1, failed: 1, success_rate: 0.5 })
        assert.strictEqual(hour.buckets.length, 12, "the last hour's 12 buckets, as the console charts them")
        assert.strictEqual(day.buckets.length, 24)
        for (const other of [b.endpoint.id, gone.id]) {
          const refused = yield* portal(`/portal/api/endpoints/${other}/health`, cookie)
          assert.strictEqual(
            refused.status,
            404,
            `another owner's or a deleted endpoint's health: ${refused.text}`,
          )
        }
        assert.isNumber(listed[0]!.last_hour.p95_ms)

        const page = yield* portal("/portal/api/deliveries", cookie)
        assert.strictEqual(page.status, 200, page.text)
        assert.deepStrictEqual(ids(page), [mineNew, ofGone, mineOld], "newest first, none of B's")
        assert.notInclude(ids(page), theirs)

        const otherEndpoint = yield* portal(`/portal/api/deliveries?endpoint=${b.endpoint.id}`, cookie)
        assert.strictEqual(otherEndpoint.status, 422, otherEndpoint.text)
        assert.deepStrictEqual(otherEndpoint.body.errors, { endpoint: ["must be one of your endpoints"] })
        assert.strictEqual(otherEndpoint.body.status_code, 422)

        const otherDetail = yield* portal(`/portal/api/deliveries/${theirs}`, cookie)
        const unknownDetail = yield* portal("/portal/api/deliveries/999999999", cookie)
        assert.strictEqual(otherDetail.status, 404, otherDetail.text)
        assert.deepStrictEqual(
          otherDetail.body,
          unknownDetail.body,
          "another's delivery answers as an unknown one",
        )
        assert.strictEqual((yield* portal("/portal/api/deliveries/abc", cookie)).status, 404)

        const searchTheirs = yield* portal(`/portal/api/deliveries?q=${theirs}`, cookie)
        assert.strictEqual(searchTheirs.status, 200, searchTheirs.text)
        assert.deepStrictEqual(ids(searchTheirs), [])
        const searchMine = yield* portal(`/portal/api/deliveries?q=${mineOld}`, cookie)
        assert.deepStrictEqual(ids(searchMine), [mineOld])

        const events = yield* portal("/portal/api/events", cookie)
        assert.strictEqual(events.status, 200, events.text)
        const catalog = decode(EventsAnswer, events).events
        assert.deepStrictEqual(
          catalog.map((e) => e.name),
          [...EventNames],
        )
        const created = catalog.find((e) => e.name === "policy.created")!
        assert.strictEqual(created.emitted_when, "a policy is issued")
        assert.isAbove(created.description.length, 0)
        assert.deepInclude(created.example as object, {
          event: "policy.created",
          property_owner_slug: "reads-a",
        })
      }),
    )

    it.effect("a provider's session sees only its endpoints' deliveries", () =>
      Effect.gen(function* () {
        const owner = yield* ownerWithEndpoint("reads-covered")
        yield* provisionProvider("reads-co", { owners: ["reads-covered"] })
        const partner = yield* webhookPartner({ provider: "reads-co" })
        const ofProvider = yield* createEndpoint(partner, providerEndpoints("reads-co"), {
          name: "Provider hook",
          destination_url: "https://hooks.example.com/provider",
          events: ["policy.created"],
        })
        const providerDelivery = yield* delivery(ofProvider.id, "policy.created", 0, "reads-covered")
        const ownerDelivery = yield* delivery(owner.endpoint.id, "policy.created", 0, "reads-covered")
        const cookie = yield* openSession(partner, providerSessions("reads-co"))

        const endpoints = decode(EndpointsAnswer, yield* portal("/portal/api/endpoints", cookie)).endpoints
        assert.deepStrictEqual(
          endpoints.map((e) => e.id),
          [ofProvider.id],
        )
        assert.deepInclude(endpoints[0]!.last_hour, { attempts: 0, success_rate: null, p95_ms: null })
        const page = yield* portal("/portal/api/deliveries", cookie)
        assert.deepStrictEqual(ids(page), [providerDelivery])
        assert.strictEqual(decode(DeliveryPage, page).deliveries[0]!.owner_slug, "reads-covered")
        assert.strictEqual((yield* portal(`/portal/api/deliveries/${ownerDelivery}`, cookie)).status, 404)
        const detail = yield* portal(`/portal/api/deliveries/${providerDelivery}`, cookie)
        assert.strictEqual(detail.status, 200, detail.text)
        const example = decode(EventsAnswer, yield* portal("/portal/api/events", cookie)).events[0]!.example
        assert.strictEqual((example as Record<string, unknown>).property_owner_slug, "acme-properties")
      }),
    )

    it.effect("filters, pages by cursor, and names each bad field in a 422", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("reads-filters")
        const second = yield* createEndpoint(a.partner, ownerEndpoints("reads-filters"), {
          name: "Second",
          destination_url: "https://hooks.example.com/second",
          events: ["policy.created"],
        })
        const HOUR = 3_600_000
        const made: Array<number> = []
        for (let i = 0; i < 5; i++)
          made.push(yield* delivery(a.endpoint.id, "policy.created", (i + 1) * HOUR))
        const ready = yield* delivery(a.endpoint.id, "prospect.ready", 30 * 60_000)
        const onSecond = yield* delivery(second.id, "policy.created", 10 * 60_000)
        yield* query((sql) => sql`update webhook_deliveries set status = 'failed' where id = ${made[1]!}`)
        const cookie = yield* openSession(a.partner, ownerSessions("reads-filters"))
        const list = (params: string) => portal(`/portal/api/deliveries?${params}`, cookie)

        const first = yield* list("limit=3")
        assert.deepStrictEqual(ids(first), [onSecond, ready, made[0]!])
        const cursor = decode(DeliveryPage, first).next_cursor!
        assert.isString(cursor)
        const next = yield* list(`limit=3&cursor=${encodeURIComponent(cursor)}`)
        assert.deepStrictEqual(ids(next), [made[1]!, made[2]!, made[3]!])
        const last = yield* list(
          `limit=3&cursor=${encodeURIComponent(decode(DeliveryPage, next).next_cursor!)}`,
        )
        assert.deepStrictEqual(ids(last), [made[4]!])
        assert.isNull(decode(DeliveryPage, last).next_cursor)

        assert.deepStrictEqual(ids(yield* list(`endpoint=${second.id}`)), [onSecond])
        assert.deepStrictEqual(ids(yield* list("event_type=prospect.ready")), [ready])
        assert.deepStrictEqual(ids(yield* list("status=failed")), [made[1]!])
        const since = new Date(Date.now() - 2.5 * HOUR).toISOString()
        const until = new Date(Date.now() - 0.75 * HOUR).toISOString()
        assert.deepStrictEqual(ids(yield* list(`since=${since}&until=${until}`)), [made[0]!, made[1]!])
        assert.deepStrictEqual(ids(yield* list(`status=failed&endpoint=${second.id}`)), [])

        const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
          ["since=yesterday", ["since"]],
          ["until=2026-13-01T00:00:00Z", ["until"]],
          ["status=lost", ["status"]],
          ["limit=0", ["limit"]],
          ["limit=101", ["limit"]],
          ["limit=ten", ["limit"]],
          ["cursor=not-a-cursor", ["cursor"]],
          ["endpoint=abc", ["endpoint"]],
          ["event_type=Policy", ["event_type"]],
          ["q=hello", ["q"]],
          ["q=tpp_", ["q"]],
          ["q=tpp_x1", ["q"]],
          ["status=lost&limit=0", ["status", "limit"]],
        ]
        for (const [params, fields] of cases) {
          const answer = yield* list(params)
          assert.strictEqual(answer.status, 422, `${params}: ${answer.text}`)
          assert.strictEqual(answer.body.status_code, 422)
          assert.sameMembers(errorFields(answer), [...fields], params)
        }
      }),
    )

    it.effect("shows a delivery's payload and every attempt, the response body cut at 2 KB", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("reads-detail")
        const id = yield* delivery(a.endpoint.id)
        // 2047 ASCII bytes then a 3-byte character: the cut falls inside it, so the excerpt ends before it.
        const long = `${"x".repeat(RESPONSE_EXCERPT_BYTES - 1)}€${"y".repeat(500)}`
        yield* query(
          (sql) => sql`
            insert into webhook_attempts (delivery_id, series, attempt_number, started_at, status_code, duration_ms,
                                          failure_reason, response_body)
            values (${id}, 1, 1, '2026-03-01T10:00:00Z', 500, 120, 'http_status', ${long}),
                   (${id}, 1, 2, '2026-03-01T10:01:00Z', null, 10000, 'timeout', null),
                   (${id}, 2, 1, '2026-03-01T11:00:00Z', 200, 35, null, 'ok')`,
        )
        const cookie = yield* openSession(a.partner, ownerSessions("reads-detail"))
        const answer = yield* portal(`/portal/api/deliveries/${id}`, cookie)
        assert.strictEqual(answer.status, 200, answer.text)
        const shown = decode(DeliveryDetailAnswer, answer).delivery
        assert.strictEqual(shown.id, id)
        assert.deepStrictEqual(shown.payload, {
          event: "policy.created",
          property_owner_slug: "acme",
          data: { insurance_policy: { id: "policy_1", policy_number: "SDI-1", status: "active" } },
        })
        assert.deepStrictEqual(JSON.parse(shown.payload_raw), shown.payload)
        assert.strictEqual(shown.attempts.length, 3)
        const [firstAttempt, timedOut, retried] = shown.attempts
        assert.strictEqual(firstAttempt!.response_excerpt, "x".repeat(RESPONSE_EXCERPT_BYTES - 1))
        assert.deepInclude(firstAttempt!, {
          status_code: 500,
          duration_ms: 120,
          failure_reason: "http_status",
        })
        assert.strictEqual(new Date(firstAttempt!.started_at).toISOString(), "2026-03-01T10:00:00.000Z")
        assert.match(firstAttempt!.started_at, /(Z|[+-]\d{2}:\d{2})$/)
        assert.deepInclude(timedOut!, {
          status_code: null,
          response_excerpt: null,
          failure_reason: "timeout",
        })
        assert.deepInclude(retried!, {
          series: 2,
          attempt_number: 1,
          status_code: 200,
          response_excerpt: "ok",
        })
      }),
    )

    it.effect("answers 401 on every route without a cookie and once the owner ends its sessions", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("reads-ended")
        const id = yield* delivery(a.endpoint.id)
        const cookie = yield* openSession(a.partner, ownerSessions("reads-ended"))
        const routes = [
          "/portal/api/endpoints",
          "/portal/api/deliveries",
          `/portal/api/deliveries/${id}`,
          "/portal/api/events",
        ]
        for (const route of routes) {
          assert.strictEqual((yield* portal(route, cookie)).status, 200, route)
          const without = yield* portal(route)
          assert.strictEqual(without.status, 401, route)
          assert.property(without.body, "error")
          assert.strictEqual((yield* portal(route, "portal_session=forged")).status, 401, route)
        }
        const ended = yield* api(a.partner, "DELETE", ownerSessions("reads-ended"))
        assert.strictEqual(ended.status, 204, ended.text)
        for (const route of routes) assert.strictEqual((yield* portal(route, cookie)).status, 401, route)
      }),
    )

    it.effect("finds the holder's deliveries about a prospect by its tpp_ id, newest first, by cursor", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("tpp-a")
        const b = yield* ownerWithEndpoint("tpp-b")
        /** A delivery of `event` whose payload is about the prospect `id`, as the router stores it. */
        const about = (endpointId: number, event: string, id: string, ageMs: number, slug: string) =>
          Effect.gen(function* () {
            const made = yield* delivery(endpointId, event, ageMs, slug)
            const payload = {
              event,
              property_owner_slug: slug,
              data: { third_party_prospect: { id, source_prospect_id: "src-7", status: "ready" } },
            }
            yield* query(
              (sql) => sql`
                update webhook_deliveries set payload = ${Buffer.from(JSON.stringify(payload))} where id = ${made}`,
            )
            return made
          })
        const older = yield* about(a.endpoint.id, "prospect.ready", "tpp_42", 60_000, "tpp-a")
        const newer = yield* about(a.endpoint.id, "prospect.incomplete", "tpp_42", 1000, "tpp-a")
        yield* about(a.endpoint.id, "prospect.ready", "tpp_421", 500, "tpp-a")
        // `prospect.created` names the partner's own id, which may look like anything.
        yield* about(a.endpoint.id, "prospect.created", "tpp_42", 400, "tpp-a")
        yield* about(b.endpoint.id, "prospect.ready", "tpp_42", 300, "tpp-b")
        const cookie = yield* openSession(a.partner, ownerSessions("tpp-a"))

        const found = yield* portal("/portal/api/deliveries?q=tpp_42", cookie)
        assert.strictEqual(found.status, 200, found.text)
        assert.deepStrictEqual(ids(found), [newer, older])
        const upper = yield* portal("/portal/api/deliveries?q=TPP_42", cookie)
        assert.deepStrictEqual(ids(upper), [newer, older])

        const first = yield* portal("/portal/api/deliveries?q=tpp_42&limit=1", cookie)
        const page = decode(DeliveryPage, first)
        assert.deepStrictEqual(ids(first), [newer])
        assert.isNotNull(page.next_cursor)
        const second = yield* portal(
          `/portal/api/deliveries?q=tpp_42&limit=1&cursor=${page.next_cursor}`,
          cookie,
        )
        assert.deepStrictEqual(ids(second), [older])
        assert.isNull(decode(DeliveryPage, second).next_cursor)

        const withFilter = yield* portal("/portal/api/deliveries?q=tpp_42&event_type=prospect.ready", cookie)
        assert.deepStrictEqual(ids(withFilter), [older])
        const nobody = yield* portal("/portal/api/deliveries?q=tpp_9", cookie)
        assert.deepStrictEqual(ids(nobody), [])
      }),
    )
  })
})
