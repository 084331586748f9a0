import { Effect } from "effect"
import { Db } from "../platform/Db.ts"

export interface BankAccountRow {
  readonly id: string
  readonly external_system_id: string
  readonly display_name: string
  readonly routing_number: string
  readonly account_number_last4: string
}

/** The roster's SQL of an owner's bank accounts. */
export const makeBankAccountsRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    bankAccounts: (ownerId: string) =>
      db.query(
        (sql) => sql<Array<BankAccountRow>>`
          select id, external_system_id, display_name, routing_number, account_number_last4
          from bank_accounts where owner_id = ${ownerId} order by id`,
      ),
    insertBankAccounts: (
      ownerId: string,
      rows: ReadonlyArray<Omit<BankAccountRow, "id"> & { readonly account_number_sealed: Buffer }>,
    ) =>
      rows.length === 0
        ? Effect.succeed([] as Array<{ id: string; external_system_id: string }>)
        : db.query(
            (sql) => sql<Array<{ id: string; external_system_id: string }>>`
              insert into bank_accounts ${sql(
                rows.map((r) => ({ ...r, owner_id: ownerId })),
                "owner_id",
                "external_system_id",
                "display_name",
                "routing_number",
                "account_number_sealed",
                "account_number_last4",
              )}
              returning id, external_system_id`,
          ),
    /** Each account's fields; an account whose `account_number_sealed` is undefined keeps its stored number. */
    updateBankAccounts: (
      rows: ReadonlyArray<
        Omit<BankAccountRow, "external_system_id"> & { readonly account_number_sealed: Buffer | undefined }
      >,
    ) =>
      rows.length === 0
        ? Effect.void
        : db.query(
            (sql) => sql`
              update bank_accounts b set display_name = v.display_name, routing_number = v.routing_number,
                account_number_sealed = coalesce(decode(nullif(v.sealed, ''), 'base64'), b.account_number_sealed),
                account_number_last4 = v.last4, updated_at = now()
              from (values ${sql(
                rows.map((r) => [
                  r.id,
                  r.display_name,
                  r.routing_number,
                  r.account_number_sealed?.toString("base64") ?? "",
                  r.account_number_last4,
                ]),
              )}) as v (id, display_name, routing_number, sealed, last4)
              where b.id = v.id::bigint`,
          ),
  }
})
