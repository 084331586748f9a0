import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  CustomHeadersAnswer,
  EndpointAnswer,
  EndpointsAnswer,
  EventsAnswer,
  RetryAnswer,
  RotateAnswer,
  SecretAnswer,
  TestAnswer,
} from "../../backend/portal/Api.ts"
import { Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import type { SubscriberRef } from "../../backend/webhooks/Domain.ts"
import { authEnv, authService } from "../support/Auth.ts"
import {
  call,
  decode,
  openSession,
  ownerSessions,
  ownerWithEndpoint,
  providerSessions,
  type Session,
} from "../support/Portal.ts"
import {
  api,
  createEndpoint,
  insertDelivery,
  ownerEndpoints,
  provisionProvider,
  providerEndpoints,
  query,
  webhookPartner,
} from "../support/Webhooks.ts"

const env = authEnv({ ROLES: "partner-api,portal", PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.test" })
const service = authService({ env })

interface AuditRow {
  readonly actor: string
  readonly channel: string
  readonly action: string
  readonly target: string
  readonly details: Record<string, unknown>
}

/** The audit entries the session wrote, oldest first. */
const auditOf = (session: Session) =>
  query(
    (sql) => sql<Array<AuditRow>>`
      select actor, channel, action, target, details from audit_log
      where actor = ${`portal:${session.id}`} order by id`,
  ).pipe(Effect.map((rows) => [...rows]))

const endpointRow = (id: number) =>
  query(
    (sql) => sql<Array<{ name: string; status: string; suspension_reason: string | null; deleted: boolean }>>`
      select name, status, suspension_reason, deleted_at is not null as deleted
      from webhook_endpoints where id = ${id}`,
  ).pipe(Effect.map(([row]) => row!))

const deliveryCount = query(
  (sql) => sql<Array<{ count: number }>>`select count(*)::int as count from webhook_deliveries`,
).pipe(Effect.map(([row]) => row!.count))

const setFirstHeaders = (ref: SubscriberRef, headers: Record<string, string>) =>
  Secrets.use((secrets) => secrets.setHeaders(ref, { headers, problems: [] }, "test")).pipe(
    Effect.provide(Secrets.layer),
    Effect.orDie,
  )

const ENDPOINT = {
  name: "Portal hook",
  destination_url: "https://hooks.example.com/portal",
  events: ["policy.created"],
}

describe("portal changes", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("creates, edits, pauses, resumes and deletes the owner's endpoints, each change audited", () =>
      Effect.gen(function* () {
        yield* ownerWithEndpoint("chg-crud")
        const partner = yield* webhookPartner({ owners: ["chg-crud"] })
        const session = yield* openSession(partner, ownerSessions("chg-crud"))

        const created = yield* call(session, "POST", "/portal/api/endpoints", {
          body: { ...ENDPOINT, status: "disabled", unknown: true },
        })
        assert.strictEqual(created.status, 201, created.text)
        const endpoint = decode(EndpointAnswer, created).endpoint
        assert.deepInclude(
          endpoint,
          { ...ENDPOINT, status: "active" },
          "status is not the portal's to set here",
        )
        assert.deepInclude(endpoint.last_hour, { attempts: 0, success_rate: null, p95_ms: null })
        const listed = decode(EndpointsAnswer, yield* call(session, "GET", "/portal/api/endpoints")).endpoints
        assert.include(
          listed.map((e) => e.id),
          endpoint.id,
        )

        const path = `/portal/api/endpoints/${endpoint.id}`
        const edited = yield* call(session, "PUT", path, { body: { name: "Renamed", status: "disabled" } })
        assert.strictEqual(edited.status, 200, edited.text)
        assert.deepInclude(decode(EndpointAnswer, edited).endpoint, {
          name: "Renamed",
          destination_url: ENDPOINT.destination_url,
          status: "active",
        })

        const paused = yield* call(session, "POST", `${path}/pause`)
        assert.strictEqual(paused.status, 200, paused.text)
        assert.strictEqual(decode(EndpointAnswer, paused).endpoint.status, "disabled")
        assert.deepInclude(yield* endpointRow(endpoint.id), {
          status: "disabled",
          suspension_reason: "Paused in the partner portal",
        })
        const resumed = yield* call(session, "POST", `${path}/resume`)
        assert.strictEqual(resumed.status, 200, resumed.text)
        assert.strictEqual(decode(EndpointAnswer, resumed).endpoint.status, "active")
        assert.deepInclude(yield* endpointRow(endpoint.id), { status: "active", suspension_reason: null })

        const removed = yield* call(session, "DELETE", path)
        assert.strictEqual(removed.status, 204, removed.text)
        assert.isTrue((yield* endpointRow(endpoint.id)).deleted)
        assert.strictEqual((yield* call(session, "PUT", path, { body: { name: "Again" } })).status, 404)
        assert.strictEqual((yield* call(session, "POST", `${path}/pause`)).status, 404)

        const entries = yield* auditOf(session)
        assert.deepStrictEqual(
          entries.map((entry) => entry.action),
          [
            "endpoints.create",
            "endpoints.update",
            "endpoints.set_status",
            "endpoints.set_status",
            "endpoints.delete",
          ],
        )
        for (const entry of entries) {
          assert.strictEqual(entry.channel, "portal")
          assert.strictEqual(entry.target, `endpoint:${endpoint.id}`)
          assert.strictEqual(entry.details.owner, "chg-crud")
        }
      }),
    )

    it.effect("sends a test of a catalog event with its example, and retries a delivery", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("chg-test")
        const session = yield* openSession(a.partner, ownerSessions("chg-test"))
        const path = `/portal/api/endpoints/${a.endpoint.id}/test`

        const sent = yield* call(session, "POST", path, { body: { event: "prospect.ready" } })
        assert.strictEqual(sent.status, 202, sent.text)
        const delivery = decode(TestAnswer, sent).delivery
        assert.deepInclude(delivery, {
          event_type: "prospect.ready",
          status: "pending",
          owner_slug: "chg-test",
        })
        assert.strictEqual(delivery.endpoint.id, a.endpoint.id)
        const [stored] = yield* query(
          (sql) => sql<Array<{ event_id: string; payload: Buffer }>>`
            select event_id, payload from webhook_deliveries where id = ${delivery.id}`,
        )
        assert.match(stored!.event_id, /^test:[0-9a-f-]{36}$/)
        const catalog = decode(EventsAnswer, yield* call(session, "GET", "/portal/api/events")).events
        assert.deepStrictEqual(
          JSON.parse(stored!.payload.toString("utf8")),
          catalog.find((event) => event.name === "prospect.ready")!.example,
          "the body is the catalog's example as the event list shows it",
        )

        for (const body of [{ event: "webhook.test" }, { event: "policy.nope" }, {}, { event: 1 }]) {
          const refused = yield* call(session, "POST", path, { body })
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.body.status_code, 422)
          assert.deepStrictEqual(Object.keys(refused.body.errors as object), ["event"])
        }

        const failed = yield* insertDelivery(a.endpoint.id, {
          status: "failed",
          attempt_number: 5,
          last_attempt_failure_reason: "http_status",
        })
        const retried = yield* call(session, "POST", `/portal/api/deliveries/${failed}/retry`)
        assert.strictEqual(retried.status, 202, retried.text)
        // A retry by hand is a new series waiting for its first attempt, which the lists show as `retrying`.
        assert.deepInclude(decode(RetryAnswer, retried).delivery, {
          id: failed,
          status: "retrying",
          attempt_number: 1,
        })
        assert.strictEqual(
          (yield* call(session, "POST", "/portal/api/deliveries/999999999/retry")).status,
          404,
        )

        const gone = yield* createEndpoint(a.partner, ownerEndpoints("chg-test"), ENDPOINT)
        const ofGone = yield* insertDelivery(gone.id, { status: "failed" })
        const removed = yield* api(a.partner, "DELETE", `${ownerEndpoints("chg-test")}/${gone.id}`)
        assert.strictEqual(removed.status, 204, removed.text)
        const refusedRetry = yield* call(session, "POST", `/portal/api/deliveries/${ofGone}/retry`)
        assert.strictEqual(refusedRetry.status, 422, refusedRetry.text)
        assert.match(refusedRetry.body.error as string, /endpoint was deleted/)
        assert.strictEqual(
          (yield* call(session, "POST", `/portal/api/endpoints/${gone.id}/test`, {
            body: { event: "policy.created" },
          })).status,
          404,
          "a deleted endpoint is tested no more",
        )

        const entries = yield* auditOf(session)
        assert.deepStrictEqual(
          entries.map((entry) => [entry.action, entry.target]),
          [
            ["endpoints.send_test", `endpoint:${a.endpoint.id}`],
            ["deliveries.retry", `delivery:${failed}`],
          ],
        )
        for (const entry of entries) assert.deepInclude(entry, { channel: "portal" })
        assert.deepInclude(entries[0]!.details, { owner: "chg-test", event: "prospect.ready" })
        assert.deepInclude(entries[1]!.details, { owner: "chg-test", endpoint_id: a.endpoint.id })
      }),
    )

    it.effect("shows custom header names, and changes them only once the operators set some", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("chg-headers")
        const session = yield* openSession(a.partner, ownerSessions("chg-headers"))
        const path = `/portal/api/endpoints/${a.endpoint.id}/headers`

        const none = yield* call(session, "GET", path)
        assert.strictEqual(none.status, 200, none.text)
        assert.deepStrictEqual(decode(CustomHeadersAnswer, none).names, [])
        const refused = yield* call(session, "PUT", path, { body: { custom_headers: { "X-Api-Key": "k" } } })
        assert.strictEqual(refused.status, 422, refused.text)
        assert.deepStrictEqual(Object.keys(refused.body.errors as object), ["custom_headers"])

        yield* setFirstHeaders({ kind: "owner", slug: "chg-headers" }, { "X-Api-Key": "first" })
        assert.deepStrictEqual(decode(CustomHeadersAnswer, yield* call(session, "GET", path)).names, [
          "X-Api-Key",
        ])
        assert.notInclude((yield* call(session, "GET", path)).text, "first", "values are never shown")

        const set = yield* call(session, "PUT", path, {
          body: { custom_headers: { "X-Api-Key": null, "X-Tenant": "t-1" } },
        })
        assert.strictEqual(set.status, 200, set.text)
        assert.sameMembers([...decode(CustomHeadersAnswer, set).names], ["X-Api-Key", "X-Tenant"])
        assert.notInclude(set.text, "first")
        const [stored] = yield* query(
          (sql) => sql<Array<{ custom_headers: Record<string, string> }>>`
            select s.custom_headers from webhook_subscribers s join owners o on o.id = s.owner_id
            where o.slug = 'chg-headers'`,
        )
        assert.deepStrictEqual(stored!.custom_headers, { "X-Api-Key": "first", "X-Tenant": "t-1" })

        for (const body of [
          { custom_headers: { "Content-Type": "text/plain" } },
          { custom_headers: { "X-New": null } },
          { custom_headers: "X-Api-Key: k" },
          {},
        ]) {
          const bad = yield* call(session, "PUT", path, { body })
          assert.strictEqual(bad.status, 422, `${JSON.stringify(body)}: ${bad.text}`)
          assert.deepStrictEqual(Object.keys(bad.body.errors as object), ["custom_headers"])
        }

        const entries = yield* auditOf(session)
        assert.deepStrictEqual(
          entries.map((entry) => entry.action),
          ["webhook_headers.set"],
        )
        assert.deepInclude(entries[0]!, { channel: "portal", target: "owner:chg-headers" })
        assert.deepInclude(entries[0]!.details, { owner: "chg-headers" })
      }),
    )

    it.effect("shows the secret's age, never the secret, and rotates it with an overlap", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("chg-secret")
        const session = yield* openSession(a.partner, ownerSessions("chg-secret"))

        const shown = yield* call(session, "GET", "/portal/api/secret")
        assert.strictEqual(shown.status, 200, shown.text)
        const before = decode(SecretAnswer, shown)
        assert.isString(before.created_at)
        assert.isNull(before.previous_expires_at)
        assert.strictEqual(before.max_overlap_hours, 720)
        assert.notInclude(shown.text, "whsec_")

        for (const overlap of [-1, 721, 1.5, "24", null]) {
          const bad = yield* call(session, "POST", "/portal/api/secret/rotate", {
            body: { overlap_hours: overlap },
          })
          assert.strictEqual(bad.status, 422, `${overlap}: ${bad.text}`)
          assert.deepStrictEqual(Object.keys(bad.body.errors as object), ["overlap_hours"])
        }

        const rotated = yield* call(session, "POST", "/portal/api/secret/rotate", {
          body: { overlap_hours: 24 },
        })
        assert.strictEqual(rotated.status, 201, rotated.text)
        assert.strictEqual(rotated.headers.get("cache-control"), "no-store")
        const answer = decode(RotateAnswer, rotated)
        assert.match(answer.secret, /^whsec_/)
        assert.isString(answer.previous_expires_at)
        const after = decode(SecretAnswer, yield* call(session, "GET", "/portal/api/secret"))
        assert.strictEqual(after.created_at, answer.created_at)
        assert.strictEqual(after.previous_expires_at, answer.previous_expires_at)

        const entries = yield* auditOf(session)
        assert.deepStrictEqual(
          entries.map((entry) => entry.action),
          ["webhook_secrets.rotate"],
        )
        assert.deepInclude(entries[0]!, { channel: "portal", target: "owner:chg-secret" })
        assert.deepInclude(entries[0]!.details, { owner: "chg-secret", overlap_seconds: 24 * 3600 })
      }),
    )

    it.effect(
      "refuses every change to a read-only session and without the CSRF token, changing nothing",
      () =>
        Effect.gen(function* () {
          const a = yield* ownerWithEndpoint("chg-readonly")
          yield* setFirstHeaders({ kind: "owner", slug: "chg-readonly" }, { "X-Api-Key": "k" })
          const failed = yield* insertDelivery(a.endpoint.id, { status: "failed" })
          const readOnly = yield* openSession(a.partner, ownerSessions("chg-readonly"), { read_only: true })
          const session = yield* openSession(a.partner, ownerSessions("chg-readonly"))
          const id = a.endpoint.id
          const changes: ReadonlyArray<readonly [string, string, unknown]> = [
            ["POST", "/portal/api/endpoints", ENDPOINT],
            ["PUT", `/portal/api/endpoints/${id}`, { name: "Changed" }],
            ["DELETE", `/portal/api/endpoints/${id}`, undefined],
            ["POST", `/portal/api/endpoints/${id}/pause`, undefined],
            ["POST", `/portal/api/endpoints/${id}/resume`, undefined],
            ["PUT", `/portal/api/endpoints/${id}/headers`, { custom_headers: { "X-Api-Key": "changed" } }],
            ["POST", `/portal/api/endpoints/${id}/test`, { event: "policy.created" }],
            ["POST", `/portal/api/deliveries/${failed}/retry`, undefined],
            ["POST", "/portal/api/secret/rotate", { overlap_hours: 1 }],
          ]
          const deliveriesBefore = yield* deliveryCount
          for (const [method, path, body] of changes) {
            const refused = yield* call(readOnly, method, path, { body })
            assert.strictEqual(refused.status, 403, `${method} ${path}: ${refused.text}`)
            assert.match(refused.body.error as string, /read only/)
            const noToken = yield* call(session, method, path, { body, csrf: null })
            assert.strictEqual(noToken.status, 403, `${method} ${path} without CSRF: ${noToken.text}`)
            const wrongToken = yield* call(session, method, path, { body, csrf: readOnly.csrf })
            assert.strictEqual(
              wrongToken.status,
              403,
              `${method} ${path} with another's CSRF: ${wrongToken.text}`,
            )
          }
          assert.deepInclude(yield* endpointRow(id), {
            name: "chg-readonly hook",
            status: "active",
            deleted: false,
          })
          assert.strictEqual(yield* deliveryCount, deliveriesBefore)
          const [delivery] = yield* query(
            (sql) =>
              sql<Array<{ status: string }>>`select status from webhook_deliveries where id = ${failed}`,
          )
          assert.strictEqual(delivery!.status, "failed")
          const listed = decode(
            EndpointsAnswer,
            yield* call(session, "GET", "/portal/api/endpoints"),
          ).endpoints
          assert.deepStrictEqual(
            listed.map((e) => e.id),
            [id],
          )
          assert.deepStrictEqual(yield* auditOf(readOnly), [])
          assert.deepStrictEqual(yield* auditOf(session), [])
          // Reads stay open to a read-only session.
          assert.strictEqual(
            (yield* call(readOnly, "GET", `/portal/api/endpoints/${id}/headers`)).status,
            200,
          )
          assert.strictEqual((yield* call(readOnly, "GET", "/portal/api/secret")).status, 200)
        }),
    )

    it.effect("answers 404 for another holder's endpoint or delivery, as for an unknown one", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("chg-own-a")
        const b = yield* ownerWithEndpoint("chg-own-b")
        yield* setFirstHeaders({ kind: "owner", slug: "chg-own-b" }, { "X-Api-Key": "b" })
        const theirs = yield* insertDelivery(b.endpoint.id, { status: "failed" })
        const session = yield* openSession(a.partner, ownerSessions("chg-own-a"))
        const attempts = (id: number | string, delivery: number | string) =>
          [
            ["PUT", `/portal/api/endpoints/${id}`, { name: "Taken" }],
            ["DELETE", `/portal/api/endpoints/${id}`, undefined],
            ["POST", `/portal/api/endpoints/${id}/pause`, undefined],
            ["POST", `/portal/api/endpoints/${id}/resume`, undefined],
            ["GET", `/portal/api/endpoints/${id}/headers`, undefined],
            ["PUT", `/portal/api/endpoints/${id}/headers`, { custom_headers: { "X-Api-Key": "a" } }],
            ["POST", `/portal/api/endpoints/${id}/test`, { event: "policy.created" }],
            ["POST", `/portal/api/deliveries/${delivery}/retry`, undefined],
          ] as const
        const unknown = attempts(999_999_999, 999_999_999)
        const others = attempts(b.endpoint.id, theirs)
        for (const [index, [method, path, body]] of others.entries()) {
          const answer = yield* call(session, method, path, { body })
          const unknownAnswer = yield* call(session, unknown[index]![0], unknown[index]![1], {
            body: unknown[index]![2],
          })
          assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, unknownAnswer.body, `${method} ${path} tells nothing more`)
        }
        assert.deepInclude(yield* endpointRow(b.endpoint.id), {
          name: "chg-own-b hook",
          status: "active",
          deleted: false,
        })
        const [delivery] = yield* query(
          (sql) => sql<Array<{ status: string }>>`select status from webhook_deliveries where id = ${theirs}`,
        )
        assert.strictEqual(delivery!.status, "failed")
        assert.deepStrictEqual(yield* auditOf(session), [])
      }),
    )

    it.effect(
      "a provider's session changes only the provider's endpoints, its audit naming the provider",
      () =>
        Effect.gen(function* () {
          const owner = yield* ownerWithEndpoint("chg-covered")
          yield* provisionProvider("chg-co", { owners: ["chg-covered"] })
          const partner = yield* webhookPartner({ provider: "chg-co" })
          const ofProvider = yield* createEndpoint(partner, providerEndpoints("chg-co"), {
            name: "Provider hook",
            destination_url: "https://hooks.example.com/provider",
            events: ["policy.created"],
          })
          const ownerDelivery = yield* insertDelivery(owner.endpoint.id, { status: "failed" })
          const session = yield* openSession(partner, providerSessions("chg-co"))

          assert.strictEqual(
            (yield* call(session, "POST", `/portal/api/endpoints/${owner.endpoint.id}/pause`)).status,
            404,
          )
          assert.strictEqual(
            (yield* call(session, "POST", `/portal/api/deliveries/${ownerDelivery}/retry`)).status,
            404,
          )
          const paused = yield* call(session, "POST", `/portal/api/endpoints/${ofProvider.id}/pause`)
          assert.strictEqual(paused.status, 200, paused.text)
          const created = yield* call(session, "POST", "/portal/api/endpoints", { body: ENDPOINT })
          assert.strictEqual(created.status, 201, created.text)
          const listed = decode(
            EndpointsAnswer,
            yield* call(session, "GET", "/portal/api/endpoints"),
          ).endpoints
          assert.sameMembers(
            listed.map((e) => e.id),
            [ofProvider.id, decode(EndpointAnswer, created).endpoint.id],
          )
          const sent = yield* call(session, "POST", `/portal/api/endpoints/${ofProvider.id}/test`, {
            body: { event: "policy.created" },
          })
          assert.strictEqual(sent.status, 202, sent.text)
          assert.strictEqual(decode(TestAnswer, sent).delivery.endpoint.id, ofProvider.id)
          assert.strictEqual((yield* endpointRow(owner.endpoint.id)).status, "active")

          const entries = yield* auditOf(session)
          assert.deepStrictEqual(
            entries.map((entry) => entry.action),
            ["endpoints.set_status", "endpoints.create", "endpoints.send_test"],
          )
          for (const entry of entries) {
            assert.strictEqual(entry.channel, "portal")
            assert.deepInclude(entry.details, { provider: "chg-co" })
            assert.notProperty(entry.details, "owner")
          }
        }),
    )

    it.effect(
      "names each bad field of an endpoint body as the Partner API does, and refuses bodies not JSON",
      () =>
        Effect.gen(function* () {
          const a = yield* ownerWithEndpoint("chg-invalid")
          const session = yield* openSession(a.partner, ownerSessions("chg-invalid"))
          const cases: ReadonlyArray<Record<string, unknown>> = [
            {},
            { name: "", destination_url: "http://hooks.example.com/x", events: [] },
            { name: "Hook", destination_url: "https://user:pw@hooks.example.com/x", events: ["nope"] },
            { name: 12, destination_url: "https://127.0.0.1/x", events: "policy.created" },
          ]
          for (const body of cases) {
            const portal = yield* call(session, "POST", "/portal/api/endpoints", { body })
            const partner = yield* api(a.partner, "POST", ownerEndpoints("chg-invalid"), { endpoint: body })
            assert.strictEqual(portal.status, 422, portal.text)
            assert.strictEqual(partner.status, 422, partner.text)
            assert.strictEqual(portal.body.error, "Invalid endpoint params.")
            const partnerFields = partner.body!.endpoint as Record<string, string>
            assert.deepStrictEqual(
              portal.body.errors,
              Object.fromEntries(Object.entries(partnerFields).map(([field, message]) => [field, [message]])),
              JSON.stringify(body),
            )
          }
          const edit = yield* call(session, "PUT", `/portal/api/endpoints/${a.endpoint.id}`, {
            body: { events: ["nope"], destination_url: "ftp://x" },
          })
          assert.strictEqual(edit.status, 422, edit.text)
          assert.strictEqual(edit.body.error, "Endpoint invalid.")
          assert.sameMembers(Object.keys(edit.body.errors as object), ["events", "destination_url"])

          for (const [method, path] of [
            ["POST", "/portal/api/endpoints"],
            ["PUT", `/portal/api/endpoints/${a.endpoint.id}`],
            ["PUT", `/portal/api/endpoints/${a.endpoint.id}/headers`],
            ["POST", `/portal/api/endpoints/${a.endpoint.id}/test`],
            ["POST", "/portal/api/secret/rotate"],
          ] as const) {
            for (const body of ["{", "[1]", '"text"', "null", ""]) {
              const answer = yield* call(session, method, path, { body })
              assert.strictEqual(
                answer.status,
                422,
                `${method} ${path} ${JSON.stringify(body)}: ${answer.text}`,
              )
              assert.strictEqual(answer.body.status_code, 422)
              assert.deepStrictEqual(Object.keys(answer.body.errors as object), ["base"])
            }
          }
          assert.deepStrictEqual(yield* auditOf(session), [])
        }),
    )
  })
})
