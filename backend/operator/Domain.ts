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
