import { createHash } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AuditChannel, recordAudit } from "../../backend/audit/Audit.ts"
import { Db } from "../../backend/platform/Db.ts"
import { FORBIDDEN } from "../support/Auth.ts"
import { type Answer, call, consoleService, operatorSession, type SignedIn } from "../support/Operator.ts"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import {
  endpoint,
  examplePayload,
  publishEvent,
  query,
  subscriber,
  verifySignature,
} from "../support/WebhookEngine.ts"

/** The console and the workers, delivering to the test receiver. */
const service = consoleService({
  ROLES: "console,workers",
  WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
  WEBHOOK_BACKOFF_UNIT_MS: "5",
  WEBHOOK_TIMEOUT_MS: "2000",
})

const as = (session: SignedIn) => ({ cookie: session.cookie, csrf: session.csrf })

/** An owner row with a name of the test's choosing. */
const namedOwner = (slug: string, name: string) =>
  query((sql) => sql`insert into owners (slug, name) values (${slug}, ${name}) returning id`).pipe(
    Effect.map(([row]) => ({ slug, id: String(row!.id) })),
  )

const ok = (answer: Answer) => {
  assert.strictEqual(answer.status, 200, answer.text)
  return answer.body
}

/** Every page of a list, `limit` at a time: the rows' `key` in the order the pages gave them. */
const everyPage = <K extends string>(path: string, list: string, key: K, session: SignedIn, limit: number) =>
  Effect.gen(function* () {
    const seen: Array<unknown> = []
    let cursor: string | null = null
    do {
      const body: { next_cursor: string | null } & Record<string, Array<Record<K, unknown>>> = ok(
        yield* call("GET", `${path}&limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`, session),
      )
      assert.isAtMost(body[list]!.length, limit)
      seen.push(...body[list]!.map((row) => row[key]))
      cursor = body.next_cursor
    } while (cursor !== null)
    return seen
  })

const slugsOf = (body: { owners: ReadonlyArray<{ slug: string }> }) => body.owners.map((o) => o.slug)

