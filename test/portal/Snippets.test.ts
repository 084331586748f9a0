import { assert, describe, it as plain, layer } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { SIGNING_HEADERS } from "../../backend/portal/Http.ts"
import { overlapExample, SNIPPET_LANGUAGES, verificationSnippet } from "../../console/src/portal/snippets.ts"
import type { Received } from "../support/Receiver.ts"
import {
  addSecret,
  awaitDeliveries,
  engineService,
  examplePayload,
  publishEvent,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

/*
 * The portal's "verify signatures" snippets, checked against real deliveries: the Node and Python ones run (the
 * way a receiver would call them) on what a receiver got from the service, with the right secret, a wrong one and
 * a changed body; the other languages are shown with the session's header names.
 */

const engine = engineService()

/** What each harness is given on stdin: a request as the receiver got it, and the secret to check with. */
interface Check {
  readonly body: Buffer
  readonly headers: Readonly<Record<string, string>>
  readonly secret: string
}

const input = (check: Check) =>
  JSON.stringify({ body: check.body.toString("base64"), headers: check.headers, secret: check.secret })

const nodeHarness = `${verificationSnippet("node", SIGNING_HEADERS)}
const chunks = []
process.stdin.on("data", (chunk) => chunks.push(chunk))
process.stdin.on("end", () => {
  const { body, headers, secret } = JSON.parse(Buffer.concat(chunks).toString("utf8"))
  process.stdout.write(String(verifyWebhook(Buffer.from(body, "base64"), headers, secret)))
})
`

/** Python receivers read headers case-insensitively (Flask, Django): the harness gives them as they were sent. */
const pythonHarness = `${verificationSnippet("python", SIGNING_HEADERS)}

import base64, json, sys
given = json.load(sys.stdin)
sent = {"${SIGNING_HEADERS.signature}": given["headers"]["${SIGNING_HEADERS.signature.toLowerCase()}"]}
sys.stdout.write(str(verify_webhook(base64.b64decode(given["body"]), sent, given["secret"])).lower())
`

const run = (dir: string, language: "node" | "python", check: Check) => {
  const [command, file, source] =
    language === "node"
      ? [process.execPath, join(dir, "verify.cjs"), nodeHarness]
      : ["python3", join(dir, "verify.py"), pythonHarness]
  writeFileSync(file, source)
  return execFileSync(command, [file], { input: input(check), encoding: "utf8", timeout: 30_000 }).trim()
}

describe("verification snippets", () => {
  layer(engine.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("the Node and Python snippets verify a real delivery and refuse a wrong secret or body", () =>
      Effect.gen(function* () {
        const { receiver, owner, subscriber, endpointId } = yield* receiverEndpoint(
          "snippet-owner",
          "/hooks",
          ["policy.created"],
        )
        yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
        yield* awaitDeliveries(endpointId, (rows) => rows.some((row) => row.status === "delivered"))
        const got: Received = receiver.received("/hooks")[0]!
        assert.match(got.headers["x-webhook-signature"]!, /^t=\d+,v1=[0-9a-f]{64}$/)

        // A second secret, as a rotation's overlap has: the next delivery carries a signature by each.
        const next = yield* addSecret(subscriber.id)
        yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
        yield* awaitDeliveries(
          endpointId,
          (rows) => rows.filter((row) => row.status === "delivered").length === 2,
        )
        const overlapping: Received = receiver.received("/hooks")[1]!
        assert.match(overlapping.headers["x-webhook-signature"]!, /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/)

        const dir = mkdtempSync(join(tmpdir(), "snippets-"))
        try {
          for (const language of ["node", "python"] as const) {
            const verifies = (request: Received, secret: string, body = request.body) =>
              run(dir, language, { body, headers: request.headers, secret })
            assert.strictEqual(verifies(got, subscriber.secret), "true", `${language}: the owner's secret`)
            assert.strictEqual(verifies(got, `${subscriber.secret}x`), "false", `${language}: another secret`)
            const changed = Buffer.from(got.body.toString("utf8").replace("policy.created", "policy.createe"))
            assert.strictEqual(
              verifies(got, subscriber.secret, changed),
              "false",
              `${language}: a changed body`,
            )
            assert.strictEqual(
              verifies(overlapping, subscriber.secret),
              "true",
              `${language}: the previous secret`,
            )
            assert.strictEqual(verifies(overlapping, next), "true", `${language}: the new secret`)
          }
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      }),
    )
  })
})

describe("verification snippets in other languages", () => {
  plain("name the signature header as each language's servers give it", () => {
    const names = {
      node: '"x-webhook-signature"',
      python: '"X-Webhook-Signature"',
      ruby: '"HTTP_X_WEBHOOK_SIGNATURE"',
      php: "'HTTP_X_WEBHOOK_SIGNATURE'",
      go: '"X-Webhook-Signature"',
    }
    for (const language of SNIPPET_LANGUAGES) {
      const snippet = verificationSnippet(language, SIGNING_HEADERS)
      assert.include(snippet, names[language], language)
      assert.include(snippet, "v1=", language)
      assert.include(snippet, "t=", language)
    }
    assert.strictEqual(
      (overlapExample(SIGNING_HEADERS).match(/v1=/g) ?? []).length,
      2,
      "the overlap shows two signatures",
    )
  })
})
