import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { backoffUnits, retryAfterMs } from "../../backend/webhooks/delivery/Backoff.ts"
import { decide } from "../../backend/webhooks/delivery/Delivery.ts"
import {
  describeFailure,
  FAILURE_REASON_LIMIT,
  isForbiddenAddress,
} from "../../backend/webhooks/delivery/Egress.ts"
import { Endpoints } from "../../backend/webhooks/endpoints/Endpoints.ts"
import { startReceiver } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import {
  attemptsOf,
  awaitDeliveries,
  deliveriesOf,
  endpoint,
  engineService,
  examplePayload,
  owner,
  publishEvent,
  query,
  subscriber,
  verifySignature,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

describe("retry policy and egress rules", () => {
  it("waits min(2^k, 3600) units before attempt k", () => {
    assert.deepStrictEqual([2, 3, 4, 11, 12, 25].map(backoffUnits), [4, 8, 16, 2048, 3600, 3600])
  })

  it("schedules the attempt after a failed attempt k at min(2^(k+1), 3600) units past its end; the 25th fails for good", () => {
    const policy = { maxAttempts: 25, backoffUnitMs: 7 }
    const finishedAt = Date.parse("2026-01-10T10:00:00Z")
    const failure = {
      _tag: "Response",
      statusCode: 500,
      retryAfter: undefined,
      body: "",
      durationMs: 3,
    } as const
    for (let k = 1; k < 25; k++) {
      const decided = decide(failure, k, finishedAt, policy)
      assert.strictEqual(decided.status, "retrying")
      assert.strictEqual(decided.attemptNumber, k + 1)
      assert.strictEqual(
        decided.nextRetryAt,
        finishedAt + Math.min(2 ** (k + 1), 3600) * 7,
        `after attempt ${k}`,
      )
      assert.strictEqual(decided.failureReason, "Destination answered 500")
    }
    const last = decide(failure, 25, finishedAt, policy)
    assert.deepInclude(last, { status: "failed", attemptNumber: 25, nextRetryAt: null })
    // A Retry-After longer than the backoff postpones the attempt; a shorter one does not hasten it.
    const busy = (retryAfter: string) =>
      decide({ ...failure, statusCode: 503, retryAfter }, 1, finishedAt, policy).nextRetryAt
    assert.strictEqual(busy("120"), finishedAt + 120_000)
    assert.strictEqual(busy("0"), finishedAt + 4 * 7)
  })

  it("reads Retry-After as seconds or an HTTP date, capped at one hour", () => {
    const now = Date.parse("2026-01-10T10:00:00Z")
    assert.strictEqual(retryAfterMs("120", now), 120_000)
    assert.strictEqual(retryAfterMs("Sat, 10 Jan 2026 10:00:30 GMT", now), 30_000)
    assert.strictEqual(retryAfterMs("Sat, 10 Jan 2026 09:00:00 GMT", now), 0)
    assert.strictEqual(retryAfterMs("999999", now), 3_600_000)
    assert.isUndefined(retryAfterMs("soon", now))
    assert.isUndefined(retryAfterMs(undefined, now))
  })

  it("records a failure's text without control characters and at most FAILURE_REASON_LIMIT long", () => {
    // A certificate chaining to a trusted CA, with a NUL in its name and no subjectAltName: Node quotes the name.
    const mismatch = Object.assign(
      new Error("Hostname/IP does not match certificate's altnames: evil\u0000name"),
      {
        code: "ERR_TLS_CERT_ALTNAME_INVALID",
      },
    )
    assert.strictEqual(
      describeFailure(mismatch),
      "Request failed: Hostname/IP does not match certificate's altnames: evil\ufffdname (ERR_TLS_CERT_ALTNAME_INVALID)",
    )
    const manyNames = describeFailure(new Error(`altnames: ${"DNS:a.example, ".repeat(5000)}\u001b[2J`))
    assert.strictEqual(manyNames.length, FAILURE_REASON_LIMIT)
    assert.isTrue(manyNames.endsWith("…"))
    assert.strictEqual(
      describeFailure(new Error("line one\n\tline two")),
      "Request failed: line one\n\tline two",
    )
    const parserCheck = Object.assign(new Error("The expression evaluated to a falsy value"), {
      code: "ERR_ASSERTION",
    })
    assert.strictEqual(
      describeFailure(parserCheck),
      "Request failed: the HTTP client could not read the answer",
    )
  })

  it("refuses private, loopback, link-local, CGNAT, metadata and unspecified addresses, v4 and v6", () => {
    for (const address of [
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "127.0.0.1",
      "169.254.169.254",
      "100.100.100.200",
      "0.0.0.0",
      "::",
      "::1",
      "fe80::1",
      "fd00:ec2::254",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::10.0.0.1",
    ]) {
      assert.isTrue(isForbiddenAddress(address), address)
    }
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      assert.isFalse(isForbiddenAddress(address), address)
    }
  })
})

