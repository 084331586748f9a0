import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import * as Api from "../../backend/operator/Api.ts"
import { call, consoleService, operatorSession, type SignedIn } from "../support/Operator.ts"
import { endpoint, owner, provider, subscriber } from "../support/WebhookEngine.ts"
import { insertDelivery } from "../support/Webhooks.ts"

const service = consoleService()

/**
 * Calls `path` and checks the answer against `schema`, the declaration the console decodes it with: every field
 * the schema names, of its type, and nothing it does not name.
 */
const answers = (
  schema: Schema.Decoder<unknown>,
  path: string,
  session: SignedIn,
  method = "GET",
  body?: unknown,
) =>
  Effect.gen(function* () {
    const answer = yield* call(method, path, { cookie: session.cookie, csrf: session.csrf, body })
    assert.isBelow(answer.status, 300, `${method} ${path}: ${answer.text}`)
    const decoded = Schema.decodeUnknownExit(schema)(answer.body, { onExcessProperty: "error" })
    assert.isTrue(Exit.isSuccess(decoded), `${method} ${path}: ${answer.text}\n${String(decoded)}`)
    return answer.body
  })

describe("the operator API's answers", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("have exactly the shapes of backend/operator/Api.ts, which the console decodes them with", () =>
      Effect.gen(function* () {
        const admin = yield* operatorSession("admin@api-shapes.test", "admin")
        const acme = yield* owner("api-acme")
        const acmeSub = yield* subscriber({ ownerId: acme.id }, { "X-Tenant": "acme" })
        const pms = yield* provider("api-pms", { owners: [acme.id] })
        yield* subscriber({ providerId: pms })
        const hook = yield* endpoint(acmeSub.id, "https://acme.example/hook", ["policy.created"])
        const delivery = yield* insertDelivery(hook, { status: "retrying", attempt_number: 2 })

        yield* answers(Api.SessionBody, "/api/session", admin)
        yield* answers(Api.OwnersAnswer, "/api/owners?q=api-", admin)
        yield* answers(Api.ProvidersAnswer, "/api/providers", admin)
        yield* answers(Api.EventTypesAnswer, "/api/event-types", admin)
        yield* answers(Api.EndpointPage, "/api/endpoints?owner=api-acme", admin)
        yield* answers(Api.EndpointWithHealth, `/api/endpoints/${hook}`, admin)
        yield* answers(Api.DeliveryPage, "/api/deliveries?owner=api-acme", admin)
        yield* answers(Api.DeliveryCount, "/api/deliveries/count?owner=api-acme", admin)
        yield* answers(Api.DeliveryDetailAnswer, `/api/deliveries/${delivery}`, admin)
        yield* answers(Api.SubscribersAnswer, "/api/secrets", admin)
        yield* answers(Api.RotatedSecret, "/api/secrets/rotate", admin, "POST", {
          owner: "api-acme",
          overlap_hours: 1,
        })
        yield* answers(Api.EndedOverlap, "/api/secrets/end-overlap", admin, "POST", { owner: "api-acme" })
        yield* answers(Api.PoliciesAnswer, "/api/policies?owner=api-", admin)
        yield* answers(Api.OperatorsAnswer, "/api/operators", admin)
        const created = yield* answers(Api.OperatorCreated, "/api/operators", admin, "POST", {
          email: "viewer@api-shapes.test",
          role: "viewer",
        })
        yield* answers(Api.OperatorAnswer, `/api/operators/${created.operator.email}`, admin, "PUT", {
          disabled: true,
        })
        yield* answers(Api.EndpointAnswer, `/api/endpoints/${hook}/headers`, admin, "PUT", {
          custom_headers: { "X-Tenant": "acme-2" },
        })
        yield* answers(
          Api.CustomHeaderValueAnswer,
          `/api/endpoints/${hook}/headers/X-Tenant/reveal`,
          admin,
          "POST",
          {},
        )
        yield* answers(Api.BulkRetryAnswer, "/api/bulk-retries", admin, "POST", {
          filter: { owner: "api-acme" },
          rate_per_second: 5,
        })
        yield* answers(Api.BulkRetriesAnswer, "/api/bulk-retries", admin)
        const audit = yield* answers(Api.AuditPage, "/api/audit", admin)
        assert.isAbove(audit.entries.length, 0)
      }),
    )
  })
})
