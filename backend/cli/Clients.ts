import { Effect } from "effect"
import { Auth } from "../auth/Auth.ts"
import { Gateway } from "../auth/Domain.ts"
import { AppConfig } from "../platform/Config.ts"
import { CliUsage, list, parse, printJson } from "./Usage.ts"

const isGateway = (value: string | undefined): value is Gateway => Gateway.literals.includes(value as Gateway)

/** `clients create|list|grant|revoke`: API clients of the two gateways. */
export const clients = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const auth = yield* Auth
    const config = yield* AppConfig
    switch (command) {
      case "create": {
        const { values } = yield* parse(rest, {
          gateway: { type: "string" },
          name: { type: "string" },
          scopes: { type: "string" },
          owners: { type: "string" },
          provider: { type: "string" },
          source: { type: "string" },
        })
        if (!isGateway(values.gateway))
          return yield* new CliUsage({ message: "--gateway partner|ingest is required" })
        if (!values.name) return yield* new CliUsage({ message: "--name is required" })
        const gateway = values.gateway
        const created = yield* auth.createClient({
          gateway,
          name: values.name,
          scopes: list(values.scopes),
          owners: list(values.owners),
          provider: values.provider,
          source: values.source,
        })
        const baseUrl = gateway === "partner" ? config.publicBaseUrl : config.ingestBaseUrl
        return yield* printJson({
          client_id: created.clientId,
          client_secret: created.clientSecret,
          audience: config.audiences[gateway],
          token_url: `${baseUrl}/token`,
        })
      }
      case "list": {
        const all = yield* auth.listClients
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
      }
      case "grant": {
        const { values, positionals } = yield* parse(rest, {
          client: { type: "string" },
          owners: { type: "string" },
        })
        const clientId = values.client ?? positionals[0]
        const owners = list(values.owners)
        if (!clientId || !owners?.length) {
          return yield* new CliUsage({ message: "usage: clients grant CLIENT_ID --owners slug1,slug2" })
        }
        yield* auth.grantOwners(clientId, owners)
        return yield* printJson({ client_id: clientId, granted_owners: owners })
      }
      case "revoke": {
        const { positionals } = yield* parse(rest, {})
        if (positionals.length !== 1)
          return yield* new CliUsage({ message: "usage: clients revoke CLIENT_ID" })
        yield* auth.revokeClient(positionals[0]!)
        return yield* printJson({ client_id: positionals[0], revoked: true })
      }
      default:
        return yield* new CliUsage({ message: `unknown clients command: ${command ?? "(none)"}` })
    }
  })

/** `keys rotate`: a new token-signing key. */
export const keys = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (args[0] !== "rotate" || args.length !== 1)
      return yield* new CliUsage({ message: "usage: keys rotate" })
    const kid = yield* (yield* Auth).rotateKeys
    return yield* printJson({ kid, note: "tokens signed by the previous key stay valid until they expire" })
  })