const service = engineService()

describe("delivery actor", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("merges custom headers first and never lets them override Content-Type or X-Webhook-*", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const acme = yield* owner("acme-headers")
        const sub = yield* subscriber(
          { ownerId: acme.id },
          {
            "X-Partner-Key": "abc123",
            "content-type": "text/plain",
            "X-Webhook-Event": "forged",
            "x-webhook-signature": "t=1,v1=00",
            "X-WEBHOOK-DELIVERY": "9",
            "X-Webhook-Extra": "nope",
          },
        )
        const id = yield* endpoint(sub.id, receiver.url("/headers"), ["policy.updated"])
        yield* publishEvent("policy.updated", acme.slug, examplePayload("policy.updated"))
        const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
        const [request] = receiver.received("/headers")
        assert.strictEqual(request!.headers["x-partner-key"], "abc123")
        assert.strictEqual(request!.headers["content-type"], "application/json")
        assert.strictEqual(request!.headers["x-webhook-event"], "policy.updated")
        assert.strictEqual(request!.headers["x-webhook-delivery"], row!.id)
        assert.isUndefined(request!.headers["x-webhook-extra"])
        assert.deepStrictEqual(verifySignature(request!.headers, request!.body, [sub.secret]).verifiedBy, [
          sub.secret,
        ])
        const names = request!.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
        for (const name of ["content-type", "x-webhook-event", "x-webhook-signature", "x-webhook-delivery"]) {
          assert.strictEqual(names.filter((n) => n === name).length, 1, name)
        }
      }).pipe(Effect.scoped),
    )

    it.effect(
      "counts no response within the timeout as a failed attempt, and records every attempt's outcome",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-timeout", "/slow", ["policy.canceled"])
          const big = "x".repeat(10_000)
          receiver.respond("/slow", (_, index) =>
            index === 0
              ? { status: 200, delayMs: 3000 }
              : index === 1
                ? { status: 500, body: big }
                : { status: 204 },
          )
          yield* publishEvent("policy.canceled", acme.slug, examplePayload("policy.canceled"))
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
          assert.strictEqual(row!.attempt_number, 3)
          assert.isNull(row!.last_attempt_failure_reason)
          assert.isNotNull(row!.delivered_at)
          const attempts = yield* attemptsOf(row!.id)
          assert.deepStrictEqual(
            attempts.map((a) => [a.attempt_number, a.status_code, a.failure_reason]),
            [
              [1, null, "No response within 2000 ms"],
              [2, 500, "Destination answered 500"],
              [3, 204, null],
            ],
          )
          assert.isAtLeast(attempts[0]!.duration_ms!, 1900)
          assert.strictEqual(attempts[1]!.response_body, big.slice(0, 4096))
          const ids = receiver.received("/slow").map((r) => r.headers["x-webhook-delivery"])
          assert.deepStrictEqual(ids, [row!.id, row!.id, row!.id])
        }).pipe(Effect.scoped),
    )

    it.effect(
      "claims an attempt in place: the lease is written, status and next_retry_at stay, no index is touched",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-claim", "/held", ["policy.expired"])
          receiver.respond("/held", () => ({ status: 200, delayMs: 1500 }))
          const hotUpdates = query(
            (sql) => sql<Array<{ n: number }>>`
              select n_tup_hot_upd::int as n from pg_stat_user_tables where relname = 'webhook_deliveries'`,
          ).pipe(Effect.map(([row]) => row!.n))
          const before = yield* hotUpdates
          yield* publishEvent("policy.expired", acme.slug, examplePayload("policy.expired"))
          yield* eventually(
            Effect.sync(() => receiver.received("/held").length),
            (n) => n === 1,
          )
          const [held] = yield* query(
            (sql) => sql<Array<{ status: string; next_retry_at: Date | null; leased: boolean }>>`
              select status, next_retry_at, lease_until > now() as leased from webhook_deliveries
              where endpoint_id = ${id}`,
          )
          assert.deepStrictEqual(held, { status: "pending", next_retry_at: null, leased: true })
          // Each backend reports its counts within a second or so of going idle.
          yield* eventually(hotUpdates, (n) => n > before)
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
          const [lease] = yield* query(
            (sql) => sql`select lease_until from webhook_deliveries where id = ${row!.id}`,
          )
          assert.isNull(lease!.lease_until, "the record ends the lease")
        }).pipe(Effect.scoped),
    )

    it.effect("does not follow redirects", () =>
      Effect.gen(function* () {
        const {
          receiver,
          owner: acme,
          endpointId: id,
        } = yield* receiverEndpoint("acme-redirect", "/moved", ["delinquency.resolved"])
        receiver.respond("/moved", (_, index) =>
          index === 0 ? { status: 302, headers: { location: receiver.url("/elsewhere") } } : { status: 200 },
        )
        yield* publishEvent("delinquency.resolved", acme.slug, examplePayload("delinquency.resolved"))
        const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
        const attempts = yield* attemptsOf(row!.id)
        assert.strictEqual(attempts[0]!.failure_reason, "Destination answered 302")
        assert.deepStrictEqual(receiver.received("/elsewhere"), [])
      }).pipe(Effect.scoped),
    )

    it.effect("postpones the next attempt to Retry-After on 429 and 503", () =>
      Effect.gen(function* () {
        const {
          receiver,
          owner: acme,
          endpointId: id,
        } = yield* receiverEndpoint("acme-retry-after", "/busy", ["policy.created"])
        receiver.respond("/busy", (_, index) =>
          index === 0
            ? { status: 429, headers: { "retry-after": "2" } }
            : index === 1
              ? { status: 503, headers: { "retry-after": "1" } }
              : { status: 200 },
        )
        yield* publishEvent("policy.created", acme.slug, examplePayload("policy.created"))
        const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
        assert.strictEqual(row!.attempt_number, 3)
        const at = receiver.received("/busy").map((r) => r.at)
        // Without Retry-After the unit of 5 ms would retry after 20 ms and 40 ms.
        assert.isAtLeast(at[1]! - at[0]!, 1990)
        assert.isAtLeast(at[2]! - at[1]!, 990)
      }).pipe(Effect.scoped),
    )

    it.effect(
      "disables an endpoint that answers 410 Gone and fails its undelivered deliveries without more requests",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            subscriber: sub,
            endpointId: id,
          } = yield* receiverEndpoint("acme-gone", "/gone", ["policy.created", "policy.updated"])
          receiver.respond("/gone", (request) =>
            JSON.parse(request.body.toString()).event === "policy.created"
              ? { status: 503, headers: { "retry-after": "30" } }
              : { status: 410 },
          )
          yield* publishEvent("policy.created", acme.slug, examplePayload("policy.created"))
          yield* awaitDeliveries(id, (rows) => rows[0]?.status === "retrying")
          yield* publishEvent("policy.updated", acme.slug, examplePayload("policy.updated"))
          const rows = yield* awaitDeliveries(
            id,
            (rows) => rows.length === 2 && rows.every((r) => r.status === "failed"),
          )
          for (const row of rows) {
            assert.strictEqual(row.last_attempt_failure_reason, "Destination answered 410 Gone")
            assert.isNull(row.next_retry_at)
          }
          const shown = yield* Endpoints.use((endpoints) =>
            endpoints.get({ kind: "owner", slug: acme.slug }, String(id)),
          )
          assert.deepStrictEqual(
            { status: shown.status, suspension_reason: shown.suspension_reason },
            {
              status: "disabled",
              suspension_reason: "Destination answered 410 Gone",
            },
          )
          const attempts = yield* attemptsOf(rows[1]!.id)
          assert.deepStrictEqual(
            attempts.map((a) => a.status_code),
            [410],
          )
          // A control endpoint of the subscriber, subscribed too: the router writes every delivery of an event in
          // one statement, so once the control's is delivered the disabled endpoint got none.
          const control = yield* endpoint(sub.id, receiver.url("/gone-control"), ["policy.updated"])
          yield* publishEvent("policy.updated", acme.slug, examplePayload("policy.updated"))
          yield* awaitDeliveries(control, (rows) => rows[0]?.status === "delivered")
          assert.strictEqual((yield* deliveriesOf(id)).length, 2)
          assert.strictEqual(receiver.received("/gone").length, 2)
        }).pipe(Effect.scoped),
    )
  })
})

const guarded = engineService({ WEBHOOK_ALLOW_PRIVATE_DESTINATIONS: "false" })

describe("delivery egress outside development", () => {
  layer(guarded.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("refuses destinations resolving to internal addresses and records why", () =>
      Effect.gen(function* () {
        const {
          receiver,
          owner: acme,
          subscriber: sub,
          endpointId: literal,
        } = yield* receiverEndpoint("acme-egress", "/literal", ["move_out.initiated"])
        const named = yield* endpoint(sub.id, receiver.url("/named").replace("127.0.0.1", "localhost"), [
          "move_out.initiated",
        ])
        yield* publishEvent("move_out.initiated", acme.slug, examplePayload("move_out.initiated"))
        for (const id of [literal, named]) {
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "retrying")
          assert.match(
            row!.last_attempt_failure_reason ?? "",
            /^Destination refused: (.* resolves to (127\.0\.0\.1|::1), a private, loopback, link-local or metadata address|localhost is a localhost name)$/,
          )
          const [attempt] = yield* attemptsOf(row!.id)
          assert.isNull(attempt!.status_code)
        }
        assert.deepStrictEqual(receiver.received(), [])
      }).pipe(Effect.scoped),
    )
  })
})
