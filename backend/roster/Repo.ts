import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { type AuditEntry, recordAudit } from "../audit/Audit.ts"
import { makeBankAccountsRepo } from "./BankAccountsRepo.ts"
import { makeOwnersRepo } from "./OwnersRepo.ts"
import { makePropertiesRepo } from "./PropertiesRepo.ts"

/**
 * The roster's SQL, in parts by what it writes: owners and their grants (`OwnersRepo.ts`), bank accounts
 * (`BankAccountsRepo.ts`), properties, units and addresses (`PropertiesRepo.ts`).
 */
export class RosterRepo extends Context.Service<RosterRepo>()("partner-service/roster/RosterRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      ...(yield* makeOwnersRepo),
      ...(yield* makeBankAccountsRepo),
      ...(yield* makePropertiesRepo),
      /** A line of the operators' append-only audit log. */
      audit: (entry: AuditEntry) => recordAudit(db, entry),
    }
  }),
}) {
  static readonly layer = Layer.effect(RosterRepo, RosterRepo.make)
}
