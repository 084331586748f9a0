import { Effect } from "effect"
import { hasControlCharacter } from "../../platform/Text.ts"
import { json, NotFound } from "../../platform/Http.ts"
import { Billing } from "../../policies/Billing.ts"
import { PolicyList } from "../../policies/PolicyList.ts"
import { isCalendarDate } from "../../platform/Dates.ts"
import { delinquencyRowId } from "../../policies/LifecycleDomain.ts"
import { MAX_REASON, Revisions } from "../../policies/Revisions.ts"
import { PolicyProducts, PolicyStatuses } from "../Api.ts"
import { Operators } from "../Operators.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { actorOf, invalid, objectBody, route } from "./Route.ts"

/** Audit actions that change a policy: its revision history on the console. */
const POLICY_ACTIONS = new Set(["policies.revise", "policies.cancel"])
const MAX_UNIT = 100

/**
 * A refusal of the policies context as a 422 on `resource`: its sentences name the CLI's options
 * (`--coverage-cents`), which become the body's field names; the field is the option a sentence opens with.
 */
const refusedAs = (message: string, resource: string) => (error: { readonly message: string }) => {
  const text = error.message.replace(/--([a-z]+(?:-[a-z]+)*)/g, (_, name: string) => name.replace(/-/g, "_"))
  const field =
    /^(coverage_cents|start|end|unit|reason)\b/.exec(text)?.[1] ?? (/^no unit /.test(text) ? "unit" : "base")
  return invalid(message, resource, { [field]: text })
}

/** What the console shows of a policy: `policies show` flattened, with its revisions from the audit log. */
const policyDetail = (policyNumber: string) =>
  Effect.gen(function* () {
    const { policy, ...shown } = yield* (yield* Revisions).show(policyNumber)
    // A policy's changes are few; the newest hundred are its history.
    const audit = yield* (yield* Operators).auditLog({ target: `policy:${policyNumber}`, limit: 100 })
    const revisions = audit.entries
      .filter((entry) => POLICY_ACTIONS.has(entry.action))
      .map(({ id, at, actor, channel, action, before, after }) => ({
        id,
        at,
        actor,
        channel,
        action,
        before,
        after,
      }))
    return { ...policy, ...shown, revisions }
  })

/** The policy of that number as the list shows it: none when there is no such policy. */
const byNumber = (policyNumber: string) =>
  Effect.flatMap(Revisions, (revisions) => revisions.show(policyNumber)).pipe(
    Effect.map((shown) => [
      {
        id: shown.policy.id,
        policy_number: shown.policy.policy_number,
        status: shown.policy.status,
        product_type: shown.policy.product_type,
        owner_slug: shown.owner_slug,
        insured_name: shown.insured_name,
      },
    ]),
    Effect.catchTag("PolicyNotFound", () => Effect.succeed([])),
  )

const isOneOf = <A extends string>(values: ReadonlyArray<A>, value: string): value is A =>
  (values as ReadonlyArray<string>).includes(value)

/** The policy number behind the path's `policy_<n>`, or 404. */
const numberOfPath = (id: string | undefined) =>
  Effect.flatMap(Revisions, (revisions) => revisions.numberOf(id ?? ""))

/** An optional string field of a body: undefined when absent or null, a message in `fields` when bad. */
const optionalText = (
  body: Record<string, unknown>,
  name: string,
  fields: Record<string, string>,
  check: (value: string) => string | undefined,
) => {
  const value = body[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== "string") {
    fields[name] = "must be a string"
    return undefined
  }
  const problem = check(value.trim())
  if (problem !== undefined) fields[name] = problem
  return value.trim()
}

const dateCheck = (value: string) => (isCalendarDate(value) ? undefined : "must be a date (YYYY-MM-DD)")
const idCheck = (value: string) =>
  value === "" || value.length > MAX_UNIT || hasControlCharacter(value)
    ? `must be an external id of 1 to ${MAX_UNIT} characters`
    : undefined

/**
 * The console's policy routes (issue 26's revisions "console page too"): a policy by the id its
 * `admin_policy_url` carries or by its number, revision, cancellation and the resolution of a delinquency, all
 * through the policies context's services, which audit each change in its transaction (as `console` here).
 */
