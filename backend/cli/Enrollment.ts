import { Clock, Effect, Schema } from "effect"
import type { JourneyLink, JourneyView } from "../enrollment/Domain.ts"
import { Journey } from "../enrollment/Journey.ts"
import { AppConfig } from "../platform/Config.ts"
import { Cadences, ProductTypes, rowIdOf } from "../policies/Domain.ts"
import { insurancePolicy, policyApplication } from "../policies/Events.ts"
import { TEST_CARDS } from "../policies/Payments.ts"
import { Policies } from "../policies/Policies.ts"
import { CliUsage, parse, printJson } from "./Usage.ts"

/** The journey could not be walked to its end as asked (a field the prospect lacks, a declined card...). */
export class EnrollmentStopped extends Schema.TaggedError<EnrollmentStopped>()("EnrollmentStopped", {
  message: Schema.String,
}) {}

const USAGE =
  "usage: enrollment complete --source S --id SOURCE_PROSPECT_ID " +
  "--product security_deposit_insurance|cash_deposit|renter_guarantee_insurance [--cadence upfront|monthly] " +
  "[--card ok|decline|fails-next-charge] [--yearly-income N] [--employment-status S] [--has-ssn yes|no]"

const isOneOf = <const L extends ReadonlyArray<string>>(values: L, value: string): value is L[number] =>
  values.includes(value)

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
export const enrollment = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    if (command !== "complete") {
      return yield* new CliUsage({ message: `unknown enrollment command: ${command ?? "(none)"}\n${USAGE}` })
    }
    const config = yield* AppConfig
    const { values, positionals } = yield* parse(rest, {
      source: { type: "string" },
      id: { type: "string" },
      product: { type: "string" },
      cadence: { type: "string" },
      card: { type: "string" },
      "yearly-income": { type: "string" },
      "employment-status": { type: "string" },
      "has-ssn": { type: "string" },
    })
    const card = values.card ?? "ok"
    if (
      !values.source ||
      !values.id ||
      !values.product ||
      positionals.length > 0 ||
      !isOneOf(ProductTypes, values.product) ||
      (values.cadence !== undefined && !isOneOf(Cadences, values.cadence)) ||
      !isOneOf(["ok", "decline", "fails-next-charge"] as const, card)
    ) {
      return yield* new CliUsage({ message: USAGE })
    }
    const journey = yield* Journey
    const policies = yield* Policies
    const link: JourneyLink = yield* journey
      .linkFor(values.source, values.id)
      .pipe(
        Effect.mapError(
          () => new EnrollmentStopped({ message: `no prospect ${values.source}/${values.id}` }),
        ),
      )
    const stopIf = (view: JourneyView) => {
      const message = problem(view)
      return message === undefined
        ? Effect.succeed(view)
        : Effect.fail(new EnrollmentStopped({ message: `stopped on ${view.step}: ${message}` }))
    }
    const invalid = () =>
      new EnrollmentStopped({
        message: "the prospect cannot enroll: it is not ready or eligible for no product",
      })

    let view = yield* journey.open(link).pipe(Effect.mapError(invalid))
    if (view.step === "details")
      view = yield* stopIf(yield* journey.confirmDetails(link, {}).pipe(Effect.mapError(invalid)))
    if (view.step === "underwriting") {
      view = yield* stopIf(
        yield* journey
          .supplyUnderwritingInputs(link, {
            yearlyIncome: values["yearly-income"] ?? String(view.answers.yearlyIncome ?? ""),
            employmentStatus: values["employment-status"] ?? view.answers.employmentStatus ?? "",
            hasSsn: values["has-ssn"] ?? (view.answers.hasSsn === null ? "" : view.answers.hasSsn),
            termsAccepted: true,
          })
          .pipe(Effect.mapError(invalid)),
      )
    }
    if (view.step === "choose" || view.step === "quote") {
      view = yield* stopIf(
        yield* journey
          .choose(link, { product: values.product, cadence: values.cadence })
          .pipe(Effect.mapError(invalid)),
      )
    }
    if (view.step === "quote") {
      const year = new Date(yield* Clock.currentTimeMillis).getUTCFullYear() + 3
      view = yield* journey
        .pay(link, {
          cardNumber: TEST_CARDS[card],
          expiry: `12/${year}`,
          cvc: "123",
          nameOnCard: `${view.renter.firstName} ${view.renter.lastName}`.trim() || "Test Renter",
        })
        .pipe(Effect.mapError(invalid))
    }
    const applicationRowId = view.application && rowIdOf("pa_", view.application.id)
    const policyRowId = view.policy && rowIdOf("policy_", view.policy.id)
    const applicationRow =
      applicationRowId === undefined ? undefined : yield* policies.findApplication(applicationRowId)
    const policyRow = policyRowId === undefined ? undefined : yield* policies.findPolicy(policyRowId)
    yield* printJson({
      step: view.step,
      ...(view.blockedReason === undefined ? {} : { blocked_reason: view.blockedReason }),
      ...(view.error === undefined ? {} : { error: problem(view) }),
      application: applicationRow === undefined ? null : policyApplication(applicationRow),
      policy: policyRow === undefined ? null : insurancePolicy(policyRow, config.consoleBaseUrl),
    })
    if (view.step !== "completed") process.exitCode = 2
  })
