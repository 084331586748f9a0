import { createHmac } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import {
  customHeaders,
  deliveryHeaders,
  sign,
  signatureHeader,
  verifySignature,
} from "../../backend/webhooks/delivery/Signer.ts"

const utf8 = (text: string) => new TextEncoder().encode(text)
const BODY = utf8('{"event":"policy.created"}')
const TIMESTAMP = 1_700_000_000
/** HMAC-SHA256 of `1700000000.{"event":"policy.created"}`, computed apart from the service (openssl dgst -hmac). */
const NEWEST = "897c23fe72b4505fe51695ebfc3c1fe12dde37e8b82b591c11cfda89be2b4181"
const OLDER = "c5faa20d955c9d557fbd7828fe28ec7414cb5871d67cd9aa7ce7a4b2456880ab"

/** What a receiver following the spec computes: hex HMAC-SHA256 keyed with the secret of `<t>.<raw body>`. */
const receiverSignature = (secret: string, timestamp: number, body: Uint8Array) =>
  createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(Buffer.concat([Buffer.from(`${timestamp}.`), body]))
    .digest("hex")

describe("a delivery's signature", () => {
  it("is the lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the secret", () => {
    assert.strictEqual(sign("whsec_test", TIMESTAMP, BODY), NEWEST)
    assert.strictEqual(sign("whsec_older", TIMESTAMP, BODY), OLDER)
  })

  it("keys with the secret's UTF-8 bytes and signs the body's bytes as sent", () => {
    const body = utf8('{"name":"Zoë"}')
    const expected = "d54638ccaad0b61fe9dd8af391e43c8cd0c21871e8f468d8f8276636768c91b2"
    assert.strictEqual(sign("clé_é", TIMESTAMP, body), expected)
    assert.strictEqual(receiverSignature("clé_é", TIMESTAMP, body), expected)
  })

  it("carries the timestamp and one v1 per active secret, newest first", () => {
    assert.strictEqual(
      signatureHeader(["whsec_test", "whsec_older"], TIMESTAMP, BODY),
      `t=${TIMESTAMP},v1=${NEWEST},v1=${OLDER}`,
    )
    assert.strictEqual(signatureHeader(["whsec_test"], TIMESTAMP, BODY), `t=${TIMESTAMP},v1=${NEWEST}`)
  })
})

describe("verifying a signature as a receiver does", () => {
  const header = `t=${TIMESTAMP},v1=${NEWEST},v1=${OLDER}`

  it("accepts the header for a receiver holding either secret of a rotation", () => {
    assert.isTrue(verifySignature(header, BODY, ["whsec_test"]))
    assert.isTrue(verifySignature(header, BODY, ["whsec_older"]))
    assert.isTrue(verifySignature(header, BODY, ["whsec_other", "whsec_older"]))
    assert.isTrue(verifySignature(` t=${TIMESTAMP} , v1=${NEWEST} `, BODY, ["whsec_test"]))
    assert.isTrue(verifySignature(`v1=${OLDER},t=${TIMESTAMP}`, BODY, ["whsec_older"]))
  })

  it("refuses another secret, another body and another timestamp", () => {
    assert.isFalse(verifySignature(header, BODY, ["whsec_other"]))
    assert.isFalse(verifySignature(header, BODY, []))
    assert.isFalse(verifySignature(header, utf8('{"event":"policy.updated"}'), ["whsec_test"]))
    assert.isFalse(verifySignature(`t=${TIMESTAMP + 1},v1=${NEWEST}`, BODY, ["whsec_test"]))
  })

  it("refuses a header without a readable timestamp or a well-formed v1", () => {
    for (const malformed of [
      `v1=${NEWEST}`,
      `t=,v1=${NEWEST}`,
      `t=17e8,v1=${NEWEST}`,
      `t=x${TIMESTAMP},v1=${NEWEST}`,
      `t=${TIMESTAMP}x,v1=${NEWEST}`,
      `t=1234567890123,v1=${receiverSignature("whsec_test", 1234567890123, BODY)}`,
      `t=${TIMESTAMP}`,
      `t=${TIMESTAMP},v0=${NEWEST}`,
      `t=${TIMESTAMP},v1=${NEWEST.toUpperCase()}`,
      `t=${TIMESTAMP},v1=${NEWEST.slice(0, 62)}`,
      `t=${TIMESTAMP},v1=${NEWEST}00`,
      `t=${TIMESTAMP},v1=x${NEWEST.slice(1)}`,
      `t=${TIMESTAMP},x=1,v1=${NEWEST}z`,
    ])
      assert.isFalse(verifySignature(malformed, BODY, ["whsec_test"]), malformed)
  })

  it("takes a timestamp of up to twelve digits", () => {
    const timestamp = 999_999_999_999
    const signed = `t=${timestamp},v1=${receiverSignature("whsec_test", timestamp, BODY)}`
    assert.isTrue(verifySignature(signed, BODY, ["whsec_test"]))
    assert.isTrue(verifySignature(`t=7,v1=${receiverSignature("whsec_test", 7, BODY)}`, BODY, ["whsec_test"]))
  })
})

