import { Effect } from "effect"
import { Auth } from "../auth/Auth.ts"
import type { Gateway } from "../auth/Domain.ts"
import { AppConfig } from "../platform/Config.ts"
import { type Input, list } from "./CommandLine.ts"
import { printJson } from "./Io.ts"

/** `clients create`: an API client of one gateway, with the secret shown this once. */
export const createClient = Effect.fn("cli.clients.create")(function* (input: Input<"clients create">) {
  const { options } = input
  const config = yield* AppConfig
  const gateway = options.gateway as Gateway
  const created = yield* (yield* Auth).createClient({
    gateway,
    name: options.name,
    scopes: list(options.scopes),
    owners: list(options.owners),
    provider: options.provider,
    source: options.source,
    legacyPartnerScopes: list(options["legacy-partner-scopes"]),
  })
  const baseUrl = gateway === "partner" ? config.publicBaseUrl : config.ingestBaseUrl
  return yield* printJson({
    client_id: created.clientId,
    client_secret: created.clientSecret,
    audience: config.audiences[gateway],
    token_url: `${baseUrl}/token`,
  })
})

/** `clients list`: every client with its grants, never a secret. */
export const listClients = Effect.fn("cli.clients.list")(function* () {
  const all = yield* (yield* Auth).listClients
  return yield* printJson(
    all.map((c) => ({
      client_id: c.id,
      gateway: c.gateway,
      name: c.name,
      scopes: c.scopes,
      owners: c.owners,
      provider: c.provider,
      source: c.source,
      created_at: c.createdAt.toISOString(),
      revoked_at: c.revokedAt?.toISOString() ?? null,
    })),
  )
})

export const grantClient = Effect.fn("cli.clients.grant")(function* (input: Input<"clients grant">) {
  const [clientId] = input.args
  const owners = list(input.options.owners) ?? []
  yield* (yield* Auth).grantOwners(clientId, owners)
  return yield* printJson({ client_id: clientId, granted_owners: owners })
})

export const revokeClient = Effect.fn("cli.clients.revoke")(function* (input: Input<"clients revoke">) {
  const [clientId] = input.args
  yield* (yield* Auth).revokeClient(clientId)
  return yield* printJson({ client_id: clientId, revoked: true })
})

/** `keys rotate`: a new token-signing key. */
export const rotateKeys = Effect.fn("cli.keys.rotate")(function* () {
  const kid = yield* (yield* Auth).rotateKeys
  return yield* printJson({ kid, note: "tokens signed by the previous key stay valid until they expire" })
})
