import { Schema } from "effect"
import { EventNames } from "../../events/Catalog.ts"
import { instantProblemMessage, readInstant } from "../../platform/Dates.ts"
import { isJsonObject } from "../../platform/Validation.ts"
import { ReplayStatuses } from "../Statuses.ts"

/**
 * Replays: an endpoint's events since a time, read back from `EVENTS` and sent again as new deliveries to the
 * endpoint, skipping those it already has a delivery of.
 */

export { ReplayStatuses }
export type ReplayStatus = (typeof ReplayStatuses)[number]

const Rfc3339 = Schema.String.annotate({
  format: "date-time",
  description: "An RFC 3339 time with its offset, e.g. `2026-11-20T08:00:00Z`.",
})

/** The body of `POST .../replay`; the service reads it field by field, so every failing field is named. */
export const ReplayRequest = Schema.Struct({
  since: Rfc3339.annotate({
    description:
      "Events stored at this time or later are replayed. Not before the oldest event kept (a 422 names it), " +
      "not in the future.",
  }),
  until: Schema.optionalKey(
    Rfc3339.annotate({ description: "Events stored after this time are not replayed; now when omitted." }),
  ),
  events: Schema.optionalKey(
    Schema.Array(Schema.Literals(EventNames)).annotate({
      description:
        "Only these event names (each one the endpoint subscribes to); every subscribed one when omitted.",
    }),
  ),
}).annotate({ identifier: "WebhookReplayRequest" })

/** RFC 3339's date-time: a full date and time with seconds and an offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/

/**
 * A replay body as its route read it: the times and event names it gives, and each field it gets wrong with its
 * message. A refusal is handed over rather than answered by the route: a missing endpoint is a 404 whatever the
 * body says, and the service adds what needs the endpoint's subscriptions or the time now.
 */
export interface ReplayBody {
  /** Absent when missing or unreadable (`fields` says which). */
  readonly since?: Date
  /** Absent when omitted (now) or unreadable (`fields` says which). */
  readonly until?: Date
  /** As sent, repeats included; absent when omitted (every subscribed event) or not names (`fields` says which). */
  readonly events?: ReadonlyArray<string>
  readonly fields: Readonly<Record<string, string>>
}

const time = (value: unknown, label: string, fields: Record<string, string>, key: string) => {
  const read =
    typeof value === "string" && RFC3339.test(value) ? readInstant(value) : { problem: "form" as const }
  if ("at" in read) return read.at
  fields[key] =
    `${label} ${instantProblemMessage(read.problem, "must be an RFC 3339 time, e.g. 2026-11-20T08:00:00Z")}`
  return undefined
}

/** What a replay body gives, field by field, so every failing field is named. */
export const readReplay = (parsed: unknown): ReplayBody => {
  if (!isJsonObject(parsed)) return { fields: { base: "Replay must be an object with since" } }
  const fields: Record<string, string> = {}
  const since = parsed.since === undefined ? undefined : time(parsed.since, "Since", fields, "since")
  if (parsed.since === undefined) fields.since = "Since can't be blank"
  const until =
    parsed.until === undefined || parsed.until === null
      ? undefined
      : time(parsed.until, "Until", fields, "until")
  let events: ReadonlyArray<string> | undefined
  if (parsed.events !== undefined && parsed.events !== null) {
    if (!Array.isArray(parsed.events) || !parsed.events.every((e): e is string => typeof e === "string")) {
      fields.events = "Events must be an array of event names"
    } else if (parsed.events.length === 0) {
      fields.events = "Events can't be blank"
    } else events = parsed.events
  }
  return {
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    ...(events === undefined ? {} : { events }),
    fields,
  }
}

export const WebhookReplay = Schema.Struct({
  id: Schema.Int,
  endpoint_id: Schema.Int,
  status: Schema.Literals(ReplayStatuses).annotate({
    description:
      "`running` while events are left to send, `completed` once every one was sent (or found delivered " +
      "meanwhile), `canceled` by a cancel or because the endpoint was disabled or deleted.",
  }),
  total: Schema.Int.annotate({
    description: "Events found for the replay: stored in the range, subscribed, and not yet delivered to it.",
  }),
  sent: Schema.Int.annotate({ description: "Of those, how many have gone out as new deliveries so far." }),
  since: Schema.String,
  until: Schema.String,
  events: Schema.Array(Schema.String),
  created_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String),
}).annotate({ identifier: "WebhookReplay" })
export type WebhookReplay = typeof WebhookReplay.Type

export const ReplayCreatedResponse = Schema.Struct({
  status_code: Schema.Literal(202),
  replay: WebhookReplay,
}).annotate({ identifier: "WebhookReplayCreatedResponse" })

export const ReplayResponse = Schema.Struct({
  status_code: Schema.Literal(200),
  replay: WebhookReplay,
}).annotate({ identifier: "WebhookReplayResponse" })

/** A replay body that breaks a rule: each field with its message, as the endpoint 422s show them. */
export class ReplayInvalid extends Schema.TaggedError<ReplayInvalid>()("ReplayInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** `since` is older than the oldest event `EVENTS` still holds. */
export class ReplayBeyondRetention extends Schema.TaggedError<ReplayBeyondRetention>()(
  "ReplayBeyondRetention",
  {
    oldest: Schema.String,
  },
) {}

/** No such replay of this endpoint. */
export class ReplayNotFound extends Schema.TaggedError<ReplayNotFound>()("ReplayNotFound", {}) {}
