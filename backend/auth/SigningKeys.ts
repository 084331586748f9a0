import { Effect, Ref } from "effect"
import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose"
import { AppConfig } from "../platform/Config.ts"
import { Crypto, randomToken } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import type { Gateway } from "./Domain.ts"
import { AuthRepo, type StoredKey } from "./Repo.ts"

export const ALGORITHM = "ES256"
/** Serializes creating the first signing key across processes starting at once. */
const KEY_LOCK = 7_239_002

export type Key = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"]

interface SigningKeys {
  /** The newest unretired key: the one that signs. */
  readonly active: { readonly kid: string; readonly privateKey: Key }
  /** Every key that may verify, by kid. */
  readonly verifying: ReadonlyMap<string, Key>
  readonly jwks: ReadonlyArray<JWK>
}

/** The issuer a token of `gateway` names: the gateway's own base URL. */
export const issuer = (
  config: { readonly publicBaseUrl: string; readonly ingestBaseUrl: string },
  gateway: Gateway,
) => (gateway === "partner" ? config.publicBaseUrl : config.ingestBaseUrl)

/**
 * The signing keys in this process: read (or, for the first process, made) at start, reloaded by `refresh`, made
 * anew by `rotateKeys`.
 */
export const makeSigningKeys = Effect.gen(function* () {
  const config = yield* AppConfig
  const repo = yield* AuthRepo
  const db = yield* Db
  const crypto = yield* Crypto

  const newKey = Effect.gen(function* () {
    const { privateKey, publicKey } = yield* Effect.promise(() =>
      generateKeyPair(ALGORITHM, { extractable: true }),
    )
    const kid = `key_${randomToken(12)}`
    const publicJwk = {
      ...(yield* Effect.promise(() => exportJWK(publicKey))),
      kid,
      alg: ALGORITHM,
      use: "sig",
    }
    const privateJwk = yield* Effect.promise(() => exportJWK(privateKey))
    const privateJwkSealed = yield* crypto.seal(new TextEncoder().encode(JSON.stringify(privateJwk)))
    yield* repo.insertKey({ kid, algorithm: ALGORITHM, publicJwk, privateJwkSealed })
    return kid
  })

  const load = (stored: ReadonlyArray<StoredKey>) =>
    Effect.gen(function* () {
      const signing = stored.find((k) => k.retiredAt === null) ?? stored[0]
      if (signing === undefined) return yield* Effect.die(new Error("no signing key"))
      const privateJwk = JSON.parse((yield* crypto.open(signing.privateJwkSealed)).toString("utf8")) as JWK
      const verifying = new Map<string, Key>()
      for (const key of stored) {
        verifying.set(key.kid, (yield* Effect.promise(() => importJWK(key.publicJwk, ALGORITHM))) as Key)
      }
      const active = {
        kid: signing.kid,
        privateKey: (yield* Effect.promise(() => importJWK(privateJwk, ALGORITHM))) as Key,
      }
      return { active, verifying, jwks: stored.map((k) => k.publicJwk as JWK) } satisfies SigningKeys
    })

  const readKeys = Effect.gen(function* () {
    const live = yield* repo.liveKeys(config.tokenTtlSeconds)
    if (live.some((k) => k.retiredAt === null)) return live
    yield* db.transaction(
      Effect.gen(function* () {
        yield* db.query((sql) => sql`select pg_advisory_xact_lock(${KEY_LOCK})`)
        const again = yield* repo.liveKeys(config.tokenTtlSeconds)
        if (!again.some((k) => k.retiredAt === null)) yield* newKey
      }),
    )
    return yield* repo.liveKeys(config.tokenTtlSeconds)
  })

  const keys = yield* Ref.make(yield* Effect.flatMap(readKeys, load))
  const refreshKeys = Effect.flatMap(readKeys, load).pipe(Effect.flatMap((k) => Ref.set(keys, k)))
  const lastUnknownKidRefresh = yield* Ref.make(0)
  /**
   * A token naming a kid this process does not know may come from a key another process just made: reload
   * the keys, at most once a second so made-up kids cannot turn into a query per request.
   */
  const refreshForUnknownKid = (kid: string | undefined, now: number) =>
    Effect.gen(function* () {
      if (kid === undefined || (yield* Ref.get(keys)).verifying.has(kid)) return
      if (now - (yield* Ref.get(lastUnknownKidRefresh)) < 1000) return
      yield* Ref.set(lastUnknownKidRefresh, now)
      yield* refreshKeys
    })

  return {
    current: Ref.get(keys),
    refresh: refreshKeys,
    refreshForUnknownKid,
    jwks: Ref.get(keys).pipe(Effect.map((k) => ({ keys: k.jwks }))),
    /** A new signing key signs from now on; the previous ones verify until their tokens expired. */
    rotateKeys: Effect.gen(function* () {
      const kid = yield* db.transaction(
        Effect.gen(function* () {
          const kid = yield* newKey
          yield* repo.retireOtherKeys(kid)
          return kid
        }),
      )
      yield* refreshKeys
      return kid
    }),
  }
})

export type SigningKeyRing = Effect.Success<typeof makeSigningKeys>
