/**
 * Every CLI command in one table: its positional arguments, its options, the synopsis its usage shows and what
 * it does. The parser, the usage lines and `--help` (`CommandLine.ts`) all read this table, so they cannot
 * disagree. Nothing here imports anything: `--help` and a mistyped command line are answered before the rest of
 * the CLI loads.
 */

interface OptionSpec {
  readonly type: "string" | "boolean"
  readonly required?: true
  /** The values the option takes; anything else is refused with them listed. */
  readonly choices?: ReadonlyArray<string>
}

export interface CommandSpec {
  /** Names of the positional arguments, all required. */
  readonly args: ReadonlyArray<string>
  readonly options: Readonly<Record<string, OptionSpec>>
  /** What follows the command's name in its usage line. */
  readonly synopsis: string
  /** One line for the command list. */
  readonly summary: string
  /** More lines for the command's own `--help`. */
  readonly details?: string
}

const string = { type: "string" } as const
const required = { type: "string", required: true } as const
const flag = { type: "boolean" } as const
const target = { owner: string, provider: string } as const

export const COMMANDS = {
  migrate: {
    args: [],
    options: {},
    synopsis: "",
    summary: "create the database if missing, apply migrations, provision the streams",
    details:
      "Every other command that uses the database brings it to the current schema first, as npm start does.",
  },
  tail: {
    args: ["SUBJECT_PATTERN"],
    options: { since: string, stream: string },
    synopsis: "SUBJECT_PATTERN [--since 10m] [--stream NAME]",
    summary: "print messages on matching subjects (e.g. 'events.acme.>'), then follow new ones until ctrl-C",
    details:
      "The pattern is a subject of the catalog without the deployment prefix (events.acme.>, webhooks.status.*); " +
      "every stream that can hold a matching subject is followed, or only --stream (EVENTS or its prefixed name). " +
      "Each message: stream sequence, subject, stream time, headers, then the body (pretty JSON). " +
      "--since takes 90s, 10m, 2h, 1d or an ISO time; without it only new messages are shown.",
  },
  "clients create": {
    args: [],
    options: {
      gateway: { type: "string", required: true, choices: ["partner", "ingest"] },
      name: required,
      scopes: string,
      owners: string,
      provider: string,
      source: string,
      "legacy-partner-scopes": string,
    },
    synopsis:
      '--gateway partner|ingest --name NAME [--scopes "s1 s2"] [--owners slug1,slug2] [--provider NAME] [--source CODE] ' +
      '[--legacy-partner-scopes "prospects:write prospects:read"]',
    summary: "create an API client; prints its id and secret (shown only here), audience and token URL",
    details:
      "Without --scopes the client gets every scope of its gateway. Prints " +
      '{"client_id", "client_secret", "audience", "token_url"}; the secret is shown only here. ' +
      "--legacy-partner-scopes is for an older integration's ingestion client only: it keeps those Partner API " +
      "scopes (prospects:write, prospects:read) and may call the prospect routes on the ingestion gateway.",
  },
  "clients list": {
    args: [],
    options: {},
    synopsis: "",
    summary:
      "every client with its gateway, scopes, owners, provider, source and revocation (never a secret)",
  },
  "clients grant": {
    args: ["CLIENT_ID"],
    options: { owners: required },
    synopsis: "CLIENT_ID --owners slug1,slug2",
    summary: "let a client act for more owners",
  },
  "clients revoke": {
    args: ["CLIENT_ID"],
    options: {},
    synopsis: "CLIENT_ID",
    summary: "refuse the client's credentials and tokens from now on",
    details: "Refused at /token and its unexpired tokens at the gateways at once, in every process.",
  },
  "keys rotate": {
    args: [],
    options: {},
    synopsis: "",
    summary: "sign new tokens with a new key (tokens signed before stay valid until they expire)",
    details:
      "Every process signs with the new key within 30 s; tokens signed by the previous key stay valid until they expire.",
  },
  "owners create-managed": {
    args: [],
    options: { name: required, "external-org-id": required },
    synopsis: "--name NAME --external-org-id ID",
    summary: "an owner with an existing relationship with the service (created active)",
    details:
      'Its purchase flow and coverage ceiling stay service-owned; prints {"owner_slug", "name", "external_org_id"}. ' +
      "Refused for an external_org_id that a partner-created owner already has.",
  },
  "owners grant": {
    args: [],
    options: { owner: required, client: required, buildings: string },
    synopsis: "--owner SLUG --client CLIENT_ID [--buildings PMS_PROPERTY_ID,...]",
    summary: "grant an owner, or only named buildings of it, to a client",
    details: "With --buildings, any other building of the owner fails the client's items.",
  },
  "properties set-address": {
    args: ["OWNER_SLUG", "EXTERNAL_ID"],
    options: { file: required },
    synopsis: "OWNER_SLUG EXTERNAL_ID --file address.json",
    summary: "correct a building's address as service staff; derivation from its units stops (audited)",
    details:
      'The file is a JSON object {"line_one", "city", "state", "zip"} (line_two and country are accepted and ' +
      "ignored). The address is normalized as a partner's would be and locked: from now on the street is no longer " +
      "derived from the building's units (a unit street that disagrees is kept in address_disagreements), and an " +
      "address sent on a later property upsert does not replace it. Prints the building as stored. Audited as " +
      "property.set_address.",
  },
  "sources create": {
    args: [],
    options: {
      code: required,
      flow: required,
      "optional-ingest-fields": flag,
      "redirect-domains": string,
      clients: string,
    },
    synopsis:
      "--code CODE --flow embedded|expedited [--optional-ingest-fields] [--redirect-domains a.com,b.com] [--clients CLIENT_ID,...]",
    summary: "issue a source code, or update it",
    details:
      "Sets the source's enrollment flow, whether screening_result, employment_status and yearly_income are " +
      "optional, the domains allowed in redirect_url and the clients that may submit for it. Each run states the " +
      "flow and the optional fields; a list given replaces the stored one ('' empties it), an omitted one is kept.",
  },
  "sources list": {
    args: [],
    options: {},
    synopsis: "",
    summary: "every source with its flow, redirect domains and clients",
  },
  "sources mapping set": {
    args: ["CODE"],
    options: { file: required },
    synopsis: "CODE --file mapping.json",
    summary: "where each field of the source's inbound events is (replaces every mapping of the source)",
    details:
      "The file is a JSON object of event types to {field: JSON Pointer}; it replaces every mapping of the source " +
      "and the stored mappings are printed. A file with any problem (a required field unmapped, a bad pointer, an " +
      "unknown field; every problem is named) is refused and changes nothing.",
  },
  "sources mapping show": {
    args: ["CODE"],
    options: {},
    synopsis: "CODE",
    summary: "the source's mappings by event type ({} when none)",
  },
  "ingest log": {
    args: [],
    options: {
      source: string,
      prospect: string,
      outcome: { type: "string", choices: ["applied", "stale", "duplicate", "ignored", "failed"] },
      limit: string,
    },
    synopsis:
      "[--source CODE] [--prospect SOURCE_PROSPECT_ID] [--outcome applied|stale|duplicate|ignored|failed] [--limit N]",
    summary: "what became of each inbound event, newest first, one JSON object a line",
    details:
      "Fields: id, event_id, received_at, source, event_type, source_prospect_id, occurred_at, outcome, reason " +
      "(why one was ignored, such as unknown pms_property_id prop-9, or why the ingest actor gave up on a failed " +
      "one, kept in dead_letters), prospect_id, stream_seq. 50 records unless --limit, at most 1000.",
  },
  "prospects show": {
    args: [],
    options: { source: required, id: required },
    synopsis: "--source CODE --id SOURCE_PROSPECT_ID",
    summary: "the prospect as the API shows it, with its owner and, in status error, the error_reason",
    details: 'Prints {"owner_slug", "prospect"}; error_reason says why eligibility could not finish.',
  },
  "prospects recheck": {
    args: [],
    options: { source: required, id: required },
    synopsis: "--source CODE --id SOURCE_PROSPECT_ID",
    summary: "decide a complete prospect again (it goes to processing and the workers decide it)",
    details:
      "After fixing what put it in error, or after a roster change: prints it in status processing and the workers " +
      "decide it. An unknown or incomplete prospect is refused.",
  },
  "policies show": {
    args: ["POLICY_NUMBER"],
    options: {},
    synopsis: "POLICY_NUMBER",
    summary: "a policy with its documents link, billing, delinquencies and move-outs",
    details:
      'Prints {"policy" (as the webhooks carry it), "owner_slug", "policy_url" (the newest documents), "owner_today" ' +
      "(the date the owner's policies live on: its test clock's in staging and development), issued_on (that date " +
      "when it was sold), insured_name, premises, " +
      "unit_name, policy_holder_name, cadence, premium_cents, payments, installments_billed, next_charge_on, " +
      'card_last4, cancellation_reason, "delinquencies", "move_outs"}.',
  },
  "policies revise": {
    args: ["POLICY_NUMBER"],
    options: { "coverage-cents": string, start: string, end: string, unit: string, property: string },
    synopsis:
      "POLICY_NUMBER [--coverage-cents N] [--start YYYY-MM-DD] [--end YYYY-MM-DD] [--unit EXTERNAL_ID [--property EXTERNAL_ID]]",
    summary: "change a policy's coverage amount, dates or unit (audited)",
    details:
      "Only a policy in force (active, upcoming). --coverage-cents at most the owner's ceiling; --unit is the unit's " +
      "external_system_id (--property picks its building when several have one). Emits policy.updated, then the " +
      "documents are made again and policy.documents_updated carries a new policy_url; a revision whose end comes " +
      "before its start also cancels the policy (policy.canceled). The premium stays as sold; a revision that " +
      'changes nothing emits nothing. Prints {"changed", "canceled", "policy", "documents_generation"}. Audited ' +
      "with the state before and after.",
  },
  "policies cancel": {
    args: ["POLICY_NUMBER"],
    options: { reason: required },
    synopsis: "POLICY_NUMBER --reason TEXT",
    summary: "cancel a policy in force: policy.canceled, no more premiums (audited)",
    details:
      "The reason (1 to 500 characters) is kept for operators and in the audit log, never sent to partners. Prints " +
      "the policy as policy.canceled carries it.",
  },
  "delinquencies resolve": {
    args: ["DELINQUENCY_ID"],
    options: {},
    synopsis: "DELINQUENCY_ID",
    summary: "clear an active delinquency (a payment received another way): delinquency.resolved (audited)",
    details:
      "DELINQUENCY_ID is delinquency_<n>, as delinquency.created and policies show carry it. The delinquency is " +
      "resolved with nothing outstanding; the next monthly premium is charged alone.",
  },
  "providers create": {
    args: ["NAME"],
    options: { owners: string, properties: string },
    synopsis: "NAME --owners slug1,slug2 | --properties OWNER_SLUG/PROPERTY_EXTERNAL_ID,...",
    summary: "provision a platform provider's webhook subscriber covering those owners or buildings",
    details:
      "NAME is 1-63 lowercase letters, digits, '-' or '_'. Makes the provider's webhook subscriber and first signing " +
      "secret; run again, it replaces the whole coverage. Unknown owners or properties refuse the whole command. Audited.",
  },
  "providers list": {
    args: [],
    options: {},
    synopsis: "",
    summary: "every provider with what it covers",
  },
  "secrets show": {
    args: [],
    options: target,
    synopsis: "--owner SLUG|--provider NAME",
    summary: "the active webhook signing secrets, newest first (audited)",
    details:
      'Prints {"secrets": [{"secret", "created_at", "expires_at"}]} (expires_at null on the current one). ' +
      "Audited with the count, never a secret. An owner has none until its first endpoint.",
  },
  "secrets rotate": {
    args: [],
    options: { ...target, overlap: string },
    synopsis: "--owner SLUG|--provider NAME [--overlap 24h]",
    summary: "a new signing secret; the older ones keep signing for the overlap (default 24h) (audited)",
    details:
      "The new secret signs from now on and is printed; the older ones keep signing (a second v1 in " +
      "X-Webhook-Signature) until the overlap ends: 30m, 24h, 2d, at most 30d; 0s ends them now. A later rotation " +
      "never lengthens an overlap already running. Audited.",
  },
  "webhooks headers set": {
    args: [],
    options: { ...target, file: required },
    synopsis: "--owner SLUG|--provider NAME --file headers.json",
    summary: "static headers sent with every delivery (a JSON object; not Content-Type nor X-Webhook-*)",
    details:
      "A JSON object of at most 20 names to visible-ASCII values (at most 4,096 characters); Content-Type, any " +
      "X-Webhook-* and connection headers (Host, Content-Length, ...) are refused. Replaces the stored set. Audited " +
      "(names only).",
  },
  "webhooks headers show": {
    args: [],
    options: target,
    synopsis: "--owner SLUG|--provider NAME",
    summary: "the static headers of an owner's or provider's deliveries, with their values (audited)",
    details:
      "Prints the values, which usually hold the receiver's credentials: the showing is audited (names only), " +
      "as secrets show is. The console shows them masked and reveals one to an admin at a time.",
  },
  "webhooks test-receiver": {
    args: [],
    options: { port: string, host: string },
    synopsis: "[--port N] [--host 127.0.0.1]",
    summary:
      "a local HTTPS receiver printing each delivery and whether its signature is valid (not in production)",
    details:
      "Prints the https:// URL to register, then one line per delivery: event, delivery id, signature valid|invalid. " +
      "Its certificate is signed by a CA kept in the data folder, which the service trusts outside production.",
  },
  "operators create": {
    args: [],
    options: {
      email: required,
      role: { type: "string", required: true, choices: ["viewer", "operator", "admin"] },
      password: string,
    },
    synopsis: "--email E --role viewer|operator|admin [--password P]",
    summary: "a console operator; prints its email, role and (when generated) password (audited)",
    details:
      'Prints {"email", "role", "password"}; the password is there only when the command generated it, and is ' +
      "shown only here. A given one needs at least 12 characters. viewer reads; operator also retries deliveries " +
      "and changes endpoint status; admin also rotates secrets, sets custom headers and manages operators.",
  },
  "operators list": {
    args: [],
    options: {},
    synopsis: "",
    summary: "every console operator with role, disabled, created_at and last_sign_in_at (never a password)",
  },
  "operators disable": {
    args: [],
    options: { email: required },
    synopsis: "--email E",
    summary: "disable a console operator: it cannot sign in and its sessions end now (audited)",
  },
  "operators set-role": {
    args: [],
    options: {
      email: required,
      role: { type: "string", required: true, choices: ["viewer", "operator", "admin"] },
    },
    synopsis: "--email E --role viewer|operator|admin",
    summary: "change a console operator's role; it applies to its next request (audited)",
  },
  "enrollment complete": {
    args: [],
    options: {
      source: required,
      id: required,
      product: {
        type: "string",
        required: true,
        choices: ["security_deposit_insurance", "cash_deposit", "renter_guarantee_insurance"],
      },
      cadence: { type: "string", choices: ["upfront", "monthly"] },
      card: { type: "string", choices: ["ok", "decline", "fails-next-charge"] },
      "yearly-income": string,
      "employment-status": string,
      "has-ssn": { type: "string", choices: ["yes", "no"] },
    },
    synopsis:
      "--source S --id SOURCE_PROSPECT_ID --product security_deposit_insurance|cash_deposit|renter_guarantee_insurance " +
      "[--cadence upfront|monthly] [--card ok|decline|fails-next-charge] [--yearly-income N] " +
      "[--employment-status S] [--has-ssn yes|no]",
    summary:
      "walk a prospect's enrollment journey to its end with a test card (development and staging only)",
    details:
      "Walks the same journey as the renter's pages, through the Journey service: the details confirmed as sent, the " +
      "underwriting answers the prospect carries (or those given), the product and cadence, then a test card: ok " +
      "(4242 4242 4242 4242, the default), decline (4000 0000 0000 0002) or fails-next-charge (4000 0000 0000 0341, " +
      'paid now, declined at its next monthly charge). Prints {"step", "application", "policy"} with the application ' +
      "and policy as the webhooks carry them; a journey that did not complete (declined, blocked, a missing answer) " +
      "exits 2 after printing. Refused in production.",
  },
} as const satisfies Readonly<Record<string, CommandSpec>>

export type CommandName = keyof typeof COMMANDS
