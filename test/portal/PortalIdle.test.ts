import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { createLink, exchange, ownerSessions, portal, portalEnv, portalOwner } from "../support/Portal.ts"
import { query } from "../support/Webhooks.ts"

const service = authService({ env: portalEnv() })

/** Sets when the owner's sessions were last used, as an interval before now. */
const lastSeenAgo = (slug: string, interval: string) =>
  query(
    (sql) => sql`
      update portal_sessions set last_seen_at = now() - ${interval}::interval
      where owner_id = (select id from owners where slug = ${slug})`,
  )

const lastSeen = (slug: string) =>
  query(
    (sql) => sql<Array<{ last_seen_at: Date; recent: boolean }>>`
      select last_seen_at, last_seen_at > now() - interval '1 minute' as recent from portal_sessions
      where owner_id = (select id from owners where slug = ${slug})`,
  ).pipe(Effect.map(([row]) => row!))

describe("portal sessions' idle timeout", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("ends a session unused for PORTAL_IDLE_MINUTES (30 by default); a fresh one works", () =>
      Effect.gen(function* () {
        const partner = yield* portalOwner("idle-owner")
        const { cookie } = yield* exchange((yield* createLink(partner, ownerSessions("idle-owner"))).start)
        assert.isTrue((yield* lastSeen("idle-owner")).recent, "the exchange counts as a use")
        assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 200)
        yield* lastSeenAgo("idle-owner", "31 minutes")
        const idle = yield* portal("/portal/api/session", cookie)
        assert.strictEqual(idle.status, 401, idle.text)
        assert.strictEqual((yield* portal("/portal/", cookie)).status, 401)
        assert.strictEqual((yield* portal("/portal/api/endpoints", cookie)).status, 401)

        const fresh = yield* exchange((yield* createLink(partner, ownerSessions("idle-owner"))).start)
        assert.strictEqual((yield* portal("/portal/api/session", fresh.cookie)).status, 200)
        assert.strictEqual((yield* portal("/portal/", fresh.cookie)).status, 200)
      }),
    )

    it.effect("renews a session on each request, writing its last use at most once a minute", () =>
      Effect.gen(function* () {
        const partner = yield* portalOwner("renewed-owner")
        const { cookie } = yield* exchange((yield* createLink(partner, ownerSessions("renewed-owner"))).start)
        yield* lastSeenAgo("renewed-owner", "29 minutes")
        assert.strictEqual((yield* portal("/portal/api/endpoints", cookie)).status, 200)
        assert.isTrue((yield* lastSeen("renewed-owner")).recent, "renewed by the request")

        yield* lastSeenAgo("renewed-owner", "30 seconds")
        const before = (yield* lastSeen("renewed-owner")).last_seen_at
        assert.strictEqual((yield* portal("/portal/", cookie)).status, 200)
        assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 200)
        assert.deepStrictEqual(
          (yield* lastSeen("renewed-owner")).last_seen_at,
          before,
          "not written again within the minute",
        )

        yield* lastSeenAgo("renewed-owner", "29 minutes")
        assert.strictEqual((yield* portal("/portal/", cookie)).status, 200)
        yield* lastSeenAgo("renewed-owner", "20 minutes")
        assert.strictEqual(
          (yield* portal("/portal/api/session", cookie)).status,
          200,
          "the page's request renewed it",
        )
      }),
    )
  })
})

describe("portal sessions' idle timeout, set shorter", () => {
  layer(authService({ env: portalEnv({ PORTAL_IDLE_MINUTES: "5" }) }).layer, {
    excludeTestServices: true,
    timeout: 120_000,
  })((it) => {
    it.effect("follows PORTAL_IDLE_MINUTES", () =>
      Effect.gen(function* () {
        const partner = yield* portalOwner("idle-five")
        const { cookie } = yield* exchange((yield* createLink(partner, ownerSessions("idle-five"))).start)
        yield* lastSeenAgo("idle-five", "4 minutes")
        assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 200)
        yield* lastSeenAgo("idle-five", "6 minutes")
        assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 401)
      }),
    )
  })
})
