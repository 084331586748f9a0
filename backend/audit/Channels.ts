/**
 * Where an action came from: the console, the CLI, a script calling the operator API, or a partner's developer in
 * the partner portal (whose actor is the portal session). Import-free, so the console's schemas share the list.
 */
export const AuditChannels = ["console", "cli", "api", "portal"] as const
export type AuditChannelName = (typeof AuditChannels)[number]
