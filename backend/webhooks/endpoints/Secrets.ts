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
import { makeCustomHeaders } from "./CustomHeaders.ts"
import { makeProviders } from "./Providers.ts"
import { type SecretRow, WebhooksRepo } from "./Repo.ts"
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
     * When the current secret was made and until when the previous ones still sign, never a secret: nulls for an
     * owner without a subscriber yet. Read as is, unaudited, since it shows nothing that signs.
     */
    const ages = Effect.fn("Secrets.ages")(function* (ref: SubscriberRef) {
      const subscriberId = yield* subscriber(ref, false)
      const [newest, ...older] = subscriberId === undefined ? [] : yield* repo.activeSecrets(subscriberId)
      const latest = older.reduce<Date | undefined>(
        (max, row) =>
          row.expires_at === null || (max !== undefined && max > row.expires_at) ? max : row.expires_at,
        undefined,
      )
      return { created_at: newest?.created_at ?? null, previous_expires_at: latest ?? null }
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

    const customHeaders = yield* makeCustomHeaders(subscriber)
    const providers = yield* makeProviders(issueSecret)

    return {
      subscriber,
      show,
      verifyDelivery,
      rotate,
      ages,
      endOverlap,
      fingerprint,
      ...customHeaders,
      ...providers,
    }
  }),
}) {
  static readonly layer = Layer.effect(Secrets, Secrets.make).pipe(
    Layer.provide(WebhooksRepo.layer),
    Layer.provide(Crypto.layer),
  )
}
