import { Cause, type Config, Effect, Exit, Layer } from "effect"
import { Auth } from "../auth/Auth.ts"
import { Journey } from "../enrollment/Journey.ts"
import type { ClientCommandRejected } from "../auth/Domain.ts"
import type { MappingRejected } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import { AppConfig } from "../platform/Config.ts"
import { type ConfigInvalid } from "../platform/Settings.ts"
import { Db } from "../platform/Db.ts"
import { loggerLayer } from "../platform/Observability.ts"
import { NatsLayer, PlatformLayer } from "../Infrastructure.ts"
import { recordAudit } from "../audit/Audit.ts"
import type { OperatorNotFound, OperatorRejected } from "../operator/Domain.ts"
import { Operators } from "../operator/Operators.ts"
import { lifecycleLayer } from "../policies/Lifecycle.ts"
import type {
  DelinquencyNotFound,
  LifecycleCommandRejected,
  PolicyNotFound,
} from "../policies/LifecycleDomain.ts"
import { Policies } from "../policies/Policies.ts"
import type { ProspectIncomplete, ProspectNotFound } from "../prospects/Domain.ts"
import { Enrollments } from "../prospects/Enrollments.ts"
import { ProspectBatches } from "../prospects/ProspectBatches.ts"
import { Prospects } from "../prospects/Prospects.ts"
import { type SourceCommandRejected, Sources } from "../prospects/Sources.ts"
import type { AddressCorrectionRejected, OwnerNotManaged } from "../roster/Domain.ts"
import { Roster } from "../roster/Roster.ts"
import type { OwnerUnknown, ProviderNotProvisioned, WebhookCommandRejected } from "../webhooks/Domain.ts"
import { Secrets } from "../webhooks/endpoints/Secrets.ts"
import { createClient, grantClient, listClients, revokeClient, rotateKeys } from "./Clients.ts"
import { type CommandLine, type Input, refusal } from "./CommandLine.ts"
import type { CommandName } from "./Commands.ts"
import { completeEnrollment, EnrollmentStopped } from "./Enrollment.ts"
import { ingestLog } from "./Ingest.ts"
import { CliIo, type CliIoShape, printLine } from "./Io.ts"
import { createOperator, disableOperator, listOperators, setOperatorRole } from "./Operators.ts"
import { createManagedOwner, grantOwner } from "./Owners.ts"
import { cancelPolicy, resolveDelinquency, revisePolicy, showPolicy } from "./Policies.ts"
import { setPropertyAddress } from "./Properties.ts"
import { recheckProspect, showProspect } from "./Prospects.ts"
import { createProvider, listProviders } from "./Providers.ts"
import { createSource, listSources, setMapping, showMapping } from "./Sources.ts"
import { tail } from "./Tail.ts"
import type { CliUsage } from "./Usage.ts"
import { cliActor, rotateSecrets, setHeaders, showHeaders, showSecrets } from "./Webhooks.ts"

/**
 * Failures a command reports as a message (exit status 2) rather than a crash; a context's settings are read when
 * the command builds its layers, so a bad one is one of them (an unreadable environment is a crash).
 */
type CommandFailure =
  | ConfigInvalid
  | CliUsage
  | ClientCommandRejected
  | OwnerNotManaged
  | AddressCorrectionRejected
  | SourceCommandRejected
  | MappingRejected
  | ProspectNotFound
  | ProspectIncomplete
  | WebhookCommandRejected
  | OwnerUnknown
  | ProviderNotProvisioned
  | EnrollmentStopped
  | PolicyNotFound
  | DelinquencyNotFound
  | LifecycleCommandRejected
  | OperatorRejected
  | OperatorNotFound

type Handler<N extends CommandName> = (
  input: Input<N>,
) => Effect.Effect<unknown, CommandFailure | Config.ConfigError, AppConfig | CliIo>

/** The platform and authentication, for commands that manage clients. */
const withAuth = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Auth.layer), Effect.provide(PlatformLayer))

/** Sources and ingestion: the ingest service and what it needs (prospects, roster, sources, the platform). */
const withIngest = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(
    Effect.provide(Ingest.layer),
    Effect.provide(ProspectBatches.layer),
    Effect.provide(Layer.mergeAll(Roster.layer, Sources.layer)),
    Effect.provide(PlatformLayer),
  )

