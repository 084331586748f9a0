import { Cause, Effect, Layer } from "effect"
import { Auth } from "../auth/Auth.ts"
import { AppConfig, loadAppConfig } from "../platform/Config.ts"
import { Nats } from "../platform/Nats.ts"
import { runMain } from "../platform/RunMain.ts"
import { loggerLayer } from "../platform/Observability.ts"
import { PlatformLayer } from "../platform/Platform.ts"
import type { ClientCommandRejected } from "../auth/Domain.ts"
import type { MappingRejected } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import type { ProspectIncomplete, ProspectNotFound } from "../prospects/Domain.ts"
import { Prospects } from "../prospects/Prospects.ts"
import { type SourceCommandRejected, Sources } from "../prospects/Sources.ts"
import type { OwnerNotManaged } from "../roster/Domain.ts"
import { Roster } from "../roster/Roster.ts"
import type { OwnerUnknown, ProviderNotProvisioned, WebhookCommandRejected } from "../webhooks/Domain.ts"
import { Secrets } from "../webhooks/Secrets.ts"
import { clients, keys } from "./Clients.ts"
import { ingest } from "./Ingest.ts"
import { owners } from "./Owners.ts"
import { prospects } from "./Prospects.ts"
import { providers } from "./Providers.ts"
import { sources } from "./Sources.ts"
import { tail } from "./Tail.ts"
import { CliUsage, parse } from "./Usage.ts"
import { secrets, webhooks } from "./Webhooks.ts"

const USAGE = `usage: npm run cli -- <command>

commands:
  migrate                                   create the database if missing, apply migrations, provision streams
  tail <subject-pattern> [--since 10m] [--stream NAME]
                                            print messages on matching subjects (e.g. 'events.acme.>'),
                                            then follow new ones until ctrl-C
  clients create --gateway partner|ingest --name NAME [--scopes "s1 s2"] [--owners slug1,slug2]
                 [--provider NAME] [--source CODE]
                                            create an API client; prints its id and secret (shown once)
  clients list                              every client with its grants (never a secret)
  clients grant CLIENT_ID --owners slug1,slug2
                                            let a client act for more owners
  clients revoke CLIENT_ID                  refuse the client's credentials and tokens from now on
  keys rotate                               sign new tokens with a new key (old tokens stay valid until expiry)
  owners create-managed --name NAME --external-org-id ID
                                            an owner with an existing relationship with the service
  owners grant --owner SLUG --client CLIENT_ID [--buildings PMS_PROPERTY_ID,...]
                                            grant an owner, or only named buildings of it, to a client
  sources create --code CODE --flow embedded|expedited [--optional-ingest-fields]
                 [--redirect-domains a.com,b.com] [--clients CLIENT_ID,...]
                                            issue a source code, or update it: each run sets the flow and
                                            whether ingest fields are optional; a list given replaces the
                                            stored one ('' empties it), an omitted one is kept
  sources list                              every source with its flow, redirect domains and clients
  sources mapping set CODE --file mapping.json
                                            where each field of the source's inbound events is: the file
                                            is a JSON object of event types to {field: JSON Pointer} and
                                            replaces every mapping of the source; prints them
  sources mapping show CODE                 the source's mappings by event type ({} when none)
  ingest log [--source CODE] [--prospect SOURCE_PROSPECT_ID] [--outcome applied|stale|duplicate|ignored]
             [--limit N]                    what became of each inbound event (applied, or why not), newest
                                            first, one JSON object a line (50 unless --limit, at most 1000)
  prospects show --source CODE --id SOURCE_PROSPECT_ID
                                            the prospect as the API shows it, with its owner and, in
                                            status error, the error_reason
  prospects recheck --source CODE --id SOURCE_PROSPECT_ID
                                            decide a complete prospect again (after fixing the cause of
                                            an error, or a roster change): it goes to processing and the
                                            workers decide it
  providers create NAME --owners slug1,slug2 | --properties OWNER_SLUG/PROPERTY_EXTERNAL_ID,...
                                            provision a platform provider's webhook subscriber (and its
                                            signing secret) covering those owners or only those buildings;
                                            run again to replace the coverage
  providers list                            every provider with what it covers
  secrets show --owner SLUG|--provider NAME the active webhook signing secrets, newest first (audited)
  secrets rotate --owner SLUG|--provider NAME [--overlap 24h]
                                            a new signing secret; the older ones keep signing for the
                                            overlap (30m, 24h, 2d; default 24h) (audited)
  webhooks headers set --owner SLUG|--provider NAME --file headers.json
                                            static headers sent with every delivery (a JSON object of
                                            names to values; not Content-Type nor X-Webhook-*)
  webhooks headers show --owner SLUG|--provider NAME
`

