import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EventNames } from "../../backend/events/Catalog.ts"
import { testCa } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { call, consoleService, operatorSession, type SignedIn } from "../support/Operator.ts"
import {
  deliveriesOf,
  endpoint,
  examplePayload,
  owner,
  provider,
  publishEvent,
  query,
  receiverEndpoint,
  subscriber,
  verifySignature,
} from "../support/WebhookEngine.ts"
import { insertDelivery } from "../support/Webhooks.ts"

const service = consoleService({
  ROLES: "console,workers",
  WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
  WEBHOOK_BACKOFF_UNIT_MS: "5",
  WEBHOOK_TIMEOUT_MS: "2000",
})

const auditOf = (target: string) =>
  query(
    (sql) => sql<Array<{ actor: string; channel: string; action: string; before: unknown; after: unknown }>>`
      select actor, channel, action, before, after from audit_log where target = ${target} order by id`,
  ).pipe(Effect.map((rows) => [...rows]))

const sessions = Effect.gen(function* () {
  const suffix = Math.random().toString(36).slice(2, 8)
  return {
    viewer: yield* operatorSession(`viewer-${suffix}@routes.test`, "viewer"),
    operator: yield* operatorSession(`operator-${suffix}@routes.test`, "operator"),
    admin: yield* operatorSession(`admin-${suffix}@routes.test`, "admin"),
  } satisfies Record<string, SignedIn>
})

