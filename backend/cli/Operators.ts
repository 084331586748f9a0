import { Effect } from "effect"
import { Operators } from "../operator/Operators.ts"
import type { Input } from "./CommandLine.ts"
import { CliIo, printJson } from "./Io.ts"
import { cliActor } from "./Webhooks.ts"

const actor = CliIo.use((io) => Effect.succeed(cliActor(io.env)))

/** `operators create`: the password is printed only when generated here. */
export const createOperator = Effect.fn("cli.operators.create")(function* (input: Input<"operators create">) {
  const { operator, password } = yield* (yield* Operators).create(
    { email: input.options.email, role: input.options.role, password: input.options.password },
    yield* actor,
  )
  return yield* printJson({
    email: operator.email,
    role: operator.role,
    ...(password === undefined ? {} : { password }),
  })
})

export const listOperators = Effect.fn("cli.operators.list")(function* () {
  return yield* printJson({ operators: yield* (yield* Operators).list() })
})

export const disableOperator = Effect.fn("cli.operators.disable")(function* (
  input: Input<"operators disable">,
) {
  return yield* printJson(
    yield* (yield* Operators).update(input.options.email, { disabled: true }, yield* actor),
  )
})

export const setOperatorRole = Effect.fn("cli.operators.set-role")(function* (
  input: Input<"operators set-role">,
) {
  return yield* printJson(
    yield* (yield* Operators).update(input.options.email, { role: input.options.role }, yield* actor),
  )
})
