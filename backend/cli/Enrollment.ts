import { Clock, Effect, Schema } from "effect"
import type { JourneyLink, JourneyView } from "../enrollment/Domain.ts"
import { Journey } from "../enrollment/Journey.ts"
import { AppConfig } from "../platform/Config.ts"
import { rowIdOf } from "../policies/Domain.ts"
import { insurancePolicy, policyApplication } from "../policies/Events.ts"
import { TEST_CARDS } from "../policies/Payments.ts"
import { Policies } from "../policies/Policies.ts"
import type { Input } from "./CommandLine.ts"
import { printJson } from "./Io.ts"

/** The journey could not be walked to its end as asked (a field the prospect lacks, a declined card...). */
export class EnrollmentStopped extends Schema.TaggedError<EnrollmentStopped>()("EnrollmentStopped", {
  message: Schema.String,
}) {}

/** The view's error as one line, if it has one. */
const problem = (view: JourneyView) =>
  view.error === undefined
    ? undefined
    : view.error.kind === "payment_declined"
      ? `the card was declined: ${view.error.message}`
      : Object.entries(view.error.fields)
          .map(([field, message]) => `${field}: ${message}`)
          .join("; ")

/**
 * `enrollment complete`: walks a prospect's enrollment journey to its end through the Journey service, as the
 * renter's pages do (details confirmed as sent, the underwriting answers the prospect carries unless given, the
 * product chosen, a test card paid), and prints the application and policy as the webhooks carry them. The
 * command line refuses it in production (it pays with the test provider's cards).
 */
export const completeEnrollment = Effect.fn("cli.enrollment.complete")(function* (
  input: Input<"enrollment complete">,
) {
  const { options } = input
  const config = yield* AppConfig
  const journey = yield* Journey
  const policies = yield* Policies
  const stopped = (message: string) => new EnrollmentStopped({ message })
  const invalid = () => stopped("the prospect cannot enroll: it is not ready, or eligible for no product")
  const link: JourneyLink = yield* journey
    .linkFor(options.source, options.id)
    .pipe(Effect.mapError(() => stopped(`no prospect ${options.source}/${options.id}`)))
  const checked = (view: JourneyView) => {
    const message = problem(view)
    return message === undefined
      ? Effect.succeed(view)
      : Effect.fail(stopped(`stopped on ${view.step}: ${message}`))
  }

  let view = yield* journey.open(link).pipe(Effect.mapError(invalid))
  if (view.step === "details") {
    view = yield* checked(yield* journey.confirmDetails(link, {}).pipe(Effect.mapError(invalid)))
  }
  if (view.step === "underwriting") {
    view = yield* checked(
      yield* journey
        .supplyUnderwritingInputs(link, {
          yearlyIncome: options["yearly-income"] ?? String(view.answers.yearlyIncome ?? ""),
          employmentStatus: options["employment-status"] ?? view.answers.employmentStatus ?? "",
          hasSsn: options["has-ssn"] ?? (view.answers.hasSsn === null ? "" : view.answers.hasSsn),
          termsAccepted: true,
        })
        .pipe(Effect.mapError(invalid)),
    )
  }
  if (view.step === "choose" || view.step === "quote") {
    view = yield* checked(
      yield* journey
        .choose(link, { product: options.product, cadence: options.cadence })
        .pipe(Effect.mapError(invalid)),
    )
  }
  if (view.step === "quote") {
    const year = new Date(yield* Clock.currentTimeMillis).getUTCFullYear() + 3
    view = yield* journey
      .pay(link, {
        cardNumber: TEST_CARDS[(options.card ?? "ok") as keyof typeof TEST_CARDS],
        expiry: `12/${year}`,
        cvc: "123",
        nameOnCard: `${view.renter.firstName} ${view.renter.lastName}`.trim() || "Test Renter",
      })
      .pipe(Effect.mapError(invalid))
  }
  const applicationRowId = view.application && rowIdOf("pa_", view.application.id)
  const policyRowId = view.policy && rowIdOf("policy_", view.policy.id)
  const application =
    applicationRowId === undefined ? undefined : yield* policies.findApplication(applicationRowId)
  const policy = policyRowId === undefined ? undefined : yield* policies.findPolicy(policyRowId)
  yield* printJson({
    step: view.step,
    ...(view.blockedReason === undefined ? {} : { blocked_reason: view.blockedReason }),
    ...(view.error === undefined ? {} : { error: problem(view) }),
    application: application === undefined ? null : policyApplication(application),
    policy: policy === undefined ? null : insurancePolicy(policy, config.consoleBaseUrl),
  })
  if (view.step !== "completed") {
    return yield* stopped(
      `the journey ended ${view.step}${view.error === undefined ? "" : `: ${problem(view)}`}`,
    )
  }
})
