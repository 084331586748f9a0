import { createHash, randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { Crypto } from "../../platform/Crypto.ts"
import { Db } from "../../platform/Db.ts"
import {
  describeSubscriber,
  MAX_OVERLAP_MS,
  OwnerUnknown,
  ProviderNotProvisioned,
  type SubscriberRef,
  WebhookCommandRejected,
} from "../Domain.ts"
import { type ProviderRow, type SecretRow, WebhooksRepo } from "./Repo.ts"
import { verifySignature } from "../delivery/Signer.ts"

/**
 * A signing secret as shared with partners: `whsec_` and the base64 of 32 random bytes. The HMAC key is this
 * string's UTF-8 bytes exactly, so common verifiers (Stripe's, Standard Webhooks') work unchanged.
 */
export const generateSecret = () => `whsec_${randomBytes(32).toString("base64")}`

/**
 * What operators see of a secret to tell it from another (which one a receiver holds): the first 12 hex digits of
 * its SHA-256, never enough to sign with.
 */
export const secretFingerprint = (secret: string) =>
  createHash("sha256").update(secret, "utf8").digest("hex").slice(0, 12)

/** A secret as `secrets show` and `secrets rotate` print it. */
export interface PrintedSecret {
  readonly secret: string
  readonly created_at: string
  readonly expires_at: string | null
}

export interface PrintedProvider {
  readonly provider: string
  readonly owners: ReadonlyArray<string>
  readonly properties: ReadonlyArray<string>
  readonly created_at: string
}

/** What a provider's deliveries cover: named owners, or named properties as `OWNER_SLUG/PROPERTY_EXTERNAL_ID`. */
export type ProviderCoverage =
  { readonly owners: ReadonlyArray<string> } | { readonly properties: ReadonlyArray<string> }

/** Lowercase, so it reads the same in a URL path and in the clients' `provider` grant. */
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/

const MAX_HEADERS = 20
const MAX_HEADER_VALUE = 4096
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,100}$/
/** Visible ASCII, with inner spaces and tabs: nothing that could end the header line or confuse a proxy. */
const HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/
/** Headers the HTTP client owns for the connection and the body: setting them would break deliveries. */
const TRANSPORT_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "proxy-connection",
])

const NO_VALUE = Symbol("no value")

/**
 * Every problem of an operator's custom headers file, or the headers to store. With `stored`, a null value keeps
 * the stored value of that name: the console shows values masked, so a form saved unchanged sends nulls.
 */
export const validateCustomHeaders = (
  input: unknown,
  stored?: Readonly<Record<string, string>>,
): { readonly headers: Record<string, string> } | { readonly problems: ReadonlyArray<string> } => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return {
      problems: [
        'the headers file must hold a JSON object of header names to values, e.g. {"X-Api-Key": "..."}',
      ],
    }
  }
  const problems: Array<string> = []
  const entries = Object.entries(input).map(([name, value]): [string, unknown] => {
    if (value !== null || stored === undefined) return [name, value]
    if (Object.hasOwn(stored, name)) return [name, stored[name]]
    problems.push(`${JSON.stringify(name)} has no stored value to keep: give its value`)
    return [name, NO_VALUE]
  })
  if (entries.length > MAX_HEADERS) problems.push(`at most ${MAX_HEADERS} headers, not ${entries.length}`)
  const seen = new Set<string>()
  for (const [name, value] of entries) {
    const lower = name.toLowerCase()
    const shown = JSON.stringify(name)
    if (!HEADER_NAME.test(name)) problems.push(`${shown} is not a valid header name`)
    else if (lower === "content-type") {
      problems.push("Content-Type cannot be set: deliveries are always application/json")
    } else if (lower.startsWith("x-webhook-")) {
      problems.push(`${name} cannot be set: X-Webhook-* headers are the service's own`)
    } else if (TRANSPORT_HEADERS.has(lower)) {
      problems.push(`${name} cannot be set: the HTTP client sets it for each request`)
    } else if (seen.has(lower)) problems.push(`${name} is given twice (header names ignore case)`)
    seen.add(lower)
    if (value === NO_VALUE) continue
    if (typeof value !== "string") problems.push(`the value of ${shown} must be a string`)
    else if (value.length > MAX_HEADER_VALUE) {
      problems.push(`the value of ${shown} is longer than ${MAX_HEADER_VALUE} characters`)
    } else if (!HEADER_VALUE.test(value)) {
      problems.push(
        `the value of ${shown} must be non-empty visible ASCII without line breaks or surrounding spaces`,
      )
    }
  }
  return problems.length > 0
    ? { problems }
    : { headers: Object.fromEntries(entries) as Record<string, string> }
}

