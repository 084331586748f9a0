import { Context, Effect, Layer, Schedule } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { HashSlots } from "../platform/HashSlots.ts"
import { makeClients } from "./Clients.ts"
import { AuthRepo } from "./Repo.ts"
import { makeSigningKeys } from "./SigningKeys.ts"
import { makeTokenIssuing } from "./Tokens.ts"
import { makeVerification } from "./Verification.ts"

const KEY_REFRESH = "30 seconds"

/**
 * The auth service, in parts by use: the signing keys (`SigningKeys.ts`), client management (`Clients.ts`), token
 * issuing (`Tokens.ts`) and verification (`Verification.ts`).
 */
export class Auth extends Context.Service<Auth>()("partner-service/auth/Auth", {
  make: Effect.gen(function* () {
    const repo = yield* AuthRepo
    const keys = yield* makeSigningKeys
    // Another process may rotate the keys; pick the change up without a restart. Old failure counts go too
    // (a quiet hour resets them anyway), so guessed client ids do not pile up.
    yield* Effect.forkScoped(
      Effect.all([keys.refresh, repo.pruneFailures]).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("signing key refresh failed", { cause: String(cause) }),
        ),
        Effect.repeat(Schedule.spaced(KEY_REFRESH)),
      ),
    )
    const clients = yield* makeClients
    const { issueToken } = yield* makeTokenIssuing(keys)
    const { authenticate } = yield* makeVerification(keys)

    return {
      ...clients,
      issueToken,
      authenticate,
      jwks: keys.jwks,
      rotateKeys: keys.rotateKeys,
    }
  }),
}) {
  static readonly layer = Layer.effect(Auth, Auth.make).pipe(
    Layer.provide(AuthRepo.layer),
    Layer.provide(Crypto.layer),
    Layer.provide(HashSlots.layer),
  )
}
