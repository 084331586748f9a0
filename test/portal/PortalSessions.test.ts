import { readFileSync } from "node:fs"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService, authEnv, createOwner, gatewayPort, httpRequest } from "../support/Auth.ts"
import { api, provisionProvider, query, webhookPartner, type WebhookPartner } from "../support/Webhooks.ts"

const PARENT = "https://pms.example.com"
const env = authEnv({ ROLES: "partner-api,portal", PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.test" })
const service = authService({ env })

const ownerSessions = (slug: string) => `/partners/${slug}/webhooks/portal_sessions`
const providerSessions = (name: string) => `/partners/providers/${name}/webhooks/portal_sessions`

/** An owner whose pages `origins` may frame, and a partner granted it. */
const framedOwner = (slug: string, origins: ReadonlyArray<string> = [PARENT]) =>
  Effect.gen(function* () {
    yield* createOwner(slug, `Owner ${slug}`)
    yield* query(
      (sql) =>
        sql`update owners set embedded_frame_ancestors = ${sql.array([...origins])} where slug = ${slug}`,
    )
    return yield* webhookPartner({ owners: [slug] })
  })

const sessionCount = query(
  (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from portal_sessions`,
).pipe(Effect.map(([row]) => row!.n))

/** Opens a link (no redirect followed), with the cookie header when given. */
const portal = (path: string, cookie?: string) =>
  Effect.flatMap(gatewayPort("portal"), (port) =>
    httpRequest(port, path, { redirect: "manual", ...(cookie === undefined ? {} : { headers: { cookie } }) }),
  )

const createLink = (partner: WebhookPartner, path: string, body?: unknown) =>
  Effect.gen(function* () {
    const answer = yield* api(partner, "POST", path, body)
    assert.strictEqual(answer.status, 201, answer.text)
    const url = new URL(answer.body!.url as string)
    return { url, expiresAt: answer.body!.expires_at as string, start: `${url.pathname}${url.search}` }
  })

/** Exchanges a link for its cookie (`portal_session=<token>`), asserting the redirect. */
const exchange = (start: string) =>
  Effect.gen(function* () {
    const answer = yield* portal(start)
    assert.strictEqual(answer.status, 303, answer.text)
    const setCookie = answer.headers.get("set-cookie")!
    return { answer, setCookie, cookie: setCookie.split(";")[0]! }
  })

describe("portal sessions", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("makes a one-time link for an owner, stored only as hashes", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-owner")
        const before = Date.now()
        const link = yield* createLink(partner, ownerSessions("portal-owner"), { read_only: true })
        assert.strictEqual(link.url.origin, "https://portal.test")
        assert.strictEqual(link.url.pathname, "/portal/start")
        const code = link.url.searchParams.get("code")!
        assert.isAbove(code.length, 30)
        const expires = Date.parse(link.expiresAt)
        assert.isAtLeast(expires, before + 3600_000 - 1000)
        assert.isAtMost(expires, Date.now() + 3600_000 + 1000)
        const rows = yield* query(
          (sql) => sql<Array<Record<string, unknown>>>`
            select s.read_only, s.parent_origin, s.code_hash, s.token_hash, s.provider_id
            from portal_sessions s join owners o on o.id = s.owner_id where o.slug = 'portal-owner'`,
        )
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.read_only, true)
        assert.isNull(rows[0]!.parent_origin)
        assert.isNull(rows[0]!.token_hash)
        assert.isNull(rows[0]!.provider_id)
        assert.notInclude((rows[0]!.code_hash as Buffer).toString("latin1"), code, "the code is not stored")
      }),
    )

    it.effect("makes a link for a provider, and refuses a parent_origin for it", () =>
      Effect.gen(function* () {
        yield* createOwner("portal-covered")
        yield* provisionProvider("portal-co", { owners: ["portal-covered"] })
        const partner = yield* webhookPartner({ provider: "portal-co" })
        const link = yield* createLink(partner, providerSessions("portal-co"), { expires_in: 300 })
        const { cookie } = yield* exchange(link.start)
        const session = yield* portal("/portal/api/session", cookie)
        assert.strictEqual(session.status, 200, session.text)
        const body = JSON.parse(session.text) as Record<string, unknown>
        assert.deepStrictEqual(body.provider, { name: "portal-co" })
        assert.strictEqual(body.read_only, false)
        assert.notProperty(body, "owner")

        const count = yield* sessionCount
        const refused = yield* api(partner, "POST", providerSessions("portal-co"), { parent_origin: PARENT })
        assert.strictEqual(refused.status, 422, refused.text)
        assert.match(
          (refused.body!.portal_session as Record<string, string>).parent_origin!,
          /provider has no embedded_frame_ancestors/,
        )
        assert.strictEqual(yield* sessionCount, count, "nothing stored")

        const removed = yield* api(partner, "DELETE", providerSessions("portal-co"))
        assert.strictEqual(removed.status, 204, removed.text)
        assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 401)
      }),
    )

    it.effect("answers 404 for a provider the service has not provisioned", () =>
      Effect.gen(function* () {
        const partner = yield* webhookPartner({ provider: "portal-unready" })
        for (const method of ["POST", "DELETE"]) {
          const answer = yield* api(partner, method, providerSessions("portal-unready"))
          assert.strictEqual(answer.status, 404, `${method}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, {
            status_code: 404,
            error: "Provider not found: its webhooks have not been provisioned by the service.",
          })
        }
      }),
    )

    it.effect("enforces the scope and the owner and provider grants", () =>
      Effect.gen(function* () {
        yield* framedOwner("portal-mine")
        yield* framedOwner("portal-theirs")
        const mine = yield* webhookPartner({ owners: ["portal-mine"] })
        const other = yield* api(mine, "POST", ownerSessions("portal-theirs"))
        assert.strictEqual(other.status, 403, other.text)
        const otherDelete = yield* api(mine, "DELETE", ownerSessions("portal-theirs"))
        assert.strictEqual(otherDelete.status, 403, otherDelete.text)
        const unknown = yield* api(mine, "POST", ownerSessions("portal-nobody"))
        assert.strictEqual(unknown.status, 404, unknown.text)
        const unscoped = yield* webhookPartner({ owners: ["portal-mine"], scopes: ["prospects:write"] })
        const noScope = yield* api(unscoped, "POST", ownerSessions("portal-mine"))
        assert.strictEqual(noScope.status, 403, noScope.text)
        const providerOfOthers = yield* api(mine, "POST", providerSessions("portal-co"))
        assert.strictEqual(providerOfOthers.status, 403, providerOfOthers.text)
      }),
    )

    it.effect("answers 422 naming each bad field, and stores nothing", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-checks")
        const before = yield* sessionCount
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ expires_in: 299 }, "expires_in"],
          [{ expires_in: 86_401 }, "expires_in"],
          [{ expires_in: 600.5 }, "expires_in"],
          [{ expires_in: "600" }, "expires_in"],
          [{ read_only: "yes" }, "read_only"],
          [{ parent_origin: "http://pms.example.com" }, "parent_origin"],
          [{ parent_origin: "https://pms.example.com/path" }, "parent_origin"],
          [{ parent_origin: "https://*.example.com" }, "parent_origin"],
          [{ parent_origin: "*" }, "parent_origin"],
          [{ parent_origin: "https://elsewhere.example.com" }, "parent_origin"],
          [[1], "base"],
        ]
        for (const [body, field] of cases) {
          const answer = yield* api(partner, "POST", ownerSessions("portal-checks"), body)
          assert.strictEqual(answer.status, 422, `${JSON.stringify(body)}: ${answer.text}`)
          assert.strictEqual(answer.body!.error, "Invalid portal session params.")
          assert.deepStrictEqual(
            Object.keys(answer.body!.portal_session as object),
            [field],
            JSON.stringify(body),
          )
          assert.deepStrictEqual(Object.keys(answer.body!.errors as object), [field])
        }
        const malformed = yield* api(partner, "POST", ownerSessions("portal-checks"), "{not json")
        assert.strictEqual(malformed.status, 400, malformed.text)
        assert.strictEqual(yield* sessionCount, before)
      }),
    )

    it.effect("exchanges a code once for a cookie with every attribute, and redirects without the code", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-start")
        const link = yield* createLink(partner, ownerSessions("portal-start"), {
          parent_origin: PARENT,
          expires_in: 900,
        })
        const { answer, setCookie, cookie } = yield* exchange(link.start)
        assert.strictEqual(answer.headers.get("location"), "/portal/")
        const [pair, ...attributes] = setCookie.split(";").map((part) => part.trim())
        assert.match(pair!, /^portal_session=[A-Za-z0-9_-]{40,}$/)
        assert.notInclude(pair!, link.url.searchParams.get("code")!)
        const maxAge = Number(/^Max-Age=(\d+)$/.exec(attributes.find((a) => a.startsWith("Max-Age="))!)![1])
        assert.isAtLeast(maxAge, 890)
        assert.isAtMost(maxAge, 900)
        assert.sameMembers(
          attributes.filter((a) => !a.startsWith("Max-Age=")),
          ["HttpOnly", "Secure", "SameSite=None", "Partitioned", "Path=/portal"],
        )
        assert.include(answer.headers.get("content-security-policy")!, `frame-ancestors ${PARENT}`)

        const token = pair!.split("=")[1]!
        const stored = yield* query(
          (sql) => sql<Array<{ code_hash: Buffer | null; token_hash: Buffer; exchanged_at: Date }>>`
            select s.code_hash, s.token_hash, s.exchanged_at from portal_sessions s
            join owners o on o.id = s.owner_id where o.slug = 'portal-start'`,
        )
        assert.isNull(stored[0]!.code_hash, "the code is consumed")
        assert.notInclude(stored[0]!.token_hash.toString("latin1"), token)

        const session = yield* portal("/portal/api/session", cookie)
        assert.strictEqual(session.status, 200, session.text)
        const { csrf_token, ...rest } = JSON.parse(session.text) as Record<string, unknown>
        assert.deepStrictEqual(rest, {
          owner: { slug: "portal-start", name: "Owner portal-start" },
          read_only: false,
          expires_at: link.expiresAt,
          parent_origin: PARENT,
          brand: { name: "Owner portal-start", logo_url: null, accent_color: null },
          signing_headers: {
            signature: "X-Webhook-Signature",
            timestamp: "X-Webhook-Timestamp",
            event: "X-Webhook-Event",
            delivery: "X-Webhook-Delivery",
          },
        })
        assert.match(csrf_token as string, /^[\w-]{43}$/, "a CSRF token derived from the cookie's")
        assert.include(session.headers.get("content-security-policy")!, `frame-ancestors ${PARENT}`)
        assert.isNull(session.headers.get("x-frame-options"))
        assert.strictEqual(session.headers.get("cache-control"), "no-store")
        assert.strictEqual(session.headers.get("x-content-type-options"), "nosniff")

        const home = yield* portal("/portal/", cookie)
        assert.strictEqual(home.status, 200)
        assert.include(home.text, "<title>Webhooks portal</title>")
        assert.include(
          home.text,
          'src="/portal/assets/',
          "the portal's app, its script under the portal's path",
        )
        assert.include(home.headers.get("content-security-policy")!, `frame-ancestors ${PARENT}`)

        const again = yield* portal(link.start)
        assert.strictEqual(again.status, 410)
        assert.isNull(again.headers.get("set-cookie"))
      }),
    )

    it.effect("shows the same neutral page for a reused, expired, tampered, unknown or ended link", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-gone")
        const used = yield* createLink(partner, ownerSessions("portal-gone"))
        yield* exchange(used.start)
        const expired = yield* createLink(partner, ownerSessions("portal-gone"))
        yield* query(
          (sql) => sql`update portal_sessions set expires_at = now() - interval '1 second'
                       where exchanged_at is null and ended_at is null`,
        )
        const fresh = yield* createLink(partner, ownerSessions("portal-gone"))
        const code = fresh.url.searchParams.get("code")!
        const tampered = `/portal/start?code=${code.slice(0, -1)}${code.endsWith("A") ? "B" : "A"}`
        const answers = yield* Effect.forEach(
          [
            used.start,
            expired.start,
            tampered,
            "/portal/start?code=unknown",
            "/portal/start",
            "/portal/start?code=%00",
          ],
          (path) => portal(path),
        )
        for (const answer of answers) {
          assert.strictEqual(answer.status, 410, answer.text)
          assert.strictEqual(answer.text, answers[0]!.text)
          assert.strictEqual(answer.headers.get("content-type"), "text/html; charset=utf-8")
          assert.include(answer.headers.get("content-security-policy")!, "frame-ancestors 'none'")
          assert.isNull(answer.headers.get("set-cookie"))
        }
        assert.include(answers[0]!.text, "no longer valid")
        assert.notMatch(answers[0]!.text, /expired|used|unknown|ended/i)

        const ended = yield* createLink(partner, ownerSessions("portal-gone"))
        const removed = yield* api(partner, "DELETE", ownerSessions("portal-gone"))
        assert.strictEqual(removed.status, 204, removed.text)
        const afterEnd = yield* portal(ended.start)
        assert.strictEqual(afterEnd.status, 410)
        assert.strictEqual(afterEnd.text, answers[0]!.text)
        // The fresh link was not opened before the DELETE either.
        assert.strictEqual((yield* portal(fresh.start)).status, 410)
      }),
    )

    it.effect("ends every session of the owner at once: the session API then answers 401", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-end")
        const kept = yield* framedOwner("portal-kept")
        const first = yield* exchange((yield* createLink(partner, ownerSessions("portal-end"))).start)
        const second = yield* exchange((yield* createLink(partner, ownerSessions("portal-end"))).start)
        const other = yield* exchange((yield* createLink(kept, ownerSessions("portal-kept"))).start)
        for (const { cookie } of [first, second, other]) {
          assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 200)
        }
        const removed = yield* api(partner, "DELETE", ownerSessions("portal-end"))
        assert.strictEqual(removed.status, 204)
        assert.strictEqual(removed.text, "")
        for (const { cookie } of [first, second]) {
          const answer = yield* portal("/portal/api/session", cookie)
          assert.strictEqual(answer.status, 401)
          assert.strictEqual(answer.headers.get("content-type"), "application/json")
          assert.include(answer.headers.get("content-security-policy")!, "frame-ancestors 'none'")
          assert.strictEqual((yield* portal("/portal/", cookie)).status, 401)
        }
        assert.strictEqual(
          (yield* portal("/portal/api/session", other.cookie)).status,
          200,
          "another owner's stays",
        )
        assert.strictEqual((yield* portal("/portal/api/session")).status, 401)
        assert.strictEqual((yield* portal("/portal/api/session", "portal_session=forged")).status, 401)
      }),
    )

    it.effect("serves the app on its deep paths and only the assets its page reaches", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-site")
        const link = yield* createLink(partner, ownerSessions("portal-site"), { parent_origin: PARENT })
        const { cookie } = yield* exchange(link.start)
        const home = yield* portal("/portal/", cookie)
        assert.strictEqual(home.status, 200, home.text)
        for (const path of ["/portal/endpoints/12", "/portal/deliveries/5", "/portal/events"]) {
          const deep = yield* portal(path, cookie)
          assert.strictEqual(deep.status, 200, path)
          assert.strictEqual(deep.text, home.text, path)
          assert.include(deep.headers.get("content-security-policy")!, `frame-ancestors ${PARENT}`)
        }
        assert.strictEqual(
          (yield* portal("/portal/endpoints/12")).status,
          401,
          "no session: the neutral page",
        )

        const script = /src="(\/portal\/assets\/[^"]+\.js)"/.exec(home.text)![1]!
        const asset = yield* portal(script)
        assert.strictEqual(asset.status, 200)
        assert.strictEqual(asset.headers.get("content-type"), "text/javascript; charset=utf-8")
        assert.include(asset.headers.get("cache-control")!, "immutable")
        assert.strictEqual(asset.headers.get("x-content-type-options"), "nosniff")

        const manifest = JSON.parse(
          readFileSync(new URL("../../dist/console/.vite/manifest.json", import.meta.url), "utf8"),
        ) as Record<string, { file: string }>
        const consoleEntry = manifest["index.html"]!.file
        assert.strictEqual(
          (yield* portal(`/portal/${consoleEntry}`, cookie)).status,
          404,
          "not the console's",
        )
        assert.strictEqual((yield* portal("/portal/assets/missing.js", cookie)).status, 404)
        assert.strictEqual((yield* portal("/portal/.vite/manifest.json", cookie)).text, home.text)
        const unknownApi = yield* portal("/portal/api/nothing", cookie)
        assert.strictEqual(unknownApi.status, 404)
        assert.strictEqual(unknownApi.headers.get("content-type"), "application/json")
      }),
    )

    it.effect("sends frame-ancestors 'none' for a session without a parent origin", () =>
      Effect.gen(function* () {
        const partner = yield* framedOwner("portal-unframed")
        const { cookie, answer } = yield* exchange(
          (yield* createLink(partner, ownerSessions("portal-unframed"))).start,
        )
        assert.include(answer.headers.get("content-security-policy")!, "frame-ancestors 'none'")
        const home = yield* portal("/portal/", cookie)
        assert.include(home.headers.get("content-security-policy")!, "frame-ancestors 'none'")
        assert.strictEqual(home.headers.get("x-frame-options"), "DENY")
      }),
    )

    it.effect("lists both routes in /openapi.json with their error shapes", () =>
      Effect.gen(function* () {
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const document = JSON.parse(answer.text) as {
          paths: Record<string, Record<string, { responses: Record<string, unknown>; security: unknown }>>
        }
        for (const path of [
          "/partners/{owner_slug}/webhooks/portal_sessions",
          "/partners/providers/{provider}/webhooks/portal_sessions",
        ]) {
          const item = document.paths[path]
          assert.isDefined(item, path)
          assert.deepStrictEqual(Object.keys(item!.post!.responses), ["201", "401", "403", "404", "422"])
          assert.deepStrictEqual(Object.keys(item!.delete!.responses), ["204", "401", "403", "404"])
          assert.deepStrictEqual(item!.post!.security, [{ oauth2: ["webhooks:manage"] }])
        }
      }),
    )
  })
})