/** Webhook subscribers, their secrets and custom headers. */
const withSecrets = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Secrets.layer), Effect.provide(PlatformLayer))

const withRoster = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Roster.layer), Effect.provide(PlatformLayer))

const withProspects = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(
    Effect.provide(Prospects.layer),
    Effect.provide(Roster.layer),
    Effect.provide(PlatformLayer),
  )

/** The renter's journey and everything it drives (policies, payments, documents' requests). */
const withJourney = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(
    Effect.provide(Journey.layer),
    Effect.provide(Policies.layer),
    Effect.provide(Enrollments.layer),
    Effect.provide(Layer.mergeAll(Roster.layer, Sources.layer)),
    Effect.provide(PlatformLayer),
  )

/** Policies after issue: revisions, cancellation, billing and delinquencies (and what they stand on). */
const withLifecycle = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(
    Effect.provide(lifecycleLayer),
    Effect.provide(Policies.layer),
    Effect.provide(Enrollments.layer),
    Effect.provide(Layer.mergeAll(Roster.layer, Sources.layer)),
    Effect.provide(PlatformLayer),
  )

/** Console operators. */
const withOperators = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(effect).pipe(Effect.provide(Operators.layer), Effect.provide(PlatformLayer))

/**
 * The audit target of each state-changing command whose service records no entry of its own; the CLI records one
 * when the command succeeded (after its change, not in its transaction), with what the operator asked for.
 */
const CLI_AUDITED: { readonly [N in CommandName]?: (input: Input<N>) => string } = {
  "clients create": (input) => `client:${input.options.name}`,
  "clients grant": (input) => `client:${input.args[0]}`,
  "clients revoke": (input) => `client:${input.args[0]}`,
  "keys rotate": () => "signing_keys",
  "owners create-managed": (input) => `owner:${input.options.name}`,
  "owners grant": (input) => `owner:${input.options.owner}`,
  "sources create": (input) => `source:${input.options.code}`,
  "sources mapping set": (input) => `source:${input.args[0]}`,
  "prospects recheck": (input) => `prospect:${input.options.source}/${input.options.id}`,
  "enrollment complete": (input) => `prospect:${input.options.source}/${input.options.id}`,
}

