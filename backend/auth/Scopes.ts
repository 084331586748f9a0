/** OAuth scopes, one per route family; a client is granted some, a token carries some or all of those. */
export const Scopes = {
  "owners:write": "Create and update property owners",
  "bank_accounts:write": "Register and update an owner's bank accounts",
  "properties:write": "Create and update an owner's properties (buildings)",
  "units:write": "Create and update an owner's units",
  "prospects:write": "Submit prospects",
  "prospects:read": "Read prospects, their status and enrollment links",
  "webhooks:manage": "Manage webhook endpoints and their deliveries",
  "move_outs:write": "Create move-outs",
  "test_clock:write": "Read and advance the owner's test clock (staging and development)",
  "ingest:events": "Send events to the ingestion gateway",
} as const

export type Scope = keyof typeof Scopes

export const isScope = (value: string): value is Scope => Object.hasOwn(Scopes, value)

/** Scopes each gateway can grant: the ingestion gateway takes only event posts. */
export const gatewayScopes = {
  partner: (Object.keys(Scopes) as Array<Scope>).filter((s) => s !== "ingest:events"),
  ingest: ["ingest:events"] as Array<Scope>,
} as const

/**
 * Partner API scopes an ingestion gateway client may still hold (spec, authentication rule 2: a few older
 * integrations hold Partner API grants there). Only an operator grants them, with `--legacy-partner-scopes`; they
 * open the prospect routes the ingestion gateway serves for those integrations.
 */
export const legacyIngestScopes: ReadonlyArray<Scope> = ["prospects:write", "prospects:read"]
