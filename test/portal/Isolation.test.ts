import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { portalRoutes } from "../../backend/portal/Http.ts"
import { authEnv, authService, createOwner, gatewayPort, httpRequest } from "../support/Auth.ts"
import {
  call,
  openSession,
  ownerSessions,
  ownerWithEndpoint,
  providerSessions,
  type Session,
} from "../support/Portal.ts"
import { api, insertDelivery, provisionProvider, query, webhookPartner } from "../support/Webhooks.ts"

/*
 * A portal session reaches its holder's webhooks and nothing else: every route the portal serves under
 * /portal/api, given another owner's ids (or none), answers as if they did not exist and changes nothing of
 * theirs; the Partner API's and the console's routes are not reachable with its cookie.
 */

const env = authEnv({
  ROLES: "partner-api,portal,console",
  PORTAL_PORT: "0",
  CONSOLE_PORT: "0",
  PORTAL_BASE_URL: "https://portal.test",
})
const service = authService({ env })

/** Owner B's records, which no session of A's (or of a provider covering only A) may read or change. */
interface Theirs {
  readonly endpointId: number
  readonly deliveryId: number
  readonly marker: string
}

/** A plausible body for each change, so that a refusal is the holder check's, not the body's. */
const bodyFor = (method: string, path: string): unknown => {
  if (method === "GET" || method === "DELETE") return undefined
  if (path.endsWith("/headers")) return { custom_headers: { "X-Api-Key": "stolen" } }
  if (path.endsWith("/test")) return { event: "policy.created" }
  if (path.endsWith("/recoveries")) return { since: new Date(Date.now() - 3_600_000).toISOString() }
  if (path.endsWith("/rotate")) return { overlap_hours: 0 }
  return { name: "taken over", destination_url: "https://evil.example.com/hook", events: ["policy.created"] }
}

/** The path with B's ids in it; undefined for a route the test does not know how to aim at B (it then fails). */
const aimed = (path: string, theirs: Theirs) =>
  path
    .replace(/^\/portal\/api\/endpoints\/:id/, `/portal/api/endpoints/${theirs.endpointId}`)
    .replace(/^\/portal\/api\/deliveries\/:id/, `/portal/api/deliveries/${theirs.deliveryId}`)
    .replace(/^\/portal\/api\/recoveries\/:id/, "/portal/api/recoveries/1")

/** Every route the portal's page calls, as `METHOD path`. */
const apiRoutes = portalRoutes.filter(
  (route) => route.path.startsWith("/portal/api/") && route.path !== "/portal/api/live",
)

const theirState = (theirs: Theirs) =>
  query(
    (sql) => sql<
      Array<{ endpoint: string; deliveries: number; attempts: number; secrets: number; audited: number }>
    >`
      select (select concat_ws('|', name, destination_url, status, deleted_at) from webhook_endpoints
              where id = ${theirs.endpointId}) as endpoint,
             (select count(*)::int from webhook_deliveries where endpoint_id = ${theirs.endpointId}) as deliveries,
             (select coalesce(sum(series), 0)::int from webhook_deliveries where endpoint_id = ${theirs.endpointId})
               as attempts,
             (select count(*)::int from webhook_secrets s join webhook_endpoints e on e.subscriber_id = s.subscriber_id
              where e.id = ${theirs.endpointId}) as secrets,
             (select count(*)::int from audit_log where target = ${`endpoint:${theirs.endpointId}`}) as audited`,
  ).pipe(Effect.map(([row]) => row!))

/** Walks every portal route as `session`, aimed at B's records, and checks nothing of B's is told or changed. */
const walk = (session: Session, theirs: Theirs) =>
  Effect.gen(function* () {
    const before = yield* theirState(theirs)
    const problems: Array<string> = []
    for (const route of apiRoutes) {
      const path = aimed(route.path, theirs)
      const answer = yield* call(session, route.method, path, { body: bodyFor(route.method, path) })
      const named = `${route.method} ${path}`
      if (route.path.includes(":id")) {
        if (answer.status !== 404) problems.push(`${named} answered ${answer.status}: ${answer.text}`)
      } else if (answer.status >= 500) {
        problems.push(`${named} answered ${answer.status}`)
      }
      if (answer.text.includes(theirs.marker)) problems.push(`${named} told B's records: ${answer.text}`)
    }
    // Filters and searches aimed at B.
    for (const query of [`endpoint=${theirs.endpointId}`, `q=${theirs.deliveryId}`]) {
      const answer = yield* call(session, "GET", `/portal/api/deliveries?${query}`)
      if (answer.text.includes(theirs.marker) || answer.text.includes(`"id":${theirs.deliveryId}`)) {
        problems.push(`deliveries?${query} told B's delivery: ${answer.text}`)
      }
    }
    assert.deepStrictEqual(problems, [])
    assert.deepStrictEqual(yield* theirState(theirs), before, "nothing of B's changed")
  })

describe("portal isolation", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a session of owner A, or of a provider covering A, reaches nothing of owner B's", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("iso-a")
        const b = yield* ownerWithEndpoint("iso-b")
        const marker = "iso-b hook"
        const deliveryId = yield* insertDelivery(b.endpoint.id, { status: "failed" })
        const theirs = { endpointId: b.endpoint.id, deliveryId, marker }
        assert.isAbove(apiRoutes.length, 10, "the portal's API routes are enumerated")

        yield* walk(yield* openSession(a.partner, ownerSessions("iso-a")), theirs)

        yield* provisionProvider("iso-co", { owners: ["iso-a"] })
        const providerPartner = yield* webhookPartner({ provider: "iso-co" })
        const made = yield* api(providerPartner, "POST", "/partners/providers/iso-co/webhooks/endpoints", {
          endpoint: {
            name: "iso-co hook",
            destination_url: "https://hooks.example.com/co",
            events: ["policy.created"],
          },
        })
        assert.strictEqual(made.status, 200, made.text)
        yield* walk(yield* openSession(providerPartner, providerSessions("iso-co")), theirs)
      }),
    )

    it.effect("its cookie opens neither the Partner API's other routes nor the console's API", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("iso-c")
        yield* createOwner("iso-d")
        const session = yield* openSession(a.partner, ownerSessions("iso-c"))
        for (const path of [
          "/partners/iso-c/webhooks/endpoints",
          "/partners/property_owners",
          "/api/deliveries",
        ]) {
          const onPortal = yield* call(session, "GET", path)
          assert.strictEqual(onPortal.status, 404, `${path} on the portal's port: ${onPortal.text}`)
        }
        for (const [port, path] of [
          ["partner-api", "/partners/iso-c/webhooks/endpoints"],
          ["console", "/api/deliveries"],
          ["console", "/api/audit"],
        ] as const) {
          const answer = yield* httpRequest(yield* gatewayPort(port), path, {
            headers: { cookie: session.cookie, "x-portal-csrf": session.csrf },
          })
          assert.strictEqual(answer.status, 401, `${path} on the ${port} port: ${answer.text}`)
        }
      }),
    )
  })
})