describe("search that forgives", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "owner filters match a slug's prefix or a part of the name, ignoring case, with % and _ as themselves",
      () =>
        Effect.gen(function* () {
          const viewer = yield* operatorSession("search-viewer@search.test", "viewer")
          const ops = yield* operatorSession("search-ops@search.test", "operator")
          const acme = yield* namedOwner("srch-acme", "Acme 100% Homes")
          const west = yield* namedOwner("srch-acme-west", "Acme West Lettings")
          const beta = yield* namedOwner("srch-beta", "Beta_Rentals")
          const gamma = yield* namedOwner("srch-gamma", "GammaxRentals")

          // Suggestions: slugs that start with the text first, then names holding it.
          assert.deepStrictEqual(slugsOf(ok(yield* call("GET", "/api/owners?q=srch-ac", viewer))), [
            "srch-acme",
            "srch-acme-west",
          ])
          assert.deepStrictEqual(slugsOf(ok(yield* call("GET", "/api/owners?q=WEST", viewer))), [
            "srch-acme-west",
          ])
          assert.deepStrictEqual(slugsOf(ok(yield* call("GET", "/api/owners?q=100%25", viewer))), [
            "srch-acme",
          ])
          assert.deepStrictEqual(slugsOf(ok(yield* call("GET", "/api/owners?q=%25", viewer))), ["srch-acme"])
          assert.deepStrictEqual(slugsOf(ok(yield* call("GET", "/api/owners?q=a_r", viewer))), ["srch-beta"])
          assert.deepStrictEqual(
            ok(yield* call("GET", "/api/owners?q=rentals", viewer)).owners,
            [
              { slug: "srch-beta", name: "Beta_Rentals" },
              { slug: "srch-gamma", name: "GammaxRentals" },
            ],
            "a part of the name, in any case",
          )

          const subs = yield* Effect.forEach([acme, west, beta, gamma], (o) => subscriber({ ownerId: o.id }))
          const endpoints = yield* Effect.forEach(subs, (s, i) =>
            endpoint(s.id, `https://search.example/${i}`, ["policy.created"]),
          )
          yield* query(
            (sql) => sql`
              insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, created_at)
              select e.endpoint_id, 'search-' || e.owner_slug || '-' || i, 'policy.created', e.owner_slug,
                     convert_to('{}', 'UTF8'), 'failed', timestamptz '2026-03-01T00:00:00Z' + i * interval '1 minute'
              from unnest(${endpoints}::bigint[], ${[acme, west, beta, gamma].map((o) => o.slug)}::text[])
                     as e(endpoint_id, owner_slug)
              cross join generate_series(1, 3) i`,
          )
          const ownersOfDeliveries = (filter: string) =>
            Effect.map(call("GET", `/api/deliveries?owner=${filter}&limit=100`, viewer), (answer) =>
              [
                ...new Set<string>(
                  ok(answer).deliveries.map((d: { owner: { slug: string } }) => d.owner.slug),
                ),
              ].sort(),
            )
          assert.deepStrictEqual(yield* ownersOfDeliveries("srch-ac"), ["srch-acme", "srch-acme-west"])
          assert.deepStrictEqual(
            yield* ownersOfDeliveries("SRCH-ACME"),
            ["srch-acme"],
            "an owner's slug names that owner alone",
          )
          assert.deepStrictEqual(yield* ownersOfDeliveries("west"), ["srch-acme-west"])
          assert.deepStrictEqual(yield* ownersOfDeliveries("100%25"), ["srch-acme"])
          assert.deepStrictEqual(yield* ownersOfDeliveries("a_r"), ["srch-beta"])
          assert.deepStrictEqual(yield* ownersOfDeliveries("nobody-at-all"), [])

          const pages = yield* everyPage("/api/deliveries?owner=srch-ac", "deliveries", "id", viewer, 4)
          assert.strictEqual(pages.length, 6, "each owner's deliveries, merged newest first")
          assert.deepStrictEqual(
            pages,
            [...(pages as Array<number>)].sort((a, b) => b - a),
          )
          assert.deepStrictEqual(ok(yield* call("GET", "/api/deliveries/count?owner=srch-ac", viewer)), {
            count: 6,
          })
          const preview = yield* call("POST", "/api/bulk-retries/previews", {
            ...as(ops),
            body: { filter: { owner: "rentals" } },
          })
          assert.strictEqual(preview.status, 201, preview.text)
          assert.strictEqual(preview.body.bulk_retry.total, 6, "Beta_Rentals' and GammaxRentals' deliveries")

          const endpointOwners = ok(yield* call("GET", "/api/endpoints?owner=West", viewer)).endpoints.map(
            (e: { owner: { slug: string } }) => e.owner.slug,
          )
          assert.deepStrictEqual(endpointOwners, ["srch-acme-west"])
        }),
    )

    it.effect("the audit log's action filter matches any part of an action, ignoring case", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const viewer = yield* operatorSession("search-audit@search.test", "viewer")
        for (const action of [
          "find.endpoints.suspend",
          "find.endpoints.set_status",
          "find.x_y",
          "find.xay",
        ]) {
          yield* recordAudit(db, { actor: "cli:search", action, target: `search:${action}` }).pipe(
            Effect.provideService(AuditChannel, "cli"),
          )
        }
        const actions = (filter: string) =>
          Effect.map(call("GET", `/api/audit?action=${filter}`, viewer), (answer) =>
            ok(answer).entries.map((e: { action: string }) => e.action),
          )
        assert.deepStrictEqual(yield* actions("SUSPEND"), ["find.endpoints.suspend"])
        assert.deepStrictEqual(yield* actions("find.endpoints."), [
          "find.endpoints.set_status",
          "find.endpoints.suspend",
        ])
        assert.deepStrictEqual(yield* actions("x_y"), ["find.x_y"], "_ is itself, not any character")
        assert.deepStrictEqual(yield* actions("%25"), [])
      }),
    )

    it.effect("policies are browsed newest first, a page at a time, by status, owner and product", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("search-policies@search.test", "viewer")
        const north = yield* namedOwner("brw-north", "Northern Homes")
        const south = yield* namedOwner("brw-south", "Southern Homes")
        const [card] = yield* query(
          (sql) => sql`
            insert into payment_methods (provider, reference, last4) values ('test', 'browse-card', '4242')
            returning id`,
        )
        // Fourteen policies, alternating owners; every third canceled, every fourth a service deposit.
        const ids = yield* Effect.forEach(
          Array.from({ length: 14 }, (_, i) => i + 1),
          (i) =>
            Effect.map(
              query(
                (sql) => sql`
                insert into policies (policy_number, owner_id, status, product_type, cadence, premium_cents,
                                      payments, coverage_amount_cents, coverage_start_date, coverage_end_date,
                                      payment_method_id, insured_name, premises, unit_name, policy_holder_name,
                                      issued_on)
                values (${`BRW-${i}`}, ${i % 2 === 0 ? north.id : south.id}, ${i % 3 === 0 ? "canceled" : "active"},
                        ${i % 4 === 0 ? "service_deposit" : "security_deposit_insurance"}, 'upfront', 10000, 1,
                        100000, '2026-01-01', '2026-12-31', ${card!.id}, ${`Renter ${i}`}, '1 Main St', '1A',
                        ${`Renter ${i}`}, '2026-01-01')
                returning id`,
              ),
              ([row]) => ({ i, id: `policy_${row!.id}` }),
            ),
        )
        const newest = (keep: (i: number) => boolean) =>
          ids
            .filter((p) => keep(p.i))
            .reverse()
            .map((p) => p.id)

        assert.deepStrictEqual(
          yield* everyPage("/api/policies?", "policies", "id", viewer, 5),
          newest(() => true),
        )
        assert.deepStrictEqual(
          yield* everyPage("/api/policies?status=canceled", "policies", "id", viewer, 2),
          newest((i) => i % 3 === 0),
        )
        assert.deepStrictEqual(
          yield* everyPage("/api/policies?owner=north", "policies", "id", viewer, 3),
          newest((i) => i % 2 === 0),
        )
        assert.deepStrictEqual(
          yield* everyPage("/api/policies?owner=brw-&product=service_deposit", "policies", "id", viewer, 2),
          newest((i) => i % 4 === 0),
        )
        const first = ok(yield* call("GET", "/api/policies?owner=brw-south&status=active&limit=1", viewer))
        assert.deepStrictEqual(first.policies, [
          {
            id: ids[12]!.id,
            policy_number: "BRW-13",
            status: "active",
            product_type: "security_deposit_insurance",
            owner_slug: "brw-south",
            insured_name: "Renter 13",
          },
        ])

        const bad = yield* call("GET", "/api/policies?status=lapsed&product=car", viewer)
        assert.strictEqual(bad.status, 422, bad.text)
        assert.deepStrictEqual(bad.body.filter, {
          status: "must be one of active, upcoming, pending, expired, canceled",
          product: "must be one of security_deposit_insurance, renter_guarantee_insurance, service_deposit",
        })
      }),
    )

    it.effect(
      "secrets show a fingerprint, never the secret; an admin ends a rotation's overlap and the old secret stops signing",
      () =>
        Effect.gen(function* () {
          const viewer = yield* operatorSession("search-secrets-viewer@search.test", "viewer")
          const ops = yield* operatorSession("search-secrets-ops@search.test", "operator")
          const admin = yield* operatorSession("search-secrets-admin@search.test", "admin")
          const receiver = yield* startReceiver
          const owner = yield* namedOwner("fp-owner", "Fingerprint Owner")
          const sub = yield* subscriber({ ownerId: owner.id })
          yield* endpoint(sub.id, receiver.url("/fp"), ["prospect.ready"])
          const fingerprint = (secret: string) =>
            createHash("sha256").update(secret).digest("hex").slice(0, 12)

          const rotated = yield* call("POST", "/api/secrets/rotate", {
            ...as(admin),
            body: { owner: owner.slug, overlap_hours: 24 },
          })
          assert.strictEqual(rotated.status, 201, rotated.text)
          const next = rotated.body.secret as string
          const overview = yield* call("GET", "/api/secrets", viewer)
          const shown = ok(overview).subscribers.find(
            (s: { owner: { slug: string } | null }) => s.owner?.slug === owner.slug,
          )
          assert.deepStrictEqual(
            shown.secrets.map((s: { fingerprint: string }) => s.fingerprint),
            [fingerprint(next), fingerprint(sub.secret)],
          )
          for (const secret of [next, sub.secret]) {
            assert.notInclude(overview.text, secret)
            assert.notInclude(overview.text, secret.slice("whsec_".length))
          }

          const deliveredSince = (count: number) =>
            eventually(
              Effect.sync(() => receiver.received("/fp")),
              (received) => received.length >= count,
            ).pipe(Effect.map((received) => received[count - 1]!))
          yield* publishEvent("prospect.ready", owner.slug, examplePayload("prospect.ready"))
          const during = yield* deliveredSince(1)
          assert.deepStrictEqual(
            verifySignature(during.headers, during.body, [next, sub.secret]).verifiedBy,
            [next, sub.secret],
          )

          const refused = yield* call("POST", "/api/secrets/end-overlap", {
            ...as(ops),
            body: { owner: owner.slug },
          })
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.text, FORBIDDEN)

          const ended = yield* call("POST", "/api/secrets/end-overlap", {
            ...as(admin),
            body: { owner: owner.slug },
          })
          assert.deepStrictEqual(ok(ended), { ended: 1 })
          assert.notInclude(ended.text, next)
          const after = ok(yield* call("GET", "/api/secrets", viewer)).subscribers.find(
            (s: { owner: { slug: string } | null }) => s.owner?.slug === owner.slug,
          )
          assert.deepStrictEqual(
            after.secrets.map((s: { fingerprint: string }) => s.fingerprint),
            [fingerprint(next)],
          )

          yield* publishEvent("prospect.ready", owner.slug, examplePayload("prospect.ready"))
          const later = yield* deliveredSince(2)
          const check = verifySignature(later.headers, later.body, [next, sub.secret])
          assert.deepStrictEqual(check.verifiedBy, [next], "only the new secret signs")
          assert.lengthOf(check.signatures, 1)

          const [audit] = yield* query(
            (sql) => sql<Array<{ actor: string; channel: string; before: unknown; after: unknown }>>`
              select actor, channel, before, after from audit_log
              where action = 'webhook_secrets.end_overlap' and target = ${`owner:${owner.slug}`}`,
          )
          assert.strictEqual(audit!.actor, "search-secrets-admin@search.test")
          assert.strictEqual(audit!.channel, "console")
          assert.lengthOf((audit!.before as { previous_expires_at: Array<string> }).previous_expires_at, 1)

          const again = yield* call("POST", "/api/secrets/end-overlap", {
            ...as(admin),
            body: { owner: owner.slug },
          })
          assert.strictEqual(again.status, 422, again.text)
          assert.deepStrictEqual(again.body.secret, {
            base: "owner:fp-owner has no rotation overlap to end: one secret signs its deliveries",
          })
          const neither = yield* call("POST", "/api/secrets/end-overlap", { ...as(admin), body: {} })
          assert.strictEqual(neither.status, 422, neither.text)
          assert.deepStrictEqual(neither.body.secret, { base: "name exactly one of owner and provider" })
        }),
    )
  })
})
