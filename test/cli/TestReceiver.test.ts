import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { request } from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { testReceiverCaFile } from "../../backend/webhooks/delivery/Egress.ts"
import { runCli, startCli } from "../support/Cli.ts"
import { PRODUCTION } from "../support/TestPlatform.ts"
import {
  awaitDeliveries,
  endpoint,
  engineService,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
} from "../support/WebhookEngine.ts"

/** A data folder with no receiver CA yet: the workers below start before the receiver makes one. */
const dataDir = mkdtempSync(join(tmpdir(), "partner-test-receiver-"))
const service = engineService({ PARTNER_DATA_DIR: dataDir, WEBHOOK_EXTRA_CA_FILE: "" })

/** POSTs `body` to the receiver as a delivery would arrive, trusting only the receiver's CA. */
const postTo = (url: string, headers: Record<string, string>, body: string) =>
  Effect.callback<number>((resume) => {
    const sent = request(
      url,
      { method: "POST", headers, ca: readFileSync(testReceiverCaFile(dataDir), "utf8") },
      (response) => {
        response.resume()
        response.on("end", () => resume(Effect.succeed(response.statusCode ?? 0)))
      },
    )
    sent.on("error", (error) => resume(Effect.die(error)))
    sent.end(body)
  })

describe("npm run cli -- webhooks test-receiver", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    it.effect(
      "prints its URL, then each delivery with its signature checked, and the running service trusts it unrestarted",
      () =>
        Effect.gen(function* () {
          assert.isFalse(existsSync(testReceiverCaFile(dataDir)), "no CA before the receiver runs")
          const receiver = yield* startCli(service.env, "webhooks", "test-receiver")
          yield* receiver.waitFor("stdout", /^https:\/\/127\.0\.0\.1:\d+\/\n/)
          const url = receiver.stdout().split("\n")[0]!

          const acme = yield* owner("receiver-acme")
          const sub = yield* subscriber({ ownerId: acme.id })
          const endpointId = yield* endpoint(sub.id, url, ["prospect.ready"])
          yield* publishEvent("prospect.ready", acme.slug, examplePayload("prospect.ready"))
          const [delivery] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "delivered")
          yield* receiver.waitFor("stdout", /signature/)
          assert.strictEqual(receiver.stdout(), `${url}\nprospect.ready ${delivery!.id} signature valid\n`)

          const forged = yield* postTo(
            url,
            {
              "X-Webhook-Event": "prospect.ready",
              "X-Webhook-Delivery": delivery!.id,
              "X-Webhook-Signature": `t=1700000000,v1=${"0".repeat(64)}`,
            },
            "{}",
          )
          assert.strictEqual(forged, 200)
          yield* receiver.waitFor("stdout", /signature invalid/)
          assert.include(receiver.stdout(), `prospect.ready ${delivery!.id} signature invalid\n`)
          assert.strictEqual(yield* receiver.stop, 0)
        }),
    )

    it.effect("is refused in production and makes no certificate", () =>
      Effect.gen(function* () {
        const productionDir = mkdtempSync(join(tmpdir(), "partner-test-receiver-production-"))
        const run = yield* runCli(
          {
            ...service.env,
            ...PRODUCTION,
            PARTNER_DATA_DIR: productionDir,
          },
          "webhooks",
          "test-receiver",
        )
        assert.strictEqual(run.code, 2, run.stderr)
        assert.match(run.stderr, /refused with SERVICE_ENV=production/)
        assert.strictEqual(run.stdout, "")
        assert.isFalse(existsSync(testReceiverCaFile(productionDir)))
      }),
    )
  })
})
