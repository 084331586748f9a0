import { Clock, Effect } from "effect"
import { SignJWT } from "jose"
import { throttleSource } from "../platform/ClientAddress.ts"
import { AppConfig } from "../platform/Config.ts"
import { Crypto, randomToken } from "../platform/Crypto.ts"
import { HashSlots } from "../platform/HashSlots.ts"
import { metrics } from "../platform/Observability.ts"
import {
  type Gateway,
  InvalidClient,
  InvalidTokenRequest,
  type TokenRequest,
  TokenRequestsBlocked,
} from "./Domain.ts"
import { AuthRepo } from "./Repo.ts"
import { type Lane, makeSecretChecks } from "./SecretChecks.ts"
import { ALGORITHM, issuer, type SigningKeyRing } from "./SigningKeys.ts"

/**
 * Failed token requests a source may make for one client id before it is slowed down, and the longest it is then
 * blocked: guessing a 256-bit secret is hopeless anyway, and a partner who fixed a wrong secret waits at most this.
 */
const FREE_FAILURES = 5
const MAX_BLOCK_SECONDS = 60

/** Token issuing: the client credentials grant, signed with the active key of `keys`. */
export const makeTokenIssuing = (keys: SigningKeyRing) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* AuthRepo
    const crypto = yield* Crypto
    // A hash of a random secret: checking an unknown client id against it costs what a real check does.
    const decoy = yield* crypto.hashSecret(randomToken(32))

    /** Counts a failure of `source` and answers as for any rejected credential. */
    const reject = (clientId: string, source: string) =>
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        yield* repo.recordFailure(clientId, source, now, FREE_FAILURES, MAX_BLOCK_SECONDS)
        return yield* new InvalidClient()
      })

    const secretChecks = makeSecretChecks(yield* HashSlots, config.secretChecksPerSource)

    /**
     * A token for the client credentials of `request`, asked from `address`. Failures slow down that source for that
     * client id only, so nobody else's failures ever refuse a correct secret.
     */
    const issueToken = Effect.fn("Auth.issueToken")(function* (
      gateway: Gateway,
      request: TokenRequest,
      address = "",
    ) {
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
      const { active } = yield* keys.current
      const issuedAt = Math.floor(now / 1000)
      const accessToken = yield* Effect.promise(() =>
        new SignJWT({ scope: scopes.join(" ") })
          .setProtectedHeader({ alg: ALGORITHM, kid: active.kid, typ: "JWT" })
          .setIssuer(issuer(config, gateway))
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

    return { issueToken }
  })