describe("a delivery's headers", () => {
  const input = {
    event: "policy.created",
    deliveryId: 42,
    timestamp: TIMESTAMP,
    secrets: ["whsec_test", "whsec_older"],
    body: BODY,
  }

  it("are the spec's five, the signature over the body with the timestamp it names", () => {
    assert.deepStrictEqual(deliveryHeaders({ ...input, custom: null }), {
      "Content-Type": "application/json",
      "X-Webhook-Event": "policy.created",
      "X-Webhook-Delivery": "42",
      "X-Webhook-Timestamp": String(TIMESTAMP),
      "X-Webhook-Signature": `t=${TIMESTAMP},v1=${NEWEST},v1=${OLDER}`,
    })
  })

  it("merge the custom headers first; those cannot override Content-Type or any X-Webhook-* header", () => {
    const headers = deliveryHeaders({
      ...input,
      custom: {
        Authorization: "Bearer abc",
        "content-type": "text/plain",
        "X-Webhook-Signature": "t=1,v1=forged",
        "x-webhook-anything": "no",
      },
    })
    assert.deepStrictEqual(Object.keys(headers), [
      "Authorization",
      "Content-Type",
      "X-Webhook-Event",
      "X-Webhook-Delivery",
      "X-Webhook-Timestamp",
      "X-Webhook-Signature",
    ])
    assert.strictEqual(headers["Authorization"], "Bearer abc")
    assert.strictEqual(headers["Content-Type"], "application/json")
    assert.strictEqual(headers["X-Webhook-Signature"], `t=${TIMESTAMP},v1=${NEWEST},v1=${OLDER}`)
  })
})

describe("the operator's custom headers", () => {
  it("keep string values under names no reserved header has", () => {
    assert.deepStrictEqual(customHeaders({ "X-Tenant": "acme", Authorization: "Bearer abc" }), {
      "X-Tenant": "acme",
      Authorization: "Bearer abc",
    })
    assert.deepStrictEqual(customHeaders({ "X-Count": 3, "X-Flag": true, "X-Nested": { a: "b" } }), {})
  })

  it("drop the service's own headers and those of the connection or the body's framing, in any case", () => {
    const reserved = [
      "Content-Type",
      "X-WEBHOOK-Event",
      "x-webhook-",
      "Content-Length",
      "Transfer-Encoding",
      "Connection",
      "Keep-Alive",
      "Upgrade",
      "Expect",
      "HOST",
      "TE",
    ]
    assert.deepStrictEqual(
      customHeaders(Object.fromEntries([...reserved.map((name) => [name, "x"]), ["X-Webhooks", "kept"]])),
      { "X-Webhooks": "kept" },
    )
  })

  it("are none when the configuration is not an object of headers", () => {
    for (const configured of [null, undefined, "X-Tenant: acme", 7, ["X-Tenant", "acme"]])
      assert.deepStrictEqual(customHeaders(configured), {}, String(configured))
  })
})
