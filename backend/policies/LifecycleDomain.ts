import { Schema } from "effect"
import { limitedText } from "../contract/FieldLimits.ts"
import { isCalendarDate } from "../platform/Dates.ts"
import { IN_FORCE } from "./Statuses.ts"

/**
 * A policy's life after issue: revisions and cancellation (operators), activation and expiry, monthly billing and
 * delinquencies (the lifecycle job), move-outs (partners) and the test clock (staging and development).
 */

export { IN_FORCE }

/** `delinquency_<n>` */
export const delinquencyId = (id: string) => `delinquency_${id}`

/** The row id of `delinquency_<n>` (or of a bare `<n>`); undefined for anything else. */
export const delinquencyRowId = (id: string) => {
  const digits = id.startsWith("delinquency_") ? id.slice("delinquency_".length) : id
  return /^[1-9]\d{0,17}$/.test(digits) ? digits : undefined
}

/** `YYYY-MM-DD` plus `days`. */
export const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)

/** A policy number that names no policy (of the owner asking). */
export class PolicyNotFound extends Schema.TaggedError<PolicyNotFound>()("PolicyNotFound", {
  policyNumber: Schema.String,
}) {
  override get message() {
    return `no policy ${this.policyNumber}`
  }
}

/** A delinquency id that names none. */
export class DelinquencyNotFound extends Schema.TaggedError<DelinquencyNotFound>()("DelinquencyNotFound", {
  id: Schema.String,
}) {
  override get message() {
    return `no delinquency ${this.id}`
  }
}

/** An operator's revision, cancellation or resolution that cannot be done as asked; nothing changed. */
export class LifecycleCommandRejected extends Schema.TaggedError<LifecycleCommandRejected>()(
  "LifecycleCommandRejected",
  { message: Schema.String },
) {}

/** A move-out the partner must correct: a message per field; nothing changed. */
export class MoveOutInvalid extends Schema.TaggedError<MoveOutInvalid>()("MoveOutInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** A test clock advance the partner must correct; nothing changed. */
export class TestClockInvalid extends Schema.TaggedError<TestClockInvalid>()("TestClockInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

const CalendarDate = Schema.String.annotate({ format: "date" }).check(
  Schema.makeFilter((value: string) =>
    isCalendarDate(value) ? undefined : "is not a valid date (YYYY-MM-DD)",
  ),
)

export const MoveOutInput = Schema.Struct({
  external_id: limitedText("external_id").annotate({
    description: "The partner's identifier of the move-out: the upsert key within the owner.",
  }),
  policy_number: Schema.optionalKey(
    limitedText("policy_number").annotate({
      description:
        "The policy of the renter moving out (`policy_number` of the policy events). Required to create; a " +
        "move-out stays with its policy.",
    }),
  ),
  move_out_date: Schema.optionalKey(
    CalendarDate.annotate({ description: "The day the renter moves out (YYYY-MM-DD). Required to create." }),
  ),
}).annotate({
  identifier: "MoveOutInput",
  description:
    "A move-out, upserted on `external_id`: resending it updates the stored one (an omitted field keeps its value).",
})
export type MoveOutInput = typeof MoveOutInput.Type

export const MoveOutRequest = Schema.Struct({ move_out: MoveOutInput }).annotate({
  identifier: "MoveOutRequest",
})

export const MoveOut = Schema.Struct({
  id: Schema.Int.annotate({
    description: "Service move-out id: a plain integer (`move_out_id` of `move_out.initiated`).",
  }),
  external_id: Schema.String.annotate({ description: "The partner's identifier as sent." }),
  status: Schema.Literal("initiated").annotate({ description: "Status of the move-out; `initiated` today." }),
  policy_number: Schema.String,
  move_out_date: Schema.String.annotate({ format: "date" }),
  created_at: Schema.String.annotate({ format: "date-time" }),
  updated_at: Schema.String.annotate({ format: "date-time" }),
}).annotate({ identifier: "MoveOut", description: "A move-out as stored." })
export type MoveOut = typeof MoveOut.Type

export const MoveOutResponse = Schema.Struct({
  status_code: Schema.Int.annotate({ description: "201 when this request created the move-out, else 200." }),
  move_out: MoveOut,
}).annotate({ identifier: "MoveOutResponse" })

/** The longest single advance: ten years. */
export const MAX_ADVANCE_DAYS = 3650

export const TestClockAdvance = Schema.Struct({
  days: Schema.Int.annotate({
    description: `Whole days to move the owner's clock forward, 1 to ${MAX_ADVANCE_DAYS}.`,
  }).check(
    Schema.isGreaterThanOrEqualTo(1, {
      message: `must be a whole number of days from 1 to ${MAX_ADVANCE_DAYS}`,
    }),
    Schema.isLessThanOrEqualTo(MAX_ADVANCE_DAYS, {
      message: `must be a whole number of days from 1 to ${MAX_ADVANCE_DAYS}`,
    }),
  ),
}).annotate({ identifier: "TestClockAdvance" })
export type TestClockAdvance = typeof TestClockAdvance.Type

export const TestClock = Schema.Struct({
  offset_days: Schema.Int.annotate({
    description: "How many days the owner's clock runs ahead of the real date.",
  }),
  today: Schema.String.annotate({
    format: "date",
    description: "The date the owner's policies live on: the real date (UTC) plus the offset.",
  }),
}).annotate({ identifier: "TestClock", description: "An owner's test clock." })
export type TestClock = typeof TestClock.Type

export const TestClockResponse = Schema.Struct({
  status_code: Schema.Int,
  test_clock: TestClock,
}).annotate({ identifier: "TestClockResponse" })
