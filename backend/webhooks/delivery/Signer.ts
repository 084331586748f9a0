import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * Signing and headers of a delivery. The signature is the lowercase hex HMAC-SHA256, keyed with the signing
 * secret string's UTF-8 bytes, of `<timestamp>.<raw body>`; one `v1` per active secret, newest first, so a
 * receiver holding either secret verifies during a rotation's overlap.
 */

export const sign = (secret: string, timestamp: number, body: Uint8Array) =>
  createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")

/** `t=<timestamp>,v1=<hex>[,v1=<hex>...]`. */
export const signatureHeader = (secrets: ReadonlyArray<string>, timestamp: number, body: Uint8Array) => {
  let header = `t=${timestamp}`
  for (const secret of secrets) header += `,v1=${sign(secret, timestamp, body)}`
  return header
}

/**
 * Whether `header` (`t=<timestamp>,v1=<hex>[,v1=...]`) holds a signature of `body` by one of `secrets`, compared
 * in constant time: what a receiver checks.
 */
export const verifySignature = (header: string, body: Uint8Array, secrets: ReadonlyArray<string>) => {
  const parts = header.split(",").map((part) => part.trim())
  const timestamp = parts.find((part) => part.startsWith("t="))?.slice(2)
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return false
  const signatures = parts
    .filter((part) => part.startsWith("v1=") && /^[0-9a-f]{64}$/.test(part.slice(3)))
    .map((part) => Buffer.from(part.slice(3), "hex"))
  return secrets.some((secret) => {
    const expected = Buffer.from(sign(secret, Number(timestamp), body), "hex")
    return signatures.some((signature) => timingSafeEqual(signature, expected))
  })
}

/**
 * Headers no custom header may set: the service's own (`Content-Type`, any `X-Webhook-*`) and those that
 * describe the connection or the body's framing, which the HTTP client owns.
 */
const reserved = (name: string) => {
  const lower = name.toLowerCase()
  return (
    lower === "content-type" ||
    lower.startsWith("x-webhook-") ||
    [
      "content-length",
      "transfer-encoding",
      "connection",
      "keep-alive",
      "upgrade",
      "expect",
      "host",
      "te",
    ].includes(lower)
  )
}

/** The operator's custom headers that may be sent: string values under names no reserved header has. */
export const customHeaders = (configured: unknown): Record<string, string> => {
  if (typeof configured !== "object" || configured === null || Array.isArray(configured)) return {}
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(configured)) {
    if (typeof value === "string" && !reserved(name)) out[name] = value
  }
  return out
}

export interface SignedHeadersInput {
  readonly custom: unknown
  readonly event: string
  readonly deliveryId: number | string
  readonly timestamp: number
  readonly secrets: ReadonlyArray<string>
  readonly body: Uint8Array
}

/**
 * Custom headers first, then the service's, which they can never override (reserved names are compared
 * case-insensitively and never among the custom ones). Set one by one on the custom headers' object: it is made
 * for every attempt, and spreading it into another cost a fifth of this function's time.
 */
export const deliveryHeaders = (input: SignedHeadersInput): Record<string, string> => {
  const headers = customHeaders(input.custom)
  headers["Content-Type"] = "application/json"
  headers["X-Webhook-Event"] = input.event
  headers["X-Webhook-Delivery"] = String(input.deliveryId)
  headers["X-Webhook-Timestamp"] = String(input.timestamp)
  headers["X-Webhook-Signature"] = signatureHeader(input.secrets, input.timestamp, input.body)
  return headers
}