describe("operator API routes", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("reference data: owners by prefix, providers, the event catalog", () =>
      Effect.gen(function* () {
        const { viewer } = yield* sessions
        yield* owner("ref-acme")
        yield* owner("ref-beta")
        yield* provider("ref-pms", {})
        const owners = yield* call("GET", "/api/owners?q=ref-a", viewer)
        assert.deepStrictEqual(owners.body, { owners: [{ slug: "ref-acme", name: "Owner ref-acme" }] })
        const providers = yield* call("GET", "/api/providers", viewer)
        assert.deepInclude(providers.body.providers, { name: "ref-pms" })
        const events = yield* call("GET", "/api/event-types", viewer)
        assert.deepStrictEqual(events.body, { event_types: [...EventNames] })
      }),
    )

    it.effect("lists endpoints of every owner and provider under filters, by cursor, and shows one", () =>
      Effect.gen(function* () {
        const { viewer } = yield* sessions
        const acme = yield* owner("ep-acme")
        const acmeSub = yield* subscriber({ ownerId: acme.id }, { "X-Tenant": "acme" })
        const pms = yield* provider("ep-pms", { owners: [acme.id] })
        const pmsSub = yield* subscriber({ providerId: pms })
        const first = yield* endpoint(acmeSub.id, "https://acme.example/hook", ["policy.created"])
        const second = yield* endpoint(
          acmeSub.id,
          "https://acme.example/other",
          ["policy.created"],
          "suspended",
        )
        const third = yield* endpoint(pmsSub.id, "https://pms.example/hook", ["policy.created"])
        const page = yield* call("GET", "/api/endpoints?owner=ep-acme&limit=1", viewer)
        assert.strictEqual(page.status, 200, page.text)
        assert.deepStrictEqual(
          page.body.endpoints.map((e: { id: number }) => e.id),
          [second],
        )
        const next = yield* call(
          "GET",
          `/api/endpoints?owner=ep-acme&limit=1&cursor=${page.body.next_cursor}`,
          viewer,
        )
        assert.deepStrictEqual(
          next.body.endpoints.map((e: { id: number }) => e.id),
          [first],
        )
        const shown = next.body.endpoints[0]
        assert.deepStrictEqual(shown.owner, { slug: "ep-acme", name: "Owner ep-acme" })
        assert.isNull(shown.provider)
        assert.deepStrictEqual(shown.custom_headers, { "X-Tenant": null })
        const suspended = yield* call("GET", "/api/endpoints?owner=ep-acme&status=suspended", viewer)
        assert.deepStrictEqual(
          suspended.body.endpoints.map((e: { id: number }) => e.id),
          [second],
        )
        const ofProvider = yield* call("GET", "/api/endpoints?provider=ep-pms", viewer)
        assert.deepStrictEqual(
          ofProvider.body.endpoints.map((e: { id: number; provider: unknown }) => [e.id, e.provider]),
          [[third, { name: "ep-pms" }]],
        )
        const detail = yield* call("GET", `/api/endpoints/${third}`, viewer)
        assert.strictEqual(detail.status, 200)
        assert.strictEqual(detail.body.endpoint.destination_url, "https://pms.example/hook")
        // Health from the endpoint's aggregates: nothing sent yet, every bucket there.
        assert.strictEqual(detail.body.health.waiting, 0)
        assert.strictEqual(detail.body.health.hour.buckets.length, 12)
        assert.strictEqual(detail.body.health.day.buckets.length, 24)
        assert.strictEqual(detail.body.health.hour.attempts, 0)
        assert.isNull(detail.body.health.slowed)
        const missing = yield* call("GET", "/api/endpoints/999999", viewer)
        assert.strictEqual(missing.text, `{"status_code":404,"error":"Endpoint not found."}`)
        const bad = yield* call("GET", "/api/endpoints?status=sleeping&limit=0&cursor=zz", viewer)
        assert.strictEqual(bad.status, 422)
        assert.hasAllKeys(bad.body.filter, ["status", "limit", "cursor"])
      }),
    )

    it.effect("changes an endpoint's status with a reason, audited; suspending and disabling need one", () =>
      Effect.gen(function* () {
        const { operator } = yield* sessions
        const acme = yield* owner("st-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        const id = yield* endpoint(sub.id, "https://st.example/hook", ["policy.created"])
        const put = (body: unknown) => call("PUT", `/api/endpoints/${id}/status`, { ...operator, body })
        const noReason = yield* put({ status: "disabled" })
        assert.strictEqual(noReason.status, 422)
        assert.strictEqual(noReason.body.endpoint.reason, "is required to disable an endpoint")
        const suspendNoReason = yield* put({ status: "suspended", reason: "  " })
        assert.strictEqual(suspendNoReason.status, 422)
        assert.strictEqual(suspendNoReason.body.endpoint.reason, "is required to suspend an endpoint")
        const badStatus = yield* put({ status: "paused" })
        assert.strictEqual(badStatus.status, 422)
        assert.strictEqual((yield* auditOf(`endpoint:${id}`)).length, 0)
        const suspended = yield* put({ status: "suspended", reason: "receiver migrating" })
        assert.strictEqual(suspended.status, 200, suspended.text)
        assert.deepInclude(suspended.body.endpoint, {
          status: "suspended",
          suspension_reason: "receiver migrating",
        })
        const active = yield* put({ status: "active" })
        assert.deepInclude(active.body.endpoint, { status: "active", suspension_reason: null })
        const entries = yield* auditOf(`endpoint:${id}`)
        assert.deepStrictEqual(entries, [
          {
            actor: operator.email,
            channel: "console",
            action: "endpoints.set_status",
            before: { status: "active", suspension_reason: null },
            after: { status: "suspended", suspension_reason: "receiver migrating" },
          },
          {
            actor: operator.email,
            channel: "console",
            action: "endpoints.set_status",
            before: { status: "suspended", suspension_reason: "receiver migrating" },
            after: { status: "active", suspension_reason: null },
          },
        ])
      }),
    )

    it.effect("sends a signed test event that is recorded like any delivery", () =>
      Effect.gen(function* () {
        const { operator } = yield* sessions
        const {
          receiver,
          subscriber: sub,
          endpointId,
        } = yield* receiverEndpoint("tst-acme", "/hook", ["policy.created"])
        const sent = yield* call("POST", `/api/endpoints/${endpointId}/test`, { ...operator, body: {} })
        assert.strictEqual(sent.status, 202, sent.text)
        const deliveryId = sent.body.delivery.id as number
        yield* eventually(deliveriesOf(endpointId), (rows) => rows.some((r) => r.status === "delivered"))
        const [received] = receiver.received("/hook")
        assert.strictEqual(received!.headers["x-webhook-event"], "webhook.test")
        assert.strictEqual(received!.headers["x-webhook-delivery"], String(deliveryId))
        assert.deepStrictEqual(verifySignature(received!.headers, received!.body, [sub.secret]).verifiedBy, [
          sub.secret,
        ])
        const body = JSON.parse(received!.body.toString("utf8"))
        assert.deepInclude(body, { event: "webhook.test", property_owner_slug: "tst-acme" })
        const listed = yield* call("GET", `/api/deliveries?endpoint=${endpointId}`, operator)
        assert.deepStrictEqual(
          listed.body.deliveries.map((d: { id: number; event_type: string }) => [d.id, d.event_type]),
          [[deliveryId, "webhook.test"]],
        )
        const [entry] = yield* auditOf(`endpoint:${endpointId}`)
        assert.deepInclude(entry, {
          action: "endpoints.send_test",
          channel: "console",
          after: { delivery_id: deliveryId },
        })
      }),
    )

    it.effect(
      "holds a test event sent to a suspended endpoint, and sends it once the endpoint is active",
      () =>
        Effect.gen(function* () {
          const { operator } = yield* sessions
          const { receiver, endpointId } = yield* receiverEndpoint("tsh-acme", "/hook", ["policy.created"])
          const put = (body: unknown) =>
            call("PUT", `/api/endpoints/${endpointId}/status`, { ...operator, body })
          assert.strictEqual((yield* put({ status: "suspended", reason: "receiver migrating" })).status, 200)
          const sent = yield* call("POST", `/api/endpoints/${endpointId}/test`, { ...operator, body: {} })
          assert.strictEqual(sent.status, 202, sent.text)
          assert.deepStrictEqual(sent.body, { delivery: { id: sent.body.delivery.id, status: "held" } })
          const shown = yield* call("GET", `/api/deliveries/${sent.body.delivery.id}`, operator)
          assert.strictEqual(shown.body.delivery.status, "held")
          assert.strictEqual(receiver.received("/hook").length, 0)
          assert.strictEqual((yield* put({ status: "active" })).status, 200)
          yield* eventually(deliveriesOf(endpointId), (rows) => rows.some((r) => r.status === "delivered"))
          assert.strictEqual(receiver.received("/hook").length, 1)
        }),
    )

    it.effect(
      "shows an endpoint slowed after 3 timeouts in a row, with its cap, until it answers again",
      () =>
        Effect.gen(function* () {
          const { viewer } = yield* sessions
          const { receiver, owner, endpointId } = yield* receiverEndpoint("slw-acme", "/hook", [
            "policy.created",
          ])
          receiver.respond("/hook", () => ({ status: 200, delayMs: 600_000 }))
          for (let i = 0; i < 4; i++) {
            yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
          }
          const slowedOf = call("GET", `/api/endpoints/${endpointId}`, viewer).pipe(
            Effect.map((shown) => shown.body.health.slowed),
          )
          const slowed = yield* eventually(slowedOf, (s) => s !== null)
          assert.isAtLeast(slowed.timeouts_in_row, 3)
          assert.strictEqual(slowed.max_in_flight, 2)
          receiver.respond("/hook", () => ({ status: 200 }))
          yield* eventually(slowedOf, (s) => s === null)
        }).pipe(Effect.scoped),
    )

    it.effect("retries a delivery by id, as the partner API does, audited", () =>
      Effect.gen(function* () {
        const { operator } = yield* sessions
        const acme = yield* owner("rt-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        // Suspended: the retried delivery is not sent while the test looks at it.
        const id = yield* endpoint(sub.id, "https://rt.example/hook", ["policy.created"], "suspended")
        const delivery = yield* insertDelivery(id, { status: "failed", attempt_number: 25 })
        const retried = yield* call("POST", `/api/deliveries/${delivery}/retry`, { ...operator, body: {} })
        assert.strictEqual(retried.status, 202, retried.text)
        assert.strictEqual(retried.body.delivery.id, delivery)
        assert.strictEqual(retried.body.delivery.attempt_number, 1)
        // Waiting for the first attempt of its new series: `retrying` in the console (`pending` to partners).
        assert.strictEqual(retried.body.delivery.status, "retrying")
        const [row] = yield* query(
          (sql) => sql`select series, attempt_number from webhook_deliveries where id = ${delivery}`,
        )
        assert.deepStrictEqual({ ...row }, { series: 2, attempt_number: 1 })
        const [entry] = yield* auditOf(`delivery:${delivery}`)
        assert.deepInclude(entry, {
          actor: operator.email,
          channel: "console",
          action: "deliveries.retry",
          before: { status: "failed", attempt_number: 25 },
        })
        const missing = yield* call("POST", "/api/deliveries/987654/retry", { ...operator, body: {} })
        assert.strictEqual(missing.text, `{"status_code":404,"error":"Delivery not found."}`)
      }),
    )

    it.effect("starts, lists, shows and cancels a bulk retry (operator), audited", () =>
      Effect.gen(function* () {
        const { operator, viewer } = yield* sessions
        const acme = yield* owner("bk-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        // Suspended, and at one a second: the job is still running when it is canceled.
        const id = yield* endpoint(sub.id, "https://bk.example/hook", ["policy.created"], "suspended")
        for (let i = 0; i < 100; i++) yield* insertDelivery(id, { status: "failed", attempt_number: 25 })
        yield* insertDelivery(id, { status: "delivered" })
        const filter = { endpoint: String(id), status: "failed" }
        const count = yield* call("GET", `/api/deliveries/count?endpoint=${id}&status=failed`, viewer)
        assert.deepStrictEqual(count.body, { count: 100 })
        const empty = yield* call("POST", "/api/bulk-retries", { ...operator, body: { filter: {} } })
        assert.strictEqual(empty.status, 422)
        assert.isString(empty.body.bulk_retry.filter)
        const created = yield* call("POST", "/api/bulk-retries", {
          ...operator,
          body: { filter, rate_per_second: 1 },
        })
        assert.strictEqual(created.status, 201, created.text)
        const job = created.body.bulk_retry
        assert.deepInclude(job, { total: 100, status: "running", created_by: operator.email })
        const listed = yield* call("GET", "/api/bulk-retries", viewer)
        assert.include(
          listed.body.bulk_retries.map((j: { id: number }) => j.id),
          job.id,
        )
        const shown = yield* call("GET", `/api/bulk-retries/${job.id}`, viewer)
        assert.strictEqual(shown.body.bulk_retry.id, job.id)
        const canceled = yield* call("POST", `/api/bulk-retries/${job.id}/cancel`, { ...operator, body: {} })
        assert.strictEqual(canceled.status, 200, canceled.text)
        assert.strictEqual(canceled.body.bulk_retry.status, "canceled")
        // A finished job answers unchanged, and nothing more is recorded.
        const again = yield* call("POST", `/api/bulk-retries/${job.id}/cancel`, { ...operator, body: {} })
        assert.strictEqual(again.body.bulk_retry.status, "canceled")
        const entries = yield* auditOf(`bulk_retry:${job.id}`)
        assert.deepStrictEqual(
          entries.map((e) => [e.actor, e.channel, e.action]),
          [
            [operator.email, "console", "bulk_retries.create"],
            [operator.email, "console", "bulk_retries.cancel"],
          ],
        )
        assert.deepInclude(entries[0]!.after as object, { total: 100, rate_per_second: 1 })
        const missing = yield* call("GET", "/api/bulk-retries/999999", viewer)
        assert.strictEqual(missing.text, `{"status_code":404,"error":"Bulk retry not found."}`)
      }),
    )

    it.effect("sets custom headers by the CLI's rules (admin), audited by name only", () =>
      Effect.gen(function* () {
        const { admin } = yield* sessions
        const acme = yield* owner("hd-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        const id = yield* endpoint(sub.id, "https://hd.example/hook", ["policy.created"])
        const put = (custom_headers: unknown) =>
          call("PUT", `/api/endpoints/${id}/headers`, { ...admin, body: { custom_headers } })
        const refused = yield* put({ "Content-Type": "text/plain" })
        assert.strictEqual(refused.status, 422)
        assert.isString(refused.body.endpoint.custom_headers)
        const set = yield* put({ "X-Api-Key": "k-123" })
        assert.strictEqual(set.status, 200, set.text)
        assert.deepStrictEqual(set.body.endpoint.custom_headers, { "X-Api-Key": null })
        assert.notInclude(set.text, "k-123")
        const [entry] = yield* auditOf("owner:hd-acme")
        assert.deepInclude(entry, {
          actor: admin.email,
          channel: "console",
          action: "webhook_headers.set",
          before: { names: [] },
          after: { names: ["X-Api-Key"] },
        })
        assert.notInclude(JSON.stringify(entry), "k-123")
      }),
    )

    it.effect(
      "shows viewers and operators custom header names, never a value, on endpoints and deliveries",
      () =>
        Effect.gen(function* () {
          const { viewer, operator } = yield* sessions
          const acme = yield* owner("mask-acme")
          const sub = yield* subscriber({ ownerId: acme.id }, { "X-Api-Key": "receiver-credential-1" })
          const id = yield* endpoint(sub.id, "https://mask.example/hook", ["policy.created"])
          const delivery = yield* insertDelivery(id, { status: "failed", attempt_number: 25 })
          for (const who of [viewer, operator]) {
            const answers = [
              yield* call("GET", "/api/endpoints?owner=mask-acme", who),
              yield* call("GET", `/api/endpoints/${id}`, who),
              yield* call("GET", `/api/deliveries?endpoint=${id}`, who),
              yield* call("GET", `/api/deliveries/${delivery}`, who),
            ]
            for (const answer of answers) {
              assert.strictEqual(answer.status, 200, answer.text)
              assert.notInclude(answer.text, "receiver-credential-1")
            }
            assert.deepStrictEqual(answers[1]!.body.endpoint.custom_headers, { "X-Api-Key": null })
            assert.isNull(answers[3]!.body.delivery.request_headers["x-api-key"])
          }
          const suspended = yield* call("PUT", `/api/endpoints/${id}/status`, {
            ...operator,
            body: { status: "suspended", reason: "maintenance" },
          })
          assert.strictEqual(suspended.status, 200, suspended.text)
          assert.notInclude(suspended.text, "receiver-credential-1")
        }),
    )

    it.effect("reveals one custom header's value to an admin on purpose, audited by name only", () =>
      Effect.gen(function* () {
        const { viewer, operator, admin } = yield* sessions
        const acme = yield* owner("reveal-acme")
        const sub = yield* subscriber({ ownerId: acme.id }, { "X-Api-Key": "receiver-credential-2" })
        const id = yield* endpoint(sub.id, "https://reveal.example/hook", ["policy.created"])
        const reveal = (who: SignedIn, name: string) =>
          call("POST", `/api/endpoints/${id}/headers/${encodeURIComponent(name)}/reveal`, {
            ...who,
            body: {},
          })
        const shown = yield* call("GET", `/api/endpoints/${id}`, admin)
        assert.deepStrictEqual(shown.body.endpoint.custom_headers, { "X-Api-Key": null })
        for (const who of [viewer, operator]) {
          const refused = yield* reveal(who, "X-Api-Key")
          assert.strictEqual(refused.status, 403)
          assert.notInclude(refused.text, "receiver-credential-2")
        }
        assert.deepStrictEqual(yield* auditOf("owner:reveal-acme"), [])
        const revealed = yield* reveal(admin, "x-api-key")
        assert.strictEqual(revealed.status, 200, revealed.text)
        assert.deepStrictEqual(revealed.body, {
          header: { name: "X-Api-Key", value: "receiver-credential-2" },
        })
        assert.strictEqual(revealed.headers.get("cache-control"), "no-store")
        const entries = yield* auditOf("owner:reveal-acme")
        assert.deepStrictEqual(
          entries.map((e) => [e.actor, e.channel, e.action, e.after]),
          [[admin.email, "console", "webhook_headers.reveal", null]],
        )
        const [details] = yield* query(
          (sql) => sql<Array<{ details: unknown }>>`
            select details from audit_log where target = 'owner:reveal-acme'`,
        )
        assert.deepStrictEqual(details!.details, { name: "X-Api-Key", endpoint_id: id })
        const missing = yield* reveal(admin, "X-Other")
        assert.strictEqual(missing.text, `{"status_code":404,"error":"Custom header not found."}`)
        const noEndpoint = yield* call("POST", "/api/endpoints/999999/headers/X-Api-Key/reveal", {
          ...admin,
          body: {},
        })
        assert.strictEqual(noEndpoint.status, 404)
        assert.strictEqual((yield* auditOf("owner:reveal-acme")).length, 1)
      }),
    )

    it.effect(
      "keeps a stored header value sent back masked, and refuses a masked value it has none for",
      () =>
        Effect.gen(function* () {
          const { admin } = yield* sessions
          const acme = yield* owner("keep-acme")
          const sub = yield* subscriber({ ownerId: acme.id }, { "X-Api-Key": "receiver-credential-3" })
          const id = yield* endpoint(sub.id, "https://keep.example/hook", ["policy.created"])
          const put = (custom_headers: unknown) =>
            call("PUT", `/api/endpoints/${id}/headers`, { ...admin, body: { custom_headers } })
          const stored = query(
            (sql) => sql<Array<{ custom_headers: Record<string, string> }>>`
            select custom_headers from webhook_subscribers where id = ${sub.id}`,
          ).pipe(Effect.map(([row]) => row!.custom_headers))
          const refused = yield* put({ "X-Api-Key": null, "X-Unknown": null })
          assert.strictEqual(refused.status, 422)
          assert.include(refused.body.endpoint.custom_headers, '"X-Unknown" has no stored value to keep')
          assert.deepStrictEqual(yield* stored, { "X-Api-Key": "receiver-credential-3" })
          const kept = yield* put({ "X-Api-Key": null, "X-Tenant": "keep" })
          assert.strictEqual(kept.status, 200, kept.text)
          assert.deepStrictEqual(kept.body.endpoint.custom_headers, { "X-Api-Key": null, "X-Tenant": null })
          assert.deepStrictEqual(yield* stored, { "X-Api-Key": "receiver-credential-3", "X-Tenant": "keep" })
        }),
    )

    it.effect("lists active secrets without their values and rotates one (admin), shown once", () =>
      Effect.gen(function* () {
        const { admin, viewer } = yield* sessions
        const acme = yield* owner("sc-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        const rotated = yield* call("POST", "/api/secrets/rotate", {
          ...admin,
          body: { owner: "sc-acme", overlap_hours: 24 },
        })
        assert.strictEqual(rotated.status, 201, rotated.text)
        assert.match(rotated.body.secret, /^whsec_/)
        assert.isString(rotated.body.previous_expires_at)
        const listed = yield* call("GET", "/api/secrets", viewer)
        const mine = listed.body.subscribers.find(
          (s: { owner: { slug: string } | null }) => s.owner?.slug === "sc-acme",
        )
        assert.strictEqual(mine.secrets.length, 2)
        assert.isNull(mine.secrets[0].expires_at)
        assert.isString(mine.secrets[1].expires_at)
        assert.notInclude(listed.text, rotated.body.secret)
        assert.notInclude(listed.text, sub.secret)
        const [entry] = yield* auditOf("owner:sc-acme")
        assert.deepInclude(entry, {
          actor: admin.email,
          channel: "console",
          action: "webhook_secrets.rotate",
        })
        assert.notInclude(JSON.stringify(entry), rotated.body.secret)
        const both = yield* call("POST", "/api/secrets/rotate", {
          ...admin,
          body: { owner: "sc-acme", provider: "x", overlap_hours: 1 },
        })
        assert.strictEqual(both.status, 422)
        const unknown = yield* call("POST", "/api/secrets/rotate", {
          ...admin,
          body: { owner: "sc-nobody", overlap_hours: 1 },
        })
        assert.strictEqual(unknown.status, 404)
      }),
    )

    it.effect(
      "manages operators (admin): create with a generated password, change role, never lock oneself out",
      () =>
        Effect.gen(function* () {
          const { admin } = yield* sessions
          const created = yield* call("POST", "/api/operators", {
            ...admin,
            body: { email: "new@routes.test", role: "viewer" },
          })
          assert.strictEqual(created.status, 201, created.text)
          assert.deepInclude(created.body.operator, {
            email: "new@routes.test",
            role: "viewer",
            disabled: false,
          })
          const signIn = yield* call("POST", "/api/session", {
            body: { email: "new@routes.test", password: created.body.password },
          })
          assert.strictEqual(signIn.status, 200)
          const dup = yield* call("POST", "/api/operators", {
            ...admin,
            body: { email: "NEW@routes.test", role: "viewer" },
          })
          assert.strictEqual(dup.status, 422)
          assert.match(dup.body.operator.email, /already exists/)
          const promoted = yield* call("PUT", "/api/operators/new%40routes.test", {
            ...admin,
            body: { role: "operator" },
          })
          assert.strictEqual(promoted.body.operator.role, "operator")
          const self = yield* call("PUT", `/api/operators/${encodeURIComponent(admin.email)}`, {
            ...admin,
            body: { disabled: true },
          })
          assert.strictEqual(self.status, 422)
          const listed = yield* call("GET", "/api/operators", admin)
          assert.deepInclude(
            listed.body.operators.map((o: { email: string; role: string }) => [o.email, o.role]),
            ["new@routes.test", "operator"],
          )
          assert.notInclude(listed.text, "scrypt")
          const entries = yield* auditOf("operator:new@routes.test")
          assert.deepStrictEqual(
            entries.map((e) => [e.actor, e.channel, e.action]),
            [
              [admin.email, "console", "operators.create"],
              [admin.email, "console", "operators.set_role"],
            ],
          )
        }),
    )

    it.effect(
      "refuses an operator email that is not an address with 422 naming email, and stores nothing",
      () =>
        Effect.gen(function* () {
          const { admin } = yield* sessions
          const refused = [
            "<script>alert(1)</script>@routes.test",
            "<b>bold</b>@routes.test",
            '"quoted"@routes.test',
            "two words@routes.test",
            "tab\there@routes.test",
            "a@localhost",
            "a@routes",
            "a@@routes.test",
            "a@b@routes.test",
            "@routes.test",
            "a@",
            "a.@routes.test",
            "a..b@routes.test",
            "a@routes..test",
            "a@-routes.test",
            "a@routes.test.",
            "a@[127.0.0.1]",
            "a@127.0.0.1",
            "zoë@routes.test",
            "a\u200b@routes.test",
            "a@routes.tést",
            `${"a".repeat(65)}@routes.test`,
            `a@${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.${"e".repeat(60)}.f.example`,
            42,
          ]
          for (const email of refused) {
            const answer = yield* call("POST", "/api/operators", {
              ...admin,
              body: { email, role: "viewer" },
            })
            assert.strictEqual(answer.status, 422, `${JSON.stringify(email)}: ${answer.text}`)
            assert.deepStrictEqual(Object.keys(answer.body.operator), ["email"], JSON.stringify(email))
            assert.match(answer.body.operator.email, /^email must be an address such as name@example\.com/)
          }
          const listed = yield* call("GET", "/api/operators", admin)
          assert.notInclude(listed.text, "<")
          assert.notInclude(listed.text, "localhost")
          const updated = yield* call("PUT", `/api/operators/${encodeURIComponent("<b>x</b>@routes.test")}`, {
            ...admin,
            body: { role: "viewer" },
          })
          assert.strictEqual(updated.status, 422, updated.text)
          assert.hasAllKeys(updated.body.operator, ["email"])
          for (const email of [
            "o'brien+ops@mail.example.co.uk",
            "ops_1@xn--bcher-kva.example",
            "A.B-c@Routes.Test",
          ]) {
            const answer = yield* call("POST", "/api/operators", {
              ...admin,
              body: { email, role: "viewer" },
            })
            assert.strictEqual(answer.status, 201, `${email}: ${answer.text}`)
          }
        }),
    )
  })
})
