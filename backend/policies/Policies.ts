import { Context, Effect, Layer } from "effect"
import type { EnrollmentFacts } from "../prospects/Domain.ts"
import { decideEligibility } from "../prospects/Eligibility.ts"
import { IssuerConfig } from "./Config.ts"
import { makeIssuing } from "./Issuing.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { PaymentProvider } from "./Payments.ts"
import { makePolicyDocuments } from "./PolicyDocuments.ts"
import { percentSavings } from "./Pricing.ts"
import { PoliciesRepo } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"
import { offersFor, productsNotOffered, ruleFacts } from "./Underwriting.ts"

/**
 * The policies service, in parts by use: issuing (`Issuing.ts`: applications and their payment) and the policies'
 * documents (`PolicyDocuments.ts`).
 */
export class Policies extends Context.Service<Policies>()("partner-service/policies/Policies", {
  make: Effect.gen(function* () {
    const repo = yield* PoliciesRepo
    const clocks = yield* TestClocks
    const documents = yield* makePolicyDocuments
    const { apply, cancelApplication, pay } = yield* makeIssuing(documents.requestDocuments)

    /** Why nothing can be offered: each product's reasons on the prospect as it is `today`. */
    const ineligibility = (facts: EnrollmentFacts, today: string) => {
      const decision = decideEligibility(ruleFacts(facts, today))
      return [
        ...new Set([
          ...decision.sdiIneligibilityReasons,
          ...decision.cdIneligibilityReasons,
          ...(decision.renterGuarantee?.reasons ?? []),
        ]),
      ]
    }

    return {
      /**
       * The date the journey runs on for an owner's renters: the owner's date (its test clock's in staging and
       * development), so a policy bought with the clock moved is issued, dated and billed as of that date.
       */
      todayOf: clocks.todayOf,
      /** The products and prices the prospect can be offered `today`, on the renter's answers once given. */
      offersFor,
      /** Why each product the partner asked for is not offered `today`, on the renter's answers once given. */
      productsNotOffered,
      ineligibility,
      percentSavings,
      apply,
      cancelApplication,
      pay,
      ...documents,
      findApplication: repo.findApplication,
      findPolicy: repo.findPolicy,
      policyOfApplication: repo.policyOfApplication,
    }
  }),
}) {
  static readonly layer = Layer.effect(Policies, Policies.make).pipe(
    Layer.provide(
      Layer.mergeAll(
        PoliciesRepo.layer,
        PaymentProvider.layer,
        IssuerConfig.layer,
        TestClocks.layer.pipe(Layer.provide(LifecycleRepo.layer)),
      ),
    ),
  )
}
