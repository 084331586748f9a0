import { Effect } from "effect"
import { Billing } from "../policies/Billing.ts"
import { Revisions } from "../policies/Revisions.ts"
import type { Input } from "./CommandLine.ts"
import { CliIo, printJson } from "./Io.ts"
import { cliActor } from "./Webhooks.ts"

const actor = CliIo.use((io) => Effect.succeed(cliActor(io.env)))

/** `policies show`: a policy as operators need to see it. */
export const showPolicy = Effect.fn("cli.policies.show")(function* (input: Input<"policies show">) {
  return yield* printJson(yield* (yield* Revisions).show(input.args[0]))
})

/** `policies revise`: an operator's change of coverage, dates or unit (audited). */
export const revisePolicy = Effect.fn("cli.policies.revise")(function* (input: Input<"policies revise">) {
  const { options } = input
  const revised = yield* (yield* Revisions).revise(
    input.args[0],
    {
      coverageCents: options["coverage-cents"],
      start: options.start,
      end: options.end,
      unit: options.unit,
      property: options.property,
    },
    yield* actor,
  )
  return yield* printJson(revised)
})

/** `policies cancel`: an operator cancels a policy in force (audited). */
export const cancelPolicy = Effect.fn("cli.policies.cancel")(function* (input: Input<"policies cancel">) {
  return yield* printJson(yield* (yield* Revisions).cancel(input.args[0], input.options.reason, yield* actor))
})

/** `delinquencies resolve`: an operator clears a delinquency (audited). */
export const resolveDelinquency = Effect.fn("cli.delinquencies.resolve")(function* (
  input: Input<"delinquencies resolve">,
) {
  return yield* printJson(yield* (yield* Billing).resolve(input.args[0], yield* actor))
})
