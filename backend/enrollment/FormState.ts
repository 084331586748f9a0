import { Effect, Exit } from "effect"
import type { CryptoShape } from "../platform/Crypto.ts"
import type { JourneyError } from "./Domain.ts"
import type { EnrollmentLink } from "./Link.ts"
import type { StepPage } from "./StepPages.ts"

/**
 * A form's errors after redirect-after-POST. A form that needs fixing is answered with a 303 to its page's GET,
 * whose `state` query parameter carries the errors and what the renter typed (never the card number, the
 * security code or the CSRF token): sealed with AES-256-GCM under the deployment's key, so the address shows
 * nothing the renter typed, bound to the link and the page, and short-lived. Back and reload then show a page
 * fetched by GET, never "Confirm Form Resubmission"; an expired or altered state just shows the page without
 * the errors.
 */

/** Long enough for a renter who fixes a field at leisure; the errors of an older visit are not worth keeping. */
export const FORM_STATE_LIFETIME_MS = 30 * 60 * 1000

/** The query parameter of a page's address that carries the sealed state. */
export const FORM_STATE_PARAM = "state"

/** Fields never carried back to the page (the card's secrets, the form's own token and step). */
const NEVER_KEPT = new Set(["card_number", "cvc", "csrf_token", "step"])

export interface FormState {
  readonly error: JourneyError
  readonly submitted: URLSearchParams
}

interface Sealed {
  readonly v: 1
  /** The link and page it belongs to. */
  readonly s: string
  /** Expiry, epoch ms. */
  readonly x: number
  readonly e: JourneyError
  readonly f: ReadonlyArray<readonly [string, string]>
}

const subject = (link: EnrollmentLink, page: StepPage) =>
  [link.flow, link.ownerSlug, link.source, link.sourceProspectId, link.email.trim().toLowerCase(), page].join(
    "\u0000",
  )

/** What the renter sent, without what is never kept. */
export const keptFields = (form: URLSearchParams) =>
  [...form].filter(([name]) => !NEVER_KEPT.has(name)).map(([name, value]) => [name, value] as const)

/** The `state` value of `page`'s address after `error`. */
export const sealFormState = (
  crypto: CryptoShape,
  link: EnrollmentLink,
  page: StepPage,
  state: { readonly error: JourneyError; readonly form: URLSearchParams },
  now: number,
) => {
  const sealed: Sealed = {
    v: 1,
    s: subject(link, page),
    x: now + FORM_STATE_LIFETIME_MS,
    e: state.error,
    f: keptFields(state.form),
  }
  return Effect.map(crypto.seal(Buffer.from(JSON.stringify(sealed), "utf8")), (bytes) =>
    bytes.toString("base64url"),
  )
}

const isError = (value: unknown): value is JourneyError => {
  if (typeof value !== "object" || value === null) return false
  const error = value as { kind?: unknown; message?: unknown; fields?: unknown }
  if (error.kind === "payment_declined") return typeof error.message === "string"
  return (
    error.kind === "fields" &&
    typeof error.fields === "object" &&
    error.fields !== null &&
    Object.values(error.fields).every((message) => typeof message === "string")
  )
}

/** The state of `value` when this deployment sealed it for this link and page and it has not expired. */
export const openFormState = (
  crypto: CryptoShape,
  link: EnrollmentLink,
  page: StepPage,
  value: string | null,
  now: number,
): Effect.Effect<FormState | undefined> =>
  Effect.gen(function* () {
    if (value === null || value.length === 0 || value.length > 8192 || !/^[A-Za-z0-9_-]+$/.test(value)) {
      return undefined
    }
    const exit = yield* Effect.exit(crypto.open(Buffer.from(value, "base64url")))
    if (!Exit.isSuccess(exit)) return undefined
    let sealed: Partial<Sealed>
    try {
      sealed = JSON.parse(exit.value.toString("utf8")) as Partial<Sealed>
    } catch {
      return undefined
    }
    if (
      sealed.v !== 1 ||
      sealed.s !== subject(link, page) ||
      typeof sealed.x !== "number" ||
      sealed.x < now ||
      sealed.x > now + FORM_STATE_LIFETIME_MS ||
      !isError(sealed.e) ||
      !Array.isArray(sealed.f)
    ) {
      return undefined
    }
    const submitted = new URLSearchParams()
    for (const pair of sealed.f) {
      if (Array.isArray(pair) && typeof pair[0] === "string" && typeof pair[1] === "string") {
        if (!NEVER_KEPT.has(pair[0])) submitted.append(pair[0], pair[1])
      }
    }
    return { error: sealed.e, submitted }
  })
