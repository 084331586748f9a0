import { Clock, Context, Effect, Layer } from "effect"
import { randomToken } from "../platform/Crypto.ts"
import { OwnerReads } from "../roster/OwnerReads.ts"
import { OwnerUnknown, ProviderNotProvisioned } from "../webhooks/Domain.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import { PortalConfig } from "./Config.ts"
import {
  DEFAULT_EXPIRES_IN,
  type ExchangedCode,
  type PortalHolder,
  type PortalSession,
  PortalSessionInvalid,
  type PortalSessionRequest,
} from "./Domain.ts"
import { type HolderId, PortalRepo, type PortalSessionRow } from "./Repo.ts"

/** Longer than any code or token this service makes: anything longer is not one, and is not looked up. */
const MAX_SECRET_LENGTH = 128

export const PROVIDER_PARENT_ORIGIN =
  "is not accepted for a provider's session: a provider has no embedded_frame_ancestors of its own"
export const NOT_AN_ANCESTOR = "must be one of the owner's embedded_frame_ancestors"

/** The partner portal's sessions: a one-time link made over the Partner API, exchanged for a cookie's session. */
export class PortalSessions extends Context.Service<PortalSessions>()(
  "partner-service/portal/PortalSessions",
  {
    make: Effect.gen(function* () {
      const repo = yield* PortalRepo
      const owners = yield* OwnerReads
      const providers = yield* EndpointReads
      const config = yield* PortalConfig
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      /** The holder's id, with the origins that may frame its portal (a provider has none). */
      const resolve = Effect.fn("PortalSessions.resolve")(function* (holder: PortalHolder) {
        if (holder.kind === "owner") {
          const owner = yield* owners.ownerFraming({ slug: holder.slug })
          if (owner === undefined) return yield* new OwnerUnknown({ slug: holder.slug })
          return { id: { ownerId: owner.id } as HolderId, ancestors: owner.embedded_frame_ancestors }
        }
        const provider = yield* providers.provider({ name: holder.name })
        if (provider === undefined || !provider.provisioned) {
          return yield* new ProviderNotProvisioned({ provider: holder.name })
        }
        return { id: { providerId: provider.id } as HolderId, ancestors: undefined }
      })

      /** A one-time link to a new session of the holder; the request was decoded by the route. */
      const create = Effect.fn("PortalSessions.create")(function* (
        holder: PortalHolder,
        request: PortalSessionRequest,
      ) {
        const { id, ancestors } = yield* resolve(holder)
        const parentOrigin = request.parent_origin ?? null
        if (parentOrigin !== null) {
          if (ancestors === undefined) {
            return yield* new PortalSessionInvalid({ fields: { parent_origin: PROVIDER_PARENT_ORIGIN } })
          }
          if (!ancestors.includes(parentOrigin)) {
            return yield* new PortalSessionInvalid({ fields: { parent_origin: NOT_AN_ANCESTOR } })
          }
        }
        const at = yield* now
        const expiresAt = new Date(at.getTime() + (request.expires_in ?? DEFAULT_EXPIRES_IN) * 1000)
        const code = randomToken(32)
        yield* repo.insertSession(id, {
          code,
          readOnly: request.read_only ?? false,
          parentOrigin,
          at,
          expiresAt,
        })
        return { url: `${config.baseUrl}/portal/start?code=${code}`, expiresAt }
      })

      /** Ends every session of the holder, its unused links included. */
      const endAll = Effect.fn("PortalSessions.endAll")(function* (holder: PortalHolder) {
        const { id } = yield* resolve(holder)
        yield* repo.endAll(id, yield* now)
      })

      const sessionOf = Effect.fn("PortalSessions.sessionOf")(function* (row: PortalSessionRow) {
        const holder =
          row.owner_id !== null
            ? yield* Effect.map(owners.ownerFraming({ id: row.owner_id }), (owner) =>
                owner === undefined ? undefined : { owner: { slug: owner.slug, name: owner.name } },
              )
            : yield* Effect.map(providers.provider({ id: row.provider_id! }), (provider) =>
                provider === undefined ? undefined : { provider: { name: provider.name } },
              )
        if (holder === undefined) return undefined
        return {
          id: row.id,
          holder,
          holderId: row.owner_id !== null ? { ownerId: row.owner_id } : { providerId: row.provider_id! },
          readOnly: row.read_only,
          parentOrigin: row.parent_origin,
          expiresAt: row.expires_at,
        } satisfies PortalSession
      })

      const plausible = (secret: string | undefined): secret is string =>
        secret !== undefined && secret.length > 0 && secret.length <= MAX_SECRET_LENGTH

      /**
       * The session a live code opens, and the cookie's token; undefined for a code that is unknown, used, expired
       * or ended alike, so the answer tells nothing of why.
       */
      const exchange = Effect.fn("PortalSessions.exchange")(function* (code: string | undefined) {
        if (!plausible(code)) return undefined
        const token = randomToken(32)
        const row = yield* repo.exchange(code, token, yield* now)
        if (row === undefined) return undefined
        const session = yield* sessionOf(row)
        return session === undefined ? undefined : ({ token, session } satisfies ExchangedCode)
      })

      /** The live session a cookie's token names; undefined when there is none, it ended or it expired. */
      const current = Effect.fn("PortalSessions.current")(function* (token: string | undefined) {
        if (!plausible(token)) return undefined
        const row = yield* repo.liveSession(token, yield* now)
        return row === undefined ? undefined : yield* sessionOf(row)
      })

      /** Whether the session `id` still is: not ended, not expired (a live view's heartbeat asks). */
      const stillLive = (id: string) => Effect.flatMap(now, (at) => repo.sessionLive(id, at))

      return { create, endAll, exchange, current, stillLive }
    }),
  },
) {
  static readonly layer = Layer.effect(PortalSessions, PortalSessions.make).pipe(
    Layer.provide(Layer.mergeAll(PortalRepo.layer, OwnerReads.layer, EndpointReads.layer)),
  )
}
