import { Layer } from "effect"
import { Billing } from "./Billing.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { MoveOuts } from "./MoveOuts.ts"
import { PaymentProvider } from "./Payments.ts"
import { PolicyList } from "./PolicyList.ts"
import { PoliciesRepo } from "./Repo.ts"
import { Revisions } from "./Revisions.ts"
import { TestClocks } from "./TestClocks.ts"

/**
 * A policy's life after issue: revisions and cancellation, billing and delinquencies, move-outs and the test
 * clocks, the operators' policy list, with what the lifecycle job reads (on the platform and `Policies`).
 */
export const lifecycleLayer = Layer.mergeAll(
  Revisions.layer,
  Billing.layer,
  MoveOuts.layer,
  PolicyList.layer,
).pipe(
  Layer.provideMerge(TestClocks.layer),
  Layer.provideMerge(Layer.mergeAll(LifecycleRepo.layer, PoliciesRepo.layer, PaymentProvider.layer)),
)
