import { Clock, Context, Effect, Layer, Ref, Schedule, Schema } from "effect"
import {
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  jwtVerify,
  SignJWT,
} from "jose"
import { throttleSource } from "../platform/ClientAddress.ts"
import { AppConfig } from "../platform/Config.ts"
import { Crypto, randomToken } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { HashSlots } from "../platform/HashSlots.ts"
import { readCache } from "../platform/ReadCache.ts"
import { Unauthorized } from "../platform/Http.ts"
import { metrics } from "../platform/Observability.ts"
import {
  type Client,
  ClientCommandRejected,
  type Gateway,
  InvalidClient,
  InvalidTokenRequest,
  TokenRequest,
  TokenRequestsBlocked,
} from "./Domain.ts"
import { AuthRepo, type OwnerAccess, type StoredKey } from "./Repo.ts"
import { gatewayScopes, isScope, legacyIngestScopes } from "./Scopes.ts"
import { type Lane, makeSecretChecks } from "./SecretChecks.ts"

const ALGORITHM = "ES256"
/**
 * Failed token requests a source may make for one client id before it is slowed down, and the longest it is then
 * blocked: guessing a 256-bit secret is hopeless anyway, and a partner who fixed a wrong secret waits at most this.
 */
const FREE_FAILURES = 5
const MAX_BLOCK_SECONDS = 60
const KEY_REFRESH = "30 seconds"
/** Serializes creating the first signing key across processes starting at once. */
const KEY_LOCK = 7_239_002
const TOKEN_CACHE_SIZE = 10_000
/** How long a client's access is trusted without a change notification (a safety net, not the mechanism). */
const ACCESS_CACHE_MILLIS = 5_000
const AUTH_CHANGED = "auth_changed"
/**
 * How far a token's `iat` may lie ahead of this process's clock: only clock drift between our own processes,
 * since only we issue tokens. A later `iat`, like a lifetime beyond the configured one, was not issued by us as
 * configured, which matters once a signing key may have leaked.
 */
const ISSUED_AT_SKEW_SECONDS = 60

export interface AuthenticatedCaller {
  readonly clientId: string
  /** The token's scopes that the client is still granted. */
  readonly scopes: ReadonlySet<string>
  readonly provider: string | null
  /** The source code of an ingestion client. */
  readonly source: string | null
  /** Set when an owner slug was asked about. */
  readonly ownerAccess: OwnerAccess | undefined
}

type Key = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"]

interface SigningKeys {
  /** The newest unretired key: the one that signs. */
  readonly active: { readonly kid: string; readonly privateKey: Key }
  /** Every key that may verify, by kid. */
  readonly verifying: ReadonlyMap<string, Key>
  readonly jwks: ReadonlyArray<JWK>
}

const decodeTokenRequest = Schema.decodeUnknownEffect(TokenRequest)

