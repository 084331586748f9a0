import { Effect } from "effect"
import type { Crypto } from "../platform/Crypto.ts"
import { decodeFields } from "../platform/Validation.ts"
import { BankAccountItem, externalIdOf, failed, type BatchRules, type ItemResult } from "./Domain.ts"
import type { RosterRepo } from "./Repo.ts"

const decodeBankAccount = decodeFields(BankAccountItem)

/** A bank account as a batch leaves it; `sealed` undefined keeps the stored account number. */
interface AccountWrite {
  readonly external_system_id: string
  readonly display_name: string
  readonly routing_number: string
  readonly account_number_last4: string
  readonly sealed: Buffer | undefined
}

/**
 * A bank-account batch's items applied in order to the owner's accounts, under the owner's lock: what each item
 * did, with the account as the batch leaves it. The owner's default account moves with them.
 */
export const applyBankAccounts =
  (repo: RosterRepo["Service"], crypto: Crypto["Service"]): BatchRules =>
  (owner, items) =>
    Effect.gen(function* () {
      const stored = yield* repo.bankAccounts(owner.id)
      const byExternalId = new Map(stored.map((a) => [a.external_system_id, a]))
      let defaultExternalId = stored.find((a) => a.id === owner.default_bank_account_id)?.external_system_id
      // Each identifier's account as this batch leaves it; the last item of each identifier wins, and earlier
      // ones of it report as updates of it. `sealed` undefined keeps the stored account number.
      const pending = new Map<string, AccountWrite>()
      const results: Array<ItemResult> = []
      for (const raw of items) {
        const decoded = decodeBankAccount(raw)
        if ("errors" in decoded) {
          results.push(failed(externalIdOf(raw), decoded.errors))
          continue
        }
        const item = decoded.value
        const base = pending.get(item.external_system_id) ?? byExternalId.get(item.external_system_id)
        if (base === undefined) {
          const missing = (["display_name", "routing_number", "account_number"] as const).filter(
            (field) => item[field] === undefined,
          )
          if (missing.length > 0) {
            results.push(
              failed(item.external_system_id, Object.fromEntries(missing.map((f) => [f, ["is required"]]))),
            )
            continue
          }
        }
        if (item.default === false && defaultExternalId === item.external_system_id) {
          results.push(
            failed(item.external_system_id, {
              default: [
                "can't be false on the owner's default account: set default on another account to move it",
              ],
            }),
          )
          continue
        }
        const sealed =
          item.account_number === undefined
            ? (pending.get(item.external_system_id)?.sealed ?? undefined)
            : yield* crypto.seal(new TextEncoder().encode(item.account_number))
        pending.set(item.external_system_id, {
          external_system_id: item.external_system_id,
          display_name: item.display_name ?? base!.display_name,
          routing_number: item.routing_number ?? base!.routing_number,
          account_number_last4: item.account_number?.slice(-4) ?? base!.account_number_last4,
          sealed,
        })
        // The owner's first account becomes the default; `default: true` moves it.
        if (item.default === true || defaultExternalId === undefined)
          defaultExternalId = item.external_system_id
        results.push({
          external_system_id: item.external_system_id,
          action: base === undefined ? "created" : "updated",
        })
      }

      const rows = [...pending.values()]
      const inserted = yield* repo.insertBankAccounts(
        owner.id,
        rows
          .filter((r) => !byExternalId.has(r.external_system_id))
          .map(({ sealed, ...r }) => ({ ...r, account_number_sealed: sealed! })),
      )
      yield* repo.updateBankAccounts(
        rows
          .filter((r) => byExternalId.has(r.external_system_id))
          .map(({ external_system_id, sealed, ...r }) => ({
            ...r,
            account_number_sealed: sealed,
            id: byExternalId.get(external_system_id)!.id,
          })),
      )
      const idOf = (externalId: string) =>
        byExternalId.get(externalId)?.id ??
        inserted.find((r) => r.external_system_id === externalId)?.id ??
        null
      const defaultId = defaultExternalId === undefined ? null : idOf(defaultExternalId)
      if (defaultId !== owner.default_bank_account_id) {
        yield* repo.updateOwner({ ...owner, default_bank_account_id: defaultId })
      }
      return results.map((result) => {
        if (result.action === "failed") return result
        const account = pending.get(result.external_system_id)!
        return {
          ...result,
          display_name: account.display_name,
          routing_number: account.routing_number,
          account_number_last4: account.account_number_last4,
          default: result.external_system_id === defaultExternalId,
        }
      })
    })
