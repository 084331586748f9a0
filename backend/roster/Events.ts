import type { OutboxMessage } from "../platform/Outbox.ts"
import type { ItemResult } from "./Domain.ts"

export type Kind = "owner" | "bank_account" | "property" | "unit"

/** `roster.<owner_slug>.<kind>.<created|updated>`, one per applied item, keyed by owner so they stay in order. */
export const rosterEvents = (
  slug: string,
  kind: Kind,
  results: ReadonlyArray<ItemResult>,
): Array<OutboxMessage> =>
  results
    .filter((r) => r.action !== "failed")
    .map((r) => ({ subject: `roster.${slug}.${kind}.${r.action}`, key: slug, payload: r }))