export class Auth extends Context.Service<Auth>()("partner-service/auth/Auth", {
  make: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* AuthRepo
    const db = yield* Db
    const crypto = yield* Crypto
    // A hash of a random secret: checking an unknown client id against it costs what a real check does.
    const decoy = yield* crypto.hashSecret(randomToken(32))

    const issuer = (gateway: Gateway) => (gateway === "partner" ? config.publicBaseUrl : config.ingestBaseUrl)

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
    // Another process may rotate the keys; pick the change up without a restart. Old failure counts go too
    // (a quiet hour resets them anyway), so guessed client ids do not pile up.
    yield* Effect.forkScoped(
      Effect.all([refreshKeys, repo.pruneFailures]).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("signing key refresh failed", { cause: String(cause) }),
        ),
        Effect.repeat(Schedule.spaced(KEY_REFRESH)),
      ),
    )

    const createClient = Effect.fn("Auth.createClient")(function* (input: {
      readonly gateway: Gateway
      readonly name: string
      readonly scopes?: ReadonlyArray<string> | undefined
      readonly owners?: ReadonlyArray<string> | undefined
      readonly provider?: string | undefined
      readonly source?: string | undefined
      /** Partner API scopes an older integration holds on the ingestion gateway (`legacyIngestScopes`). */
      readonly legacyPartnerScopes?: ReadonlyArray<string> | undefined
    }) {
      const allowed: ReadonlyArray<string> = gatewayScopes[input.gateway]
      const legacy = input.legacyPartnerScopes ?? []
      const scopes = [...new Set([...(input.scopes ?? allowed), ...legacy])]
      if (scopes.length === 0) {
        return yield* new ClientCommandRejected({ message: "a client needs at least one scope" })
      }
      if (legacy.length > 0 && input.gateway !== "ingest") {
        return yield* new ClientCommandRejected({
          message: "legacy Partner API scopes are granted only to ingestion gateway clients",
        })
      }
      const refusedLegacy = legacy.filter((s) => !(legacyIngestScopes as ReadonlyArray<string>).includes(s))
      if (refusedLegacy.length > 0) {
        return yield* new ClientCommandRejected({
          message: `legacy Partner API scopes not available: ${refusedLegacy.join(", ")} (available: ${legacyIngestScopes.join(", ")})`,
        })
      }
      const refused = scopes.filter((s) => !isScope(s) || !(allowed.includes(s) || legacy.includes(s)))
      if (refused.length > 0) {
        return yield* new ClientCommandRejected({
          message: `scopes not available on the ${input.gateway} gateway: ${refused.join(", ")} (available: ${allowed.join(", ")})`,
        })
      }
      if (input.source !== undefined && !(yield* repo.sourceExists(input.source))) {
        return yield* new ClientCommandRejected({
          message: `unknown source ${input.source}: issue it first (sources create)`,
        })
      }
      const id = `cli_${randomToken(12)}`
      const secret = randomToken(32)
      yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.insertClient({
            id,
            gateway: input.gateway,
            name: input.name,
            secretHash: yield* crypto.hashSecret(secret),
            scopes,
            provider: input.provider ?? null,
            source: input.source ?? null,
          })
          yield* grantOwners(id, input.owners ?? [])
        }),
      )
      return { clientId: id, clientSecret: secret }
    })

    const grantOwners = Effect.fn("Auth.grantOwners")(function* (
      clientId: string,
      slugs: ReadonlyArray<string>,
    ) {
      const owners = yield* repo.ownersBySlug(slugs)
      const unknown = slugs.filter((slug) => !owners.some((o) => o.slug === slug))
      if (unknown.length > 0) {
        return yield* new ClientCommandRejected({ message: `unknown owner slugs: ${unknown.join(", ")}` })
      }
      if ((yield* repo.findClient(clientId)) === undefined) {
        return yield* new ClientCommandRejected({ message: `no client ${clientId}` })
      }
      yield* repo.grantOwners(
        clientId,
        owners.map((o) => o.id),
      )
    })

    /** Counts a failure of `source` and answers as for any rejected credential. */
    const reject = (clientId: string, source: string) =>
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        yield* repo.recordFailure(clientId, source, now, FREE_FAILURES, MAX_BLOCK_SECONDS)
        return yield* new InvalidClient()
      })

    const secretChecks = makeSecretChecks(yield* HashSlots, config.secretChecksPerSource)

    /**
     * A token for the client credentials in `body`, asked from `address`. Failures slow down that source for that
     * client id only, so nobody else's failures ever refuse a correct secret.
     */
    const issueToken = Effect.fn("Auth.issueToken")(function* (
      gateway: Gateway,
      body: unknown,
      address = "",
    ) {
      const request = yield* decodeTokenRequest(body).pipe(
        Effect.mapError(
          () =>
            new InvalidTokenRequest({
              error: "invalid_request",
              description: "grant_type, client_id, client_secret and audience are required strings.",
            }),
        ),
      )
      if (request.grant_type !== "client_credentials") {
        return yield* new InvalidTokenRequest({
          error: "unsupported_grant_type",
          description: "Only the client_credentials grant is supported.",
        })
      }
      const now = yield* Clock.currentTimeMillis
      const source = throttleSource(address)
      const { blockedUntil, failedRecently } = yield* repo.failuresOf(
        request.client_id,
        source,
        new Date(now),
      )
      if (blockedUntil !== undefined && blockedUntil.getTime() > now) {
        metrics.tokenRequestsThrottled.inc({ gateway, reason: "failures" })
        return yield* new TokenRequestsBlocked({
          retryAfterSeconds: Math.ceil((blockedUntil.getTime() - now) / 1000),
          reason: "failures",
        })
      }
      const client = yield* repo.findClient(request.client_id)
      // Strangers' failures never queue in front of a client whose own source has not failed for its id.
      const lane: Lane =
        client !== undefined && client.revokedAt === null && client.gateway === gateway && !failedRecently
          ? { kind: "client", clientId: client.id }
          : { kind: "stranger" }
      // The hash is checked even for an unknown id, so its own timing does not tell which ids exist.
      const secretMatches = yield* secretChecks.admitted(
        gateway,
        source,
        secretChecks.check(gateway, lane, request.client_secret, client?.secretHash ?? decoy),
      )
      if (
        client === undefined ||
        !secretMatches ||
        client.revokedAt !== null ||
        client.gateway !== gateway ||
        request.audience !== config.audiences[gateway]
      ) {
        return yield* reject(request.client_id, source)
      }
      const requested = request.scope?.split(/\s+/).filter((s) => s !== "")
      const scopes =
        requested === undefined || requested.length === 0 ? client.scopes : [...new Set(requested)]
      const outside = scopes.filter((s) => !client.scopes.includes(s))
      if (outside.length > 0) {
        return yield* new InvalidTokenRequest({
          error: "invalid_scope",
          description: `Scopes not granted to this client: ${outside.join(" ")}.`,
        })
      }
      yield* repo.clearFailures(client.id, source)
      const { active } = yield* Ref.get(keys)
      const issuedAt = Math.floor(now / 1000)
      const accessToken = yield* Effect.promise(() =>
        new SignJWT({ scope: scopes.join(" ") })
          .setProtectedHeader({ alg: ALGORITHM, kid: active.kid, typ: "JWT" })
          .setIssuer(issuer(gateway))
          .setSubject(client.id)
          .setAudience(config.audiences[gateway])
          .setIssuedAt(issuedAt)
          .setExpirationTime(issuedAt + config.tokenTtlSeconds)
          .setJti(randomToken(12))
          .sign(active.privateKey),
      )
      return {
        access_token: accessToken,
        token_type: "Bearer" as const,
        scope: scopes.join(" "),
        expires_in: config.tokenTtlSeconds,
      }
    })

    /**
     * Who a client is and whether it may act for an owner, cached per (client, owner) for a few seconds when the
     * answer lets the request through. Every change to clients, grants or owners notifies `auth_changed`
     * (migration 0007) and empties the cache in every process; a lookup that raced a change is not cached.
     * Requests that find no fresh answer together wait for one lookup. A refusal (unknown or revoked client, owner
     * not granted or not there yet) is never cached, nor shared with a request that came after the lookup began:
     * a grant or a new owner counts from its commit, without waiting for the notification to arrive.
     */
    const access = readCache<
      string,
      { readonly value: Effect.Success<ReturnType<typeof repo.callerAccess>>; readonly letsThrough: boolean },
      Effect.Error<ReturnType<typeof repo.callerAccess>>
    >({ freshMillis: ACCESS_CACHE_MILLIS, maxSize: TOKEN_CACHE_SIZE, keep: (read) => read.letsThrough })
    yield* db.listen(
      AUTH_CHANGED,
      () => access.forget(),
      () => access.forget(),
    )
    const callerAccess = (clientId: string, ownerSlug: string | undefined) =>
      access
        .get(`${clientId}\u0000${ownerSlug ?? ""}`, () =>
          Effect.map(repo.callerAccess(clientId, ownerSlug), (value) => ({
            value,
            letsThrough:
              value !== undefined &&
              value.revokedAt === null &&
              (ownerSlug === undefined || value.ownerAccess === "granted"),
          })),
        )
        .pipe(Effect.map((read) => read.value))

    /**
     * Verified tokens by gateway and token text, until they expire: a partner sends one token for hours, so
     * its signature is checked once. Expiry is checked again on every use; revocation on the client row.
     */
    const verifiedTokens = new Map<
      string,
      { readonly sub: string; readonly scope: string; readonly exp: number }
    >()

    const verify = (gateway: Gateway, token: string, now: number) =>
      Effect.gen(function* () {
        const cacheKey = `${gateway} ${token}`
        const cached = verifiedTokens.get(cacheKey)
        if (cached !== undefined && cached.exp * 1000 > now) return cached
        const header = yield* Effect.try(() => decodeProtectedHeader(token)).pipe(
          Effect.mapError(() => new Unauthorized()),
        )
        yield* refreshForUnknownKid(header.kid, now)
        const { verifying } = yield* Ref.get(keys)
        const { payload } = yield* Effect.tryPromise(() =>
          jwtVerify(
            token,
            (header) => {
              const key = header.kid === undefined ? undefined : verifying.get(header.kid)
              if (key === undefined) throw new Error("unknown key")
              return key
            },
            {
              issuer: issuer(gateway),
              audience: config.audiences[gateway],
              algorithms: [ALGORITHM],
              currentDate: new Date(now),
              requiredClaims: ["sub", "exp", "iat"],
            },
          ),
        ).pipe(Effect.mapError(() => new Unauthorized()))
        // `requiredClaims` made jose check both are numbers.
        const issuedAt = payload.iat!
        if (
          issuedAt > now / 1000 + ISSUED_AT_SKEW_SECONDS ||
          payload.exp! - issuedAt > config.tokenTtlSeconds
        ) {
          return yield* new Unauthorized()
        }
        const claims = {
          sub: payload.sub ?? "",
          scope: typeof payload.scope === "string" ? payload.scope : "",
          exp: payload.exp ?? 0,
        }
        if (verifiedTokens.size >= TOKEN_CACHE_SIZE)
          verifiedTokens.delete(verifiedTokens.keys().next().value!)
        verifiedTokens.set(cacheKey, claims)
        return claims
      })

    /**
     * The caller behind `Authorization: Bearer <token>` on `gateway`, or Unauthorized; with `ownerSlug`, also
     * whether that owner exists and is granted to the caller (one query for both). Untraced: it runs on every
     * request, and a named span captures its call-site stack each time while no tracer reads them.
     */
    const authenticate = Effect.fnUntraced(function* (
      gateway: Gateway,
      authorization: string | null,
      ownerSlug?: string,
    ) {
      const token = /^Bearer ([A-Za-z0-9_.-]+)$/i.exec(authorization?.trim() ?? "")?.[1]
      if (token === undefined) return yield* new Unauthorized()
      const claims = yield* verify(gateway, token, yield* Clock.currentTimeMillis)
      const client = yield* callerAccess(claims.sub, ownerSlug)
      if (client === undefined || client.revokedAt !== null || client.gateway !== gateway) {
        return yield* new Unauthorized()
      }
      return {
        clientId: claims.sub,
        scopes: new Set(claims.scope.split(" ").filter((s) => client.scopes.includes(s))),
        provider: client.provider,
        source: client.source,
        ownerAccess: client.ownerAccess,
      } satisfies AuthenticatedCaller
    })

    return {
      createClient,
      grantOwners,
      listClients: repo.listClients.pipe(
        Effect.map((clients) => clients.map(({ secretHash: _, ...client }): Client => client)),
      ),
      revokeClient: (clientId: string) =>
        repo
          .revokeClient(clientId)
          .pipe(
            Effect.flatMap((revoked) =>
              revoked
                ? Effect.void
                : Effect.fail(new ClientCommandRejected({ message: `no active client ${clientId}` })),
            ),
          ),
      issueToken,
      authenticate,
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
  }),
}) {
  static readonly layer = Layer.effect(Auth, Auth.make).pipe(
    Layer.provide(AuthRepo.layer),
    Layer.provide(Crypto.layer),
    Layer.provide(HashSlots.layer),
  )
}
