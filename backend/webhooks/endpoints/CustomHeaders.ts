import { Effect } from "effect"
import { Db } from "../../platform/Db.ts"
import { describeSubscriber, type SubscriberRef, WebhookCommandRejected } from "../Domain.ts"
import { WebhooksRepo } from "./Repo.ts"

const MAX_HEADERS = 20
const MAX_HEADER_VALUE = 4096
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,100}$/
/** Visible ASCII, with inner spaces and tabs: nothing that could end the header line or confuse a proxy. */
const HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/
/** Headers the HTTP client owns for the connection and the body: setting them would break deliveries. */
const TRANSPORT_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "proxy-connection",
])

/**
 * Custom headers as a route or command read them: each name with its value, and every problem of the names and
 * values, in the order they are named. A null value (`keepHidden`: the console shows values masked, so a form
 * saved unchanged sends nulls) keeps the stored value, which passed these checks when it was set.
 */
export interface CustomHeadersBody {
  readonly headers: Readonly<Record<string, string | null>>
  readonly problems: ReadonlyArray<string>
}

/** The custom headers `parsed` names; with `keepHidden`, a null value keeps the stored one. */
export const readCustomHeaders = (parsed: unknown, keepHidden: boolean): CustomHeadersBody => {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return {
      headers: {},
      problems: [
        'the headers file must hold a JSON object of header names to values, e.g. {"X-Api-Key": "..."}',
      ],
    }
  }
  const problems: Array<string> = []
  const entries = Object.entries(parsed)
  if (entries.length > MAX_HEADERS) problems.push(`at most ${MAX_HEADERS} headers, not ${entries.length}`)
  const seen = new Set<string>()
  const headers: Array<[string, string | null]> = []
  for (const [name, value] of entries) {
    const lower = name.toLowerCase()
    const shown = JSON.stringify(name)
    if (!HEADER_NAME.test(name)) problems.push(`${shown} is not a valid header name`)
    else if (lower === "content-type") {
      problems.push("Content-Type cannot be set: deliveries are always application/json")
    } else if (lower.startsWith("x-webhook-")) {
      problems.push(`${name} cannot be set: X-Webhook-* headers are the service's own`)
    } else if (TRANSPORT_HEADERS.has(lower)) {
      problems.push(`${name} cannot be set: the HTTP client sets it for each request`)
    } else if (seen.has(lower)) problems.push(`${name} is given twice (header names ignore case)`)
    seen.add(lower)
    if (value === null && keepHidden) {
      headers.push([name, null])
      continue
    }
    if (typeof value !== "string") problems.push(`the value of ${shown} must be a string`)
    else if (value.length > MAX_HEADER_VALUE) {
      problems.push(`the value of ${shown} is longer than ${MAX_HEADER_VALUE} characters`)
    } else if (!HEADER_VALUE.test(value)) {
      problems.push(
        `the value of ${shown} must be non-empty visible ASCII without line breaks or surrounding spaces`,
      )
    }
    if (typeof value === "string") headers.push([name, value])
  }
  return { headers: Object.fromEntries(headers), problems }
}

/** Every problem of an operator's custom headers file, or the headers to store: every value given. */
export const validateCustomHeaders = (
  parsed: unknown,
): { readonly headers: Record<string, string> } | { readonly problems: ReadonlyArray<string> } => {
  const read = readCustomHeaders(parsed, false)
  return read.problems.length > 0
    ? { problems: read.problems }
    : { headers: read.headers as Record<string, string> }
}

/** The headers to store, a null value taking the stored one, or every problem (those of nulls first). */
const withStored = (
  body: CustomHeadersBody,
  stored: Readonly<Record<string, string>>,
): { readonly headers: Record<string, string> } | { readonly problems: ReadonlyArray<string> } => {
  const unkept = Object.entries(body.headers)
    .filter(([name, value]) => value === null && !Object.hasOwn(stored, name))
    .map(([name]) => `${JSON.stringify(name)} has no stored value to keep: give its value`)
  const problems = [...unkept, ...body.problems]
  if (problems.length > 0) return { problems }
  return {
    headers: Object.fromEntries(
      Object.entries(body.headers).map(([name, value]) => [name, value ?? stored[name]!]),
    ),
  }
}

/**
 * A subscriber's custom headers, set and shown by operators; `subscriber` finds (or makes) the subscriber behind a
 * route or command.
 */
export const makeCustomHeaders = <E>(
  subscriber: (ref: SubscriberRef, create: boolean) => Effect.Effect<string | undefined, E>,
) =>
  Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* WebhooksRepo

    /** The static headers with their values, which may be a receiver's credentials: the showing is audited. */
    const headers = Effect.fn("Secrets.headers")(function* (ref: SubscriberRef, actor: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = yield* subscriber(ref, false)
          const shown = subscriberId === undefined ? {} : yield* repo.customHeaders(subscriberId)
          yield* repo.audit({
            actor,
            action: "webhook_headers.show",
            target: describeSubscriber(ref),
            details: { names: Object.keys(shown) },
          })
          return shown
        }),
      )
    })

    /**
     * Replaces the static headers sent with every delivery of the subscriber. Audited (names only). With
     * `keepHidden`, a null value keeps the stored one (the console's form, which never holds the values), so its
     * problems are told once the stored headers are read.
     */
    const setHeaders = Effect.fn("Secrets.setHeaders")(function* (
      ref: SubscriberRef,
      body: CustomHeadersBody,
      actor: string,
      keepHidden = false,
    ) {
      if (!keepHidden && body.problems.length > 0) {
        return yield* new WebhookCommandRejected({ message: body.problems.join("; ") })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = (yield* subscriber(ref, true))!
          const previous = yield* repo.customHeaders(subscriberId)
          const checked = withStored(body, previous)
          if ("problems" in checked) {
            return yield* new WebhookCommandRejected({ message: checked.problems.join("; ") })
          }
          yield* repo.setCustomHeaders(subscriberId, checked.headers)
          // Names only: a header's value may be a credential of the receiver's.
          yield* repo.audit({
            actor,
            action: "webhook_headers.set",
            target: describeSubscriber(ref),
            details: { names: Object.keys(checked.headers) },
            before: { names: Object.keys(previous) },
            after: { names: Object.keys(checked.headers) },
          })
          return checked.headers
        }),
      )
    })

    return { headers, setHeaders }
  })
