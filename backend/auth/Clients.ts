import { Effect } from "effect"
import { Crypto, randomToken } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { type Client, ClientCommandRejected, type Gateway } from "./Domain.ts"
import { AuthRepo } from "./Repo.ts"
import { gatewayScopes, isScope, legacyIngestScopes } from "./Scopes.ts"

/** Client management: creating, granting, listing and revoking API clients. */
export const makeClients = Effect.gen(function* () {
  const repo = yield* AuthRepo
  const db = yield* Db
  const crypto = yield* Crypto

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
  }
})