const printedProvider = (row: ProviderRow): PrintedProvider => ({
  provider: row.name,
  owners: row.owners,
  properties: row.properties,
  created_at: row.created_at.toISOString(),
})

/**
 * The subscribers that receive deliveries (an owner's, created on first use; a provider's, provisioned by
 * operators), their signing secrets and their operator-set custom headers. Secrets are sealed at rest and
 * leave only through the operator's commands, which are audited.
 */
export class Secrets extends Context.Service<Secrets>()("partner-service/webhooks/Secrets", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const crypto = yield* Crypto
    const repo = yield* WebhooksRepo

    const issueSecret = (subscriberId: string) =>
      Effect.gen(function* () {
        const secret = generateSecret()
        const row = yield* repo.insertSecret(subscriberId, yield* crypto.seal(Buffer.from(secret, "utf8")))
        return { row, secret }
      })

    const printed = (row: SecretRow, secret: string): PrintedSecret => ({
      secret,
      created_at: row.created_at.toISOString(),
      expires_at: row.expires_at?.toISOString() ?? null,
    })

    /** The owner's subscriber, made with its first secret when `create` and it has none. */
    const ownerSubscriber = (slug: string, create: boolean) =>
      db.transaction(
        Effect.gen(function* () {
          const ownerId = yield* repo.ownerId(slug)
          if (ownerId === undefined) return yield* new OwnerUnknown({ slug })
          const existing = yield* repo.ownerSubscriber(ownerId)
          if (existing !== undefined || !create) return existing
          const inserted = yield* repo.insertOwnerSubscriber(ownerId)
          if (inserted === undefined) return yield* repo.ownerSubscriber(ownerId)
          yield* issueSecret(inserted)
          return inserted
        }),
      )

    /**
     * The subscriber behind a route or command: an owner's (created with its first secret on first use when
     * `create`; undefined before), or a provisioned provider's.
     */
    const subscriber = Effect.fn("Secrets.subscriber")(function* (ref: SubscriberRef, create: boolean) {
      if (ref.kind === "owner") return yield* ownerSubscriber(ref.slug, create)
      const provider = yield* repo.provider(ref.name)
      if (provider?.subscriber_id == null) return yield* new ProviderNotProvisioned({ provider: ref.name })
      return provider.subscriber_id
    })

    const existingSubscriber = (ref: SubscriberRef) =>
      Effect.gen(function* () {
        const id = yield* subscriber(ref, false)
        if (id === undefined) {
          return yield* new WebhookCommandRejected({
            message: `${describeSubscriber(ref)} has no signing secret yet: it is created with the owner's first webhook endpoint, or by secrets rotate`,
          })
        }
        return id
      })

    /** The active secrets, newest first; the showing is audited (in the same transaction). */
    const show = Effect.fn("Secrets.show")(function* (ref: SubscriberRef, actor: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = yield* existingSubscriber(ref)
          const rows = yield* repo.activeSecrets(subscriberId)
          const secrets = yield* Effect.forEach(rows, (row) =>
            Effect.map(crypto.open(row.secret_sealed), (bytes) => printed(row, bytes.toString("utf8"))),
          )
          yield* repo.audit({
            actor,
            action: "webhook_secrets.show",
            target: describeSubscriber(ref),
            details: { secrets_shown: secrets.length },
          })
          return secrets
        }),
      )
    })

    /**
     * A new current secret; the older active ones stay valid for `overlapMs` more (never longer than they
     * already would), so receivers can switch without downtime. Audited.
     */
    const rotate = Effect.fn("Secrets.rotate")(function* (
      ref: SubscriberRef,
      overlapMs: number,
      actor: string,
    ) {
      if (!Number.isInteger(overlapMs) || overlapMs < 0 || overlapMs > MAX_OVERLAP_MS) {
        return yield* new WebhookCommandRejected({ message: "the overlap must be between 0 and 30 days" })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          const existing = yield* subscriber(ref, false)
          const subscriberId = existing ?? (yield* subscriber(ref, true))!
          // An owner's first secret, made with its subscriber just now, is the new one: nothing to expire.
          const first = existing === undefined ? (yield* repo.activeSecrets(subscriberId))[0] : undefined
          const { row, secret } =
            first === undefined
              ? yield* issueSecret(subscriberId)
              : { row: first, secret: (yield* crypto.open(first.secret_sealed)).toString("utf8") }
          const expiring = yield* repo.expireOtherSecrets(subscriberId, row.id, overlapMs)
          yield* repo.audit({
            actor,
            action: "webhook_secrets.rotate",
            target: describeSubscriber(ref),
            details: { overlap_seconds: overlapMs / 1000, previous_secrets: expiring.length },
            after: { overlap_seconds: overlapMs / 1000, previous_secrets: expiring.length },
          })
          const latest = expiring.reduce<Date | undefined>(
            (max, at) => (max && max > at ? max : at),
            undefined,
          )
          return { ...printed(row, secret), previous_secrets_expire_at: latest?.toISOString() ?? null }
        }),
      )
    })

    /**
     * Ends a rotation's overlap at once: every active secret but the newest stops signing now. Audited; refused
     * when only one secret is active.
     */
    const endOverlap = Effect.fn("Secrets.endOverlap")(function* (ref: SubscriberRef, actor: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = yield* existingSubscriber(ref)
          const [newest, ...older] = yield* repo.activeSecrets(subscriberId)
          if (newest === undefined || older.length === 0) {
            return yield* new WebhookCommandRejected({
              message: `${describeSubscriber(ref)} has no rotation overlap to end: one secret signs its deliveries`,
            })
          }
          const ended = yield* repo.expireOtherSecrets(subscriberId, newest.id, 0)
          yield* repo.audit({
            actor,
            action: "webhook_secrets.end_overlap",
            target: describeSubscriber(ref),
            details: { previous_secrets: ended.length },
            before: { previous_expires_at: older.map((row) => row.expires_at?.toISOString() ?? null) },
            after: { previous_expires_at: ended.map((at) => at.toISOString()) },
          })
          return { ended: ended.length }
        }),
      )
    })

    /** The fingerprint of a sealed secret. */
    const fingerprint = (sealed: Uint8Array) =>
      Effect.map(crypto.open(sealed), (bytes) => secretFingerprint(bytes.toString("utf8")))

    /** The static headers with their values, which may be a receiver's credentials: the showing is audited. */
    const headers = Effect.fn("Secrets.headers")(function* (ref: SubscriberRef, actor: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = yield* subscriber(ref, false)
          const shown = subscriberId === undefined ? {} : yield* repo.customHeaders(subscriberId)
          yield* repo.audit({
            actor,
            action: "webhook_headers.show",
            target: describeSubscriber(ref),
            details: { names: Object.keys(shown) },
          })
          return shown
        }),
      )
    })

    /**
     * Replaces the static headers sent with every delivery of the subscriber. Audited (names only). With
     * `keepHidden`, a null value keeps the stored one (the console's form, which never holds the values).
     */
    const setHeaders = Effect.fn("Secrets.setHeaders")(function* (
      ref: SubscriberRef,
      input: unknown,
      actor: string,
      keepHidden = false,
    ) {
      const early = keepHidden ? undefined : validateCustomHeaders(input)
      if (early !== undefined && "problems" in early) {
        return yield* new WebhookCommandRejected({ message: early.problems.join("; ") })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = (yield* subscriber(ref, true))!
          const previous = yield* repo.customHeaders(subscriberId)
          const checked = early ?? validateCustomHeaders(input, previous)
          if ("problems" in checked) {
            return yield* new WebhookCommandRejected({ message: checked.problems.join("; ") })
          }
          yield* repo.setCustomHeaders(subscriberId, checked.headers)
          // Names only: a header's value may be a credential of the receiver's.
          yield* repo.audit({
            actor,
            action: "webhook_headers.set",
            target: describeSubscriber(ref),
            details: { names: Object.keys(checked.headers) },
            before: { names: Object.keys(previous) },
            after: { names: Object.keys(checked.headers) },
          })
          return checked.headers
        }),
      )
    })

    /**
     * Creates the provider with its subscriber and first secret, or updates it; either way its coverage becomes
     * exactly what is given. Nothing is written when any owner or property is unknown.
     */
    const provisionProvider = Effect.fn("Secrets.provisionProvider")(function* (
      name: string,
      coverage: ProviderCoverage,
      actor: string,
    ) {
      if (!PROVIDER_NAME.test(name)) {
        return yield* new WebhookCommandRejected({
          message: `provider name '${name}' must be 1-63 lowercase letters, digits, '-' or '_' (the name the provider's API clients carry)`,
        })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          let ownerIds: ReadonlyArray<string> = []
          let propertyIds: Array<string> = []
          if ("owners" in coverage) {
            const slugs = [...new Set(coverage.owners)]
            const found = yield* repo.ownersBySlug(slugs)
            const unknown = slugs.filter((slug) => !found.some((owner) => owner.slug === slug))
            if (unknown.length > 0) {
              return yield* new WebhookCommandRejected({
                message: `unknown owner slugs: ${unknown.join(", ")}`,
              })
            }
            ownerIds = found.map((owner) => owner.id)
          } else {
            const problems: Array<string> = []
            for (const reference of new Set(coverage.properties)) {
              const slash = reference.indexOf("/")
              const id =
                slash > 0
                  ? yield* repo.propertyId(reference.slice(0, slash), reference.slice(slash + 1))
                  : undefined
              if (id === undefined) problems.push(reference)
              else propertyIds = [...propertyIds, id]
            }
            if (problems.length > 0) {
              return yield* new WebhookCommandRejected({
                message: `unknown properties (OWNER_SLUG/PROPERTY_EXTERNAL_ID): ${problems.join(", ")}`,
              })
            }
          }
          const { id, created } = yield* repo.upsertProvider(name)
          yield* repo.replaceCoverage(id, { ownerIds, propertyIds })
          const provider = (yield* repo.provider(name))!
          if ((yield* repo.activeSecrets(provider.subscriber_id!)).length === 0) {
            yield* issueSecret(provider.subscriber_id!)
          }
          yield* repo.audit({
            actor,
            action: created ? "providers.create" : "providers.update",
            target: `provider:${name}`,
            details: { owners: provider.owners, properties: provider.properties },
          })
          return { ...printedProvider(provider), created }
        }),
      )
    })

    /**
     * Whether a delivery's `X-Webhook-Signature` signs `body` with one of the current secrets of the owner or
     * provider it went to: what a partner's receiver checks (the test receiver's answer). An id that names no
     * delivery verifies nothing.
     */
    const verifyDelivery = Effect.fn("Secrets.verifyDelivery")(function* (
      deliveryId: string,
      signature: string,
      body: Uint8Array,
    ) {
      if (!/^[1-9][0-9]{0,17}$/.test(deliveryId)) return false
      const rows = yield* repo.activeSecretsOfDelivery(deliveryId)
      const secrets = yield* Effect.forEach(rows, (row) =>
        Effect.map(crypto.open(row.secret_sealed), (bytes) => bytes.toString("utf8")),
      )
      return verifySignature(signature, body, secrets)
    })

    return {
      subscriber,
      show,
      verifyDelivery,
      rotate,
      endOverlap,
      fingerprint,
      headers,
      setHeaders,
      provisionProvider,
      providers: repo.providers.pipe(
        Effect.map((rows) => rows.map(printedProvider)),
        Effect.withSpan("Secrets.providers"),
      ),
    }
  }),
}) {
  static readonly layer = Layer.effect(Secrets, Secrets.make).pipe(
    Layer.provide(WebhooksRepo.layer),
    Layer.provide(Crypto.layer),
  )
}
