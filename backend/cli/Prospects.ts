import { Effect } from "effect"
import { Prospects } from "../prospects/Prospects.ts"
import type { Input } from "./CommandLine.ts"
import { printJson } from "./Io.ts"

/** `prospects show`: a prospect as the API shows it, whatever its owner. */
export const showProspect = Effect.fn("cli.prospects.show")(function* (input: Input<"prospects show">) {
  return yield* printJson(yield* (yield* Prospects).show(input.options.source, input.options.id))
})

/** `prospects recheck`: the prospect goes to `processing`; the workers decide it, as they decide a POSTed one. */
export const recheckProspect = Effect.fn("cli.prospects.recheck")(function* (
  input: Input<"prospects recheck">,
) {
  return yield* printJson(yield* (yield* Prospects).recheck(input.options.source, input.options.id))
})