/** Runs `effect` (a command of `CLI_AUDITED`), then records it in the audit log. */
const audited =
  <N extends CommandName>(name: N, input: Input<N>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.tap(effect, () =>
      Effect.gen(function* () {
        const target = (CLI_AUDITED[name] as ((input: Input<N>) => string) | undefined)?.(input)
        if (target === undefined) return
        yield* recordAudit(yield* Db, {
          actor: cliActor((yield* CliIo).env),
          action: name.replaceAll(" ", ".").replaceAll("-", "_"),
          target,
          after: { args: input.args, options: input.options },
        })
      }),
    )

const handlers: { readonly [N in CommandName]: Handler<N> } = {
  migrate: () =>
    Effect.scoped(Layer.build(PlatformLayer)).pipe(
      Effect.andThen(printLine("database migrated and streams provisioned")),
    ),
  // Only NATS: tailing must work while Postgres is down.
  tail: (input) => Effect.scoped(tail(input)).pipe(Effect.provide(NatsLayer)),
  "clients create": (input) => withAuth(audited("clients create", input)(createClient(input))),
  "clients list": () => withAuth(listClients()),
  "clients grant": (input) => withAuth(audited("clients grant", input)(grantClient(input))),
  "clients revoke": (input) => withAuth(audited("clients revoke", input)(revokeClient(input))),
  "keys rotate": (input) => withAuth(audited("keys rotate", input)(rotateKeys())),
  "owners create-managed": (input) =>
    withRoster(audited("owners create-managed", input)(createManagedOwner(input))),
  "owners grant": (input) => withRoster(audited("owners grant", input)(grantOwner(input))),
  "properties set-address": (input) => withRoster(setPropertyAddress(input)),
  "sources create": (input) => withIngest(audited("sources create", input)(createSource(input))),
  "sources list": () => withIngest(listSources()),
  "sources mapping set": (input) => withIngest(audited("sources mapping set", input)(setMapping(input))),
  "sources mapping show": (input) => withIngest(showMapping(input)),
  "ingest log": (input) => withIngest(ingestLog(input)),
  "prospects show": (input) => withProspects(showProspect(input)),
  "prospects recheck": (input) => withProspects(audited("prospects recheck", input)(recheckProspect(input))),
  "policies show": (input) => withLifecycle(showPolicy(input)),
  "policies revise": (input) => withLifecycle(revisePolicy(input)),
  "policies cancel": (input) => withLifecycle(cancelPolicy(input)),
  "delinquencies resolve": (input) => withLifecycle(resolveDelinquency(input)),
  "providers create": (input) => withSecrets(createProvider(input)),
  "providers list": () => withSecrets(listProviders()),
  "secrets show": (input) => withSecrets(showSecrets(input)),
  "secrets rotate": (input) => withSecrets(rotateSecrets(input)),
  "webhooks headers set": (input) => withSecrets(setHeaders(input)),
  "webhooks headers show": (input) => withSecrets(showHeaders(input)),
  // Loaded on use: certificate generation is needed by this command alone.
  "webhooks test-receiver": (input) =>
    withSecrets(
      Effect.flatMap(
        Effect.promise(() => import("./TestReceiver.ts")),
        (module) => module.testReceiver(input),
      ),
    ),
  "operators create": (input) => withOperators(createOperator(input)),
  "operators list": () => withOperators(listOperators()),
  "operators disable": (input) => withOperators(disableOperator(input)),
  "operators set-role": (input) => withOperators(setOperatorRole(input)),
  "enrollment complete": (input) =>
    Effect.gen(function* () {
      // Refused before anything connects: it pays with the test provider's cards.
      if ((yield* AppConfig).serviceEnv === "production") {
        return yield* new EnrollmentStopped({
          message: "enrollment complete is refused in production: it pays with the test provider's cards",
        })
      }
      return yield* withJourney(audited("enrollment complete", input)(completeEnrollment(input)))
    }),
}

const refuse = (message: string) =>
  CliIo.use((io) =>
    Effect.sync(() => {
      io.stderr(`${message}\n`)
      return 2
    }),
  )

/**
 * Runs one parsed command with the configuration of `io.env`, its logs as JSON lines on stderr (warnings and
 * worse unless LOG_LEVEL asks for more detail), and its result on stdout. The exit status: 0 when it succeeded or
 * was stopped, 2 when it was refused (with the message on stderr), 1 on a crash (reported on stderr too, so
 * stdout only ever holds a result).
 */
export const runCommand = async (line: Extract<CommandLine, { _tag: "Command" }>, io: CliIoShape) => {
  const handler = handlers[line.name] as Handler<CommandName>
  const program = Effect.gen(function* () {
    const config = yield* AppConfig
    const logLevel = config.logLevel === "info" ? "warn" : config.logLevel
    yield* handler(line.input).pipe(
      Effect.provide(loggerLayer({ logLevel }, (text) => io.stderr(`${text}\n`))),
    )
    return 0
  }).pipe(
    Effect.provide(AppConfig.layerFrom(io.env)),
    Effect.catchTags({
      ConfigInvalid: (error: ConfigInvalid) => refuse(error.message),
      CliUsage: (error) => refuse(refusal(error.message, line.name).trimEnd()),
      ClientCommandRejected: (error) => refuse(error.message),
      OwnerNotManaged: (error) => refuse(error.message),
      AddressCorrectionRejected: (error) => refuse(error.message),
      SourceCommandRejected: (error) => refuse(error.message),
      MappingRejected: (error) => refuse(error.message),
      ProspectNotFound: (error) => refuse(error.message),
      ProspectIncomplete: (error) => refuse(error.message),
      WebhookCommandRejected: (error) => refuse(error.message),
      OwnerUnknown: (error) => refuse(`no owner ${error.slug}`),
      EnrollmentStopped: (error) => refuse(error.message),
      PolicyNotFound: (error) => refuse(error.message),
      LifecycleCommandRejected: (error) => refuse(error.message),
      DelinquencyNotFound: (error) => refuse(error.message),
      OperatorRejected: (error) => refuse(error.message),
      OperatorNotFound: (error) => refuse(`no operator ${error.email}`),
      ProviderNotProvisioned: (error) =>
        refuse(`provider ${error.provider} is not provisioned: run providers create ${error.provider} first`),
    }),
    Effect.provide(Layer.succeed(CliIo, io)),
  )
  const exit = await Effect.runPromiseExit(program, { signal: io.signal })
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) return 0
  io.stderr(`${Cause.pretty(exit.cause)}\n`)
  return 1
}
