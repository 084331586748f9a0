import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { metrics } from "../../backend/platform/Observability.ts"
import { LINK_GONE_STATUS, THROTTLED_STATUS } from "../../backend/portal/Http.ts"
import { authService } from "../support/Auth.ts"
import { createLink, exchange, ownerSessions, portal, portalEnv, portalOwner } from "../support/Portal.ts"
import { query } from "../support/Webhooks.ts"

const FREE_FAILURES = 3

// The test's requests come from the loopback address, trusted as a proxy: X-Forwarded-For names each caller.
const service = authService({
  env: portalEnv({ PORTAL_START_FREE_FAILURES: String(FREE_FAILURES), TRUSTED_PROXIES: "127.0.0.1/32" }),
})

const from = (address: string) => ({ "x-forwarded-for": address })

const throttledByFailures = Effect.promise(() =>
  metrics.portalStartsThrottled
    .get()
    .then((m) => m.values.find((v) => v.labels.reason === "failures")?.value ?? 0),
)

const heading = (text: string) => /<h1>([^<]*)<\/h1>/.exec(text)?.[1]

describe("guessing portal links", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "answers wrong codes from one address with the link-gone page, then 429 without a hint, while another address opens its link",
      () =>
        Effect.gen(function* () {
          const partner = yield* portalOwner("guessed-owner")
          const link = yield* createLink(partner, ownerSessions("guessed-owner"))
          const countedBefore = yield* throttledByFailures
          const answers = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, n) => n),
            (n) => portal(`/portal/start?code=guess-${n}`, undefined, from("198.51.100.7")),
          )
          for (const [n, answer] of answers.slice(0, FREE_FAILURES + 1).entries()) {
            assert.strictEqual(answer.status, LINK_GONE_STATUS, `guess ${n}`)
          }
          const last = answers.at(-1)!
          assert.strictEqual(last.status, THROTTLED_STATUS, last.text)
          assert.isAbove(Number(last.headers.get("retry-after")), 0, "Retry-After says when to come back")
          assert.strictEqual(heading(last.text), "This link cannot be opened now")
          assert.notMatch(last.text, /many|wrong|guess|invalid|address|network/i, "no hint why")
          assert.strictEqual(last.headers.get("cache-control"), "no-store")
          assert.include(last.headers.get("content-security-policy")!, "frame-ancestors 'none'")
          assert.isNull(last.headers.get("set-cookie"))
          assert.isAbove(
            yield* throttledByFailures,
            countedBefore,
            "counted in portal_starts_throttled_total",
          )

          // The partner's valid link, opened from the guessing address, is refused too and not consumed.
          const refused = yield* portal(link.start, undefined, from("198.51.100.7"))
          assert.strictEqual(refused.status, THROTTLED_STATUS)
          assert.isNull(refused.headers.get("set-cookie"))

          // Another address is not affected, and the enrollment links' count is another throttle's.
          const { cookie } = yield* exchange(link.start, from("198.51.100.8"))
          assert.strictEqual((yield* portal("/portal/api/session", cookie)).status, 200)
          const rows = yield* query(
            (sql) => sql<Array<{ scope: string; source: string }>>`
              select scope, source from address_failures where source = '198.51.100.7'`,
          )
          assert.deepStrictEqual(rows, [{ scope: "portal_start", source: "198.51.100.7" }])
        }),
    )

    it.effect("does not count a code that opens a session", () =>
      Effect.gen(function* () {
        const partner = yield* portalOwner("counted-owner")
        for (let n = 0; n < FREE_FAILURES + 3; n++) {
          const link = yield* createLink(partner, ownerSessions("counted-owner"))
          yield* exchange(link.start, from("198.51.100.20"))
        }
        const rows = yield* query((sql) => sql`select 1 from address_failures where source = '198.51.100.20'`)
        assert.strictEqual(rows.length, 0)
      }),
    )
  })
})