export const policyRoutes = [
  route("GET", "/api/policies", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const number = reader.text("number", 64)
      if (number !== undefined) {
        yield* checkedQuery(reader, number)
        return json(200, { policies: yield* byNumber(number.trim().toUpperCase()), next_cursor: null })
      }
      const status = reader.text("status", 20)
      if (status !== undefined && !isOneOf(PolicyStatuses, status))
        reader.fields.status = `must be one of ${PolicyStatuses.join(", ")}`
      const product = reader.text("product", 40)
      if (product !== undefined && !isOneOf(PolicyProducts, product))
        reader.fields.product = `must be one of ${PolicyProducts.join(", ")}`
      const owner = reader.text("owner", 255)
      if (owner !== undefined && hasControlCharacter(owner))
        reader.fields.owner = "must be an owner slug or part of an owner's name"
      const filter = yield* checkedQuery(reader, {
        status: status as (typeof PolicyStatuses)[number] | undefined,
        product: product as (typeof PolicyProducts)[number] | undefined,
        owner,
        beforeId: reader.cursor(),
        limit: reader.limit(),
      })
      const page = yield* (yield* PolicyList).browse(filter)
      return json(200, { policies: page.policies, next_cursor: encodeCursor(page.lastId) })
    }),
  ),
  route("GET", "/api/policies/:id", "viewer", (request) =>
    Effect.gen(function* () {
      const number = yield* numberOfPath(request.params.id)
      return json(200, { policy: yield* policyDetail(number) })
    }),
  ),
  route("POST", "/api/policies/:id/revise", "operator", (request) =>
    Effect.gen(function* () {
      const number = yield* numberOfPath(request.params.id)
      const body = yield* objectBody(request, "policy")
      const fields: Record<string, string> = {}
      let coverageCents: string | undefined
      const coverage = body.coverage_cents
      if (coverage !== undefined && coverage !== null) {
        if (typeof coverage !== "number" || !Number.isSafeInteger(coverage) || coverage < 1) {
          fields.coverage_cents = "must be a whole number of cents above 0"
        } else coverageCents = String(coverage)
      }
      const start = optionalText(body, "start", fields, dateCheck)
      const end = optionalText(body, "end", fields, dateCheck)
      const unit = optionalText(body, "unit", fields, idCheck)
      const property = optionalText(body, "property", fields, idCheck)
      if (
        Object.keys(fields).length === 0 &&
        [coverageCents, start, end, unit].every((value) => value === undefined)
      ) {
        fields.base = "give coverage_cents, start, end or unit"
      }
      if (Object.keys(fields).length > 0) return yield* invalid("Invalid revision.", "policy", fields)
      const revised = yield* (yield* Revisions)
        .revise(number, { coverageCents, start, end, unit, property }, actorOf(request))
        .pipe(
          Effect.catchTag("LifecycleCommandRejected", (error) =>
            Effect.fail(refusedAs("Invalid revision.", "policy")(error)),
          ),
        )
      return json(200, {
        changed: revised.changed,
        canceled: revised.canceled,
        policy: yield* policyDetail(number),
      })
    }),
  ),
  route("POST", "/api/policies/:id/cancel", "operator", (request) =>
    Effect.gen(function* () {
      const number = yield* numberOfPath(request.params.id)
      const body = yield* objectBody(request, "policy")
      const reason = typeof body.reason === "string" ? body.reason.trim() : ""
      if (reason === "" || reason.length > MAX_REASON || hasControlCharacter(reason)) {
        return yield* invalid("Invalid cancellation.", "policy", {
          reason: `must be a sentence of 1 to ${MAX_REASON} characters`,
        })
      }
      yield* (yield* Revisions)
        .cancel(number, reason, actorOf(request))
        .pipe(
          Effect.catchTag("LifecycleCommandRejected", (error) =>
            Effect.fail(refusedAs("Invalid cancellation.", "policy")(error)),
          ),
        )
      return json(200, { policy: yield* policyDetail(number) })
    }),
  ),
  route("POST", "/api/delinquencies/:id/resolve", "operator", (request) =>
    Effect.gen(function* () {
      const id = request.params.id ?? ""
      if (!id.startsWith("delinquency_") || delinquencyRowId(id) === undefined) {
        return yield* new NotFound({ message: "Delinquency not found." })
      }
      const delinquency = yield* (yield* Billing).resolve(id, actorOf(request)).pipe(
        Effect.catchTags({
          DelinquencyNotFound: () => Effect.fail(new NotFound({ message: "Delinquency not found." })),
          LifecycleCommandRejected: (error) =>
            Effect.fail(refusedAs("Invalid resolution.", "delinquency")(error)),
        }),
      )
      return json(200, { delinquency })
    }),
  ),
]
