import { Clock, Context, Effect, Layer } from "effect"
import { type AuditFilter, AuditReads } from "../audit/AuditReads.ts"
import { OwnerReads } from "../roster/OwnerReads.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import { Crypto, randomToken } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { recordAudit } from "../audit/Audit.ts"
import {
  EMAIL_RULE,
  isOperatorEmail,
  isRole,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  OperatorNotFound,
  OperatorRejected,
  type OperatorView,
  type Role,
  Roles,
} from "./Domain.ts"
import { OperatorRepo, type OperatorRow } from "./Repo.ts"

/** Owners suggested for what an operator has typed so far: as many as a list under a field shows. */
const OWNER_SUGGESTIONS = 20

export const operatorView = (row: OperatorRow): OperatorView => ({
  email: row.email,
  role: row.role,
  disabled: row.disabled,
  created_at: row.created_at.toISOString(),
  last_sign_in_at: row.last_sign_in_at?.toISOString() ?? null,
})

/** What the audit log keeps of an operator: never the hash. */
const audited = (row: OperatorRow) => ({ email: row.email, role: row.role, disabled: row.disabled })

const emailRejected = () => new OperatorRejected({ field: "email", message: EMAIL_RULE })

const checkEmail = (email: unknown) =>
  typeof email === "string" && isOperatorEmail(email) ? Effect.succeed(email) : Effect.fail(emailRejected())

const checkRole = (role: unknown) =>
  isRole(role)
    ? Effect.succeed(role)
    : Effect.fail(new OperatorRejected({ field: "role", message: `role must be one of ${Roles.join(", ")}` }))

/** Console operators: accounts, roles, passwords (stored only as scrypt hashes). Every change is audited. */
export class Operators extends Context.Service<Operators>()("partner-service/operator/Operators", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* OperatorRepo
    const auditReads = yield* AuditReads
    const ownerReads = yield* OwnerReads
    const endpointReads = yield* EndpointReads
    const crypto = yield* Crypto

    /**
     * A new operator; `password` when given must be 12 to 1,024 characters, otherwise one is generated and
     * returned (the only time it is shown).
     */
    const create = Effect.fn("Operators.create")(function* (
      input: { readonly email: unknown; readonly role: unknown; readonly password?: unknown },
      actor: string,
    ) {
      const email = yield* checkEmail(input.email)
      const role = yield* checkRole(input.role)
      const given = input.password
      if (
        given !== undefined &&
        (typeof given !== "string" ||
          given.length < MIN_PASSWORD_LENGTH ||
          given.length > MAX_PASSWORD_LENGTH)
      ) {
        return yield* new OperatorRejected({
          field: "password",
          message: `password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
        })
      }
      const password = given ?? randomToken(18)
      const passwordHash = yield* crypto.hashSecret(password)
      return yield* db.transaction(
        Effect.gen(function* () {
          const row = yield* repo.insertOperator({ email, role, passwordHash })
          if (row === undefined) {
            return yield* new OperatorRejected({
              field: "email",
              message: `an operator with email ${email} already exists`,
            })
          }
          yield* recordAudit(db, {
            actor,
            action: "operators.create",
            target: `operator:${row.email}`,
            after: audited(row),
          })
          return { operator: operatorView(row), password: given === undefined ? password : undefined }
        }),
      )
    })

    const list = Effect.fn("Operators.list")(function* () {
      return (yield* repo.operators).map(operatorView)
    })

    /** Changes the role or disables (or enables) an operator; a disabled one's sessions end at once. */
    const update = Effect.fn("Operators.update")(function* (
      email: string,
      changes: { readonly role?: unknown; readonly disabled?: unknown },
      actor: string,
    ) {
      const role: Role | undefined = changes.role === undefined ? undefined : yield* checkRole(changes.role)
      if (changes.disabled !== undefined && typeof changes.disabled !== "boolean") {
        return yield* new OperatorRejected({ field: "disabled", message: "disabled must be true or false" })
      }
      const disabled = changes.disabled as boolean | undefined
      return yield* db.transaction(
        Effect.gen(function* () {
          const current = yield* repo.operatorByEmail(email, true)
          // An account stored before emails were checked can still be found (and disabled) by its address.
          if (current === undefined && !isOperatorEmail(email)) return yield* emailRejected()
          if (current === undefined) return yield* new OperatorNotFound({ email })
          const next = { role: role ?? current.role, disabled: disabled ?? current.disabled }
          if (next.role === current.role && next.disabled === current.disabled) return operatorView(current)
          const updated = yield* repo.updateOperator(current.id, next)
          if (next.disabled && !current.disabled) {
            yield* repo.revokeSessionsOf(current.id, new Date(yield* Clock.currentTimeMillis))
          }
          yield* recordAudit(db, {
            actor,
            action:
              next.disabled !== current.disabled
                ? next.disabled
                  ? "operators.disable"
                  : "operators.enable"
                : "operators.set_role",
            target: `operator:${current.email}`,
            before: audited(current),
            after: audited(updated),
          })
          return operatorView(updated)
        }),
      )
    })

    /** Audit entries newest first, with the id of the last one (the next page's cursor) when the page is full. */
    const auditLog = Effect.fn("Operators.auditLog")(function* (filter: AuditFilter) {
      const rows = yield* auditReads.entries(filter)
      return {
        entries: rows.map((row) => ({
          id: Number(row.id),
          at: row.created_at.toISOString(),
          actor: row.actor,
          channel: row.channel,
          action: row.action,
          target: row.target,
          before: row.before,
          // Entries written before `after` existed keep what they recorded in `details`.
          after: row.after ?? (Object.keys(row.details).length > 0 ? row.details : null),
        })),
        lastId: rows.length === filter.limit ? rows.at(-1)?.id : undefined,
      }
    })

    /** Suggestions for an owner filter: owners whose slug starts with `text` or whose name holds it. */
    const owners = (text: string | undefined) => ownerReads.suggestions(text, OWNER_SUGGESTIONS)
    const providers = endpointReads.providerNames

    return { create, list, update, auditLog, owners, providers }
  }),
}) {
  static readonly layer = Layer.effect(Operators, Operators.make).pipe(
    Layer.provide([OperatorRepo.layer, AuditReads.layer, OwnerReads.layer, EndpointReads.layer]),
    Layer.provide(Crypto.layer),
  )
}
