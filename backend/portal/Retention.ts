import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { pruneOlder } from "../platform/Prune.ts"

/**
 * What the portal lets the retention sweep delete of its rows: sessions that expired before a time, ended or not
 * (an ended session expires when it would have). The operator's sweep decides when; only this context deletes.
 */
export class PortalRetention extends Context.Service<PortalRetention>()(
  "partner-service/portal/PortalRetention",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        /** Up to `limit` sessions that expired before `before`; how many went. */
        pruneSessions: (before: Date, limit: number) =>
          pruneOlder(db, "portal_sessions", "expires_at", before, limit),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(PortalRetention, PortalRetention.make)
}
