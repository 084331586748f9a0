import { Schema } from "effect"

/** Each role can do everything the one before it can. */
export const Roles = ["viewer", "operator", "admin"] as const
export type Role = (typeof Roles)[number]
export const isRole = (value: unknown): value is Role => (Roles as ReadonlyArray<unknown>).includes(value)
export const roleAtLeast = (role: Role, needed: Role) => Roles.indexOf(role) >= Roles.indexOf(needed)

/** Shortest password an operator may choose; generated ones are longer. */
export const MIN_PASSWORD_LENGTH = 12
export const MAX_PASSWORD_LENGTH = 1024
export const MAX_EMAIL_LENGTH = 254
const MAX_EMAIL_LOCAL_LENGTH = 64

/** RFC 5322's dot-atom: no quoted local part, so no space, quote, angle bracket, backslash or control character. */
const EMAIL_LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/
const TOP_LEVEL_LABEL = /^(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$/

/**
 * An operator's email: `local@domain`, ASCII only (an internationalised domain in its `xn--` form), a dot-atom
 * local part of at most 64 characters, a domain of at least two dot-separated labels ending in a name (no IP
 * literal), at most 254 characters in all. An address is shown in the console, the audit log and sign-in logs, so
 * it must never carry markup, lookalike characters or line breaks.
 */
export const isOperatorEmail = (email: string) => {
  if (email.length > MAX_EMAIL_LENGTH) return false
  const at = email.indexOf("@")
  if (at <= 0 || at !== email.lastIndexOf("@")) return false
  const local = email.slice(0, at)
  const labels = email.slice(at + 1).split(".")
  return (
    local.length <= MAX_EMAIL_LOCAL_LENGTH &&
    EMAIL_LOCAL.test(local) &&
    labels.length >= 2 &&
    labels.every((label) => DOMAIN_LABEL.test(label)) &&
    TOP_LEVEL_LABEL.test(labels[labels.length - 1]!)
  )
}

export const EMAIL_RULE =
  "email must be an address such as name@example.com: ASCII, a dot-separated domain, no spaces, quotes, " +
  "angle brackets or control characters, at most 254 characters"

/** An operator as the CLI and the console show it (never the password hash). */
export interface OperatorView {
  readonly email: string
  readonly role: Role
  readonly disabled: boolean
  readonly created_at: string
  readonly last_sign_in_at: string | null
}

/** A refused operator command (bad email, role or password, a duplicate email), with the field at fault. */
export class OperatorRejected extends Schema.TaggedError<OperatorRejected>()("OperatorRejected", {
  message: Schema.String,
  field: Schema.String,
}) {}

export class OperatorNotFound extends Schema.TaggedError<OperatorNotFound>()("OperatorNotFound", {
  email: Schema.String,
}) {}

/** Wrong password, unknown email or disabled operator: one answer for all three. */
export class SignInRefused extends Schema.TaggedError<SignInRefused>()("SignInRefused", {}) {}

export class SignInThrottled extends Schema.TaggedError<SignInThrottled>()("SignInThrottled", {
  retryAfterSeconds: Schema.Number,
}) {}

/** A sign-in refused because its source already has as many sign-ins in progress as it may. */
export class SignInsInProgress extends Schema.TaggedError<SignInsInProgress>()("SignInsInProgress", {
  retryAfterSeconds: Schema.Number,
}) {}

export class DeadLetterNotFound extends Schema.TaggedError<DeadLetterNotFound>()("DeadLetterNotFound", {}) {}

/** The console's owner page asked for a slug no owner has. */
export class OwnerPageNotFound extends Schema.TaggedError<OwnerPageNotFound>()("OwnerPageNotFound", {}) {}

/** The console's prospect page asked for an id (`tpp_<n>`) no prospect has. */
export class ProspectPageNotFound extends Schema.TaggedError<ProspectPageNotFound>()(
  "ProspectPageNotFound",
  {},
) {}
