import { Effect } from "effect"
import { Crypto } from "../../platform/Crypto.ts"
import { readCache } from "../../platform/ReadCache.ts"
import { DeliveryRepo } from "./DeliveryRepo.ts"

/** Unsealed secrets are kept this long, unless a newer secret appears (rotation) before. */
const SECRET_CACHE_MS = 60_000

interface CachedSecrets {
  readonly secrets: ReadonlyArray<{ readonly secret: string; readonly expiresAt: number | null }>
  /** All of them, when none expires (no rotation overlap): the list every attempt signs with, made once. */
  readonly withoutExpiry: ReadonlyArray<string> | undefined
}

const activeSecrets = (entry: CachedSecrets, now: number): ReadonlyArray<string> =>
  entry.withoutExpiry ??
  entry.secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret)

/** The secrets the delivery actor signs with, unsealed once per version of a subscriber's secrets. */
export const makeAttemptSecrets = Effect.gen(function* () {
  const repo = yield* DeliveryRepo
  const crypto = yield* Crypto

  /**
   * Subscribers' unsealed secrets, by subscriber and version (its newest secret id and count of active ones,
   * read in the claim): a rotation or an expiry makes a new version, read on the next attempt.
   */
  const secrets = readCache<string, CachedSecrets, never>({
    freshMillis: SECRET_CACHE_MS,
    maxSize: 10_000,
  })
  const readSecrets = (subscriberId: number, now: number) =>
    Effect.gen(function* () {
      const rows = yield* repo.secrets(subscriberId, new Date(now))
      const opened = yield* Effect.forEach(rows, (row) =>
        Effect.map(crypto.open(row.secret_sealed), (plain) => ({
          secret: plain.toString("utf8"),
          expiresAt: row.expires_at?.getTime() ?? null,
        })),
      )
      return {
        secrets: opened,
        withoutExpiry: opened.every((s) => s.expiresAt === null) ? opened.map((s) => s.secret) : undefined,
      }
    })

  /** The subscriber's active secrets, newest first, unsealed once per version. */
  const secretsOf = (subscriberId: number, version: string | null, now: number) =>
    secrets
      .get(`${subscriberId} ${version}`, () => readSecrets(subscriberId, now))
      .pipe(Effect.map((entry) => activeSecrets(entry, now)))

  return secretsOf
})

/** A subscriber's active secrets, newest first, for the version of them a claim read. */
export type SecretsOf = Effect.Success<typeof makeAttemptSecrets>
