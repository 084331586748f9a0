import { randomBytes } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { partnerApiDocument } from "../../backend/reference/ApiReference.ts"
import { WebhookConfig } from "../../backend/webhooks/Config.ts"

type Json = Record<string, unknown>

/** The partner reference, with no routes, on the webhook settings read from `env`. */
const referenceFrom = (env: Record<string, string>) =>
  Effect.provide(
    Effect.map(
      Effect.service(WebhookConfig),
      (webhooks) => partnerApiDocument("https://partners.example.test", [], webhooks) as Json,
    ),
    WebhookConfig.layer.pipe(
      Layer.provide(AppConfig.layerFrom({ MASTER_KEY: randomBytes(32).toString("base64"), ...env })),
    ),
  )

const notDelivered = (document: Json) => {
  const webhooks = document.webhooks as Record<
    string,
    { post: { responses: { default: { description: string } } } }
  >
  return webhooks["prospect.ready"]!.post.responses.default.description
}

const introduction = (document: Json) => (document.info as { description: string }).description

describe("the partner reference's retry policy", () => {
  it.effect("states the default settings: 10 seconds, 2^attempt seconds capped at 1 hour, 25 attempts", () =>
    Effect.gen(function* () {
      const document = yield* referenceFrom({})
      assert.strictEqual(
        notDelivered(document),
        "Not delivered: any other answer (401 when the signature does not verify), or none within 10 seconds, " +
          "is retried with backoff (2^attempt seconds, capped at 1 hour) up to 25 attempts.",
      )
      assert.include(
        introduction(document),
        "Answer 2xx within 10 seconds; anything else is retried with backoff up to 25 attempts.",
      )
    }),
  )

  it.effect(
    "follows WEBHOOK_MAX_ATTEMPTS, WEBHOOK_TIMEOUT_MS and WEBHOOK_BACKOFF_UNIT_MS when they change",
    () =>
      Effect.gen(function* () {
        const document = yield* referenceFrom({
          WEBHOOK_MAX_ATTEMPTS: "5",
          WEBHOOK_TIMEOUT_MS: "3000",
          WEBHOOK_BACKOFF_UNIT_MS: "500",
        })
        assert.strictEqual(
          notDelivered(document),
          "Not delivered: any other answer (401 when the signature does not verify), or none within 3 seconds, " +
            "is retried with backoff (2^attempt × 500 milliseconds, capped at 30 minutes) up to 5 attempts.",
        )
        assert.include(
          introduction(document),
          "Answer 2xx within 3 seconds; anything else is retried with backoff up to 5 attempts.",
        )
        assert.notInclude(JSON.stringify(document), "25 attempts")
      }),
  )
})
