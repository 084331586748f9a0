import { Clock, Effect } from "effect"
import { decodeProtectedHeader, jwtVerify } from "jose"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { Unauthorized } from "../platform/Http.ts"
import { readCache } from "../platform/ReadCache.ts"
import type { Gateway } from "./Domain.ts"
import { AuthRepo, type OwnerAccess } from "./Repo.ts"
import { ALGORITHM, issuer, type SigningKeyRing } from "./SigningKeys.ts"

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

/** Verification: a bearer token checked against `keys`, and its client's access read through a cache. */
export const makeVerification = (keys: SigningKeyRing) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* AuthRepo
    const db = yield* Db

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
        yield* keys.refreshForUnknownKid(header.kid, now)
        const { verifying } = yield* keys.current
        const { payload } = yield* Effect.tryPromise(() =>
          jwtVerify(
            token,
            (header) => {
              const key = header.kid === undefined ? undefined : verifying.get(header.kid)
              if (key === undefined) throw new Error("unknown key")
              return key
            },
            {
              issuer: issuer(config, gateway),
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

    return { authenticate }
  })