/** The platform and authentication, for commands that manage clients. */
const withAuth = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Auth.layer), Effect.provide(PlatformLayer))

/** Sources and ingestion: the ingest service and what it needs (prospects, roster, sources, the platform). */
const withIngest = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(
    Effect.provide(Ingest.layer),
    Effect.provide(Prospects.layer),
    Effect.provide(Layer.mergeAll(Roster.layer, Sources.layer)),
    Effect.provide(PlatformLayer),
  )

/** Webhook subscribers, their secrets and custom headers. */
const withSecrets = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Secrets.layer), Effect.provide(PlatformLayer))

/** Failures a command reports as a message (exit status 2) rather than a crash. */
type CommandFailure =
  | CliUsage
  | ClientCommandRejected
  | OwnerNotManaged
  | SourceCommandRejected
  | MappingRejected
  | ProspectNotFound
  | ProspectIncomplete
  | WebhookCommandRejected
  | OwnerUnknown
  | ProviderNotProvisioned

const commands: Record<
  string,
  (args: ReadonlyArray<string>) => Effect.Effect<unknown, CommandFailure, AppConfig>
> = {
  migrate: () =>
    Effect.scoped(Layer.build(PlatformLayer)).pipe(
      Effect.andThen(Effect.sync(() => process.stdout.write("database migrated and streams provisioned\n"))),
    ),
  tail: (args: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const { positionals, values } = yield* parse(args, {
        since: { type: "string" },
        stream: { type: "string" },
      })
      if (positionals.length !== 1) return yield* new CliUsage({ message: "tail takes one subject pattern" })
      return yield* Effect.scoped(tail(positionals[0]!, values)).pipe(Effect.provide(Nats.layer))
    }),
  clients: (args: ReadonlyArray<string>) => withAuth(clients(args)),
  keys: (args: ReadonlyArray<string>) => withAuth(keys(args)),
  owners: (args: ReadonlyArray<string>) =>
    Effect.scoped(owners(args)).pipe(Effect.provide(Roster.layer), Effect.provide(PlatformLayer)),
  sources: (args: ReadonlyArray<string>) => withIngest(sources(args)),
  ingest: (args: ReadonlyArray<string>) => withIngest(ingest(args)),
  prospects: (args: ReadonlyArray<string>) =>
    Effect.scoped(prospects(args)).pipe(
      Effect.provide(Prospects.layer),
      Effect.provide(Roster.layer),
      Effect.provide(PlatformLayer),
    ),
  providers: (args: ReadonlyArray<string>) => withSecrets(providers(args)),
  secrets: (args: ReadonlyArray<string>) => withSecrets(secrets(args)),
  webhooks: (args: ReadonlyArray<string>) => withSecrets(webhooks(args)),
}

const program = Effect.gen(function* () {
  const [name, ...args] = process.argv.slice(2)
  const command = name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined
  if (command === undefined) {
    process.stderr.write(USAGE)
    process.exitCode = name === undefined || name === "help" || name === "--help" ? 0 : 2
    return
  }
  const config = yield* loadAppConfig
  yield* command(args).pipe(
    Effect.provide(Layer.succeed(AppConfig, config)),
    Effect.provide(
      loggerLayer({ logLevel: config.logLevel === "info" ? "warn" : config.logLevel }, "stderr"),
    ),
  )
}).pipe(
  Effect.catchTags({
    ConfigInvalid: (error) => fail(error.message),
    CliUsage: (error) => fail(`${error.message}\n\n${USAGE}`),
    ClientCommandRejected: (error) => fail(error.message),
    OwnerNotManaged: (error) => fail(error.message),
    SourceCommandRejected: (error) => fail(error.message),
    MappingRejected: (error) => fail(error.message),
    ProspectNotFound: (error) => fail(error.message),
    ProspectIncomplete: (error) => fail(error.message),
    WebhookCommandRejected: (error) => fail(error.message),
    OwnerUnknown: (error) => fail(`no owner ${error.slug}`),
    ProviderNotProvisioned: (error) =>
      fail(`provider ${error.provider} is not provisioned: run providers create ${error.provider} first`),
  }),
  // A crash is reported on stderr too, so stdout only ever holds a command's output.
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.sync(() => {
          process.stderr.write(`${Cause.pretty(cause)}\n`)
          process.exitCode = 1
        }),
  ),
)

const fail = (message: string) =>
  Effect.sync(() => {
    process.stderr.write(`${message}\n`)
    process.exitCode = 2
  })

runMain(program)
