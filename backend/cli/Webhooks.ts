import { userInfo } from "node:os"
import { Effect } from "effect"
import { type SubscriberRef, WebhookCommandRejected } from "../webhooks/Domain.ts"
import { readCustomHeaders } from "../webhooks/endpoints/CustomHeaders.ts"
import { Secrets } from "../webhooks/endpoints/Secrets.ts"
import { type Input, usageOf } from "./CommandLine.ts"
import type { CommandName } from "./Commands.ts"
import { CliIo, printJson, readJsonFile } from "./Io.ts"
import { CliUsage } from "./Usage.ts"

/** Who ran the command, for the audit log: `CLI_ACTOR` when set (a shared shell, a runbook), else the OS user. */
export const cliActor = (env: Readonly<Record<string, string | undefined>> = process.env) => {
  const named = env.CLI_ACTOR?.trim()
  if (named) return `cli:${named}`
  try {
    return `cli:${userInfo().username}`
  } catch {
    return `cli:${env.USER ?? "unknown"}`
  }
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `30m`, `24h`, `2d`, `90s` as milliseconds; undefined when not a duration. */
export const parseDuration = (text: string) => {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim())
  return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : undefined
}

/** Exactly one of `--owner` and `--provider`. */
const targetOf = (
  options: { readonly owner?: string | undefined; readonly provider?: string | undefined },
  command: CommandName,
) =>
  options.owner && !options.provider
    ? Effect.succeed<SubscriberRef>({ kind: "owner", slug: options.owner })
    : options.provider && !options.owner
      ? Effect.succeed<SubscriberRef>({ kind: "provider", name: options.provider })
      : Effect.fail(new CliUsage({ message: usageOf(command) }))

const actor = CliIo.use((io) => Effect.succeed(cliActor(io.env)))

/** `secrets show`: the signing secrets operators share with partners out of band (audited). */
export const showSecrets = Effect.fn("cli.secrets.show")(function* (input: Input<"secrets show">) {
  const target = yield* targetOf(input.options, "secrets show")
  return yield* printJson({ secrets: yield* (yield* Secrets).show(target, yield* actor) })
})

/** `secrets rotate`: a new signing secret; the older ones keep signing for the overlap (audited). */
export const rotateSecrets = Effect.fn("cli.secrets.rotate")(function* (input: Input<"secrets rotate">) {
  const target = yield* targetOf(input.options, "secrets rotate")
  const overlap = parseDuration(input.options.overlap ?? "24h")
  if (overlap === undefined) {
    return yield* new CliUsage({
      message: `--overlap takes a duration such as 30m, 24h or 2d, not '${input.options.overlap}'`,
    })
  }
  return yield* printJson(yield* (yield* Secrets).rotate(target, overlap, yield* actor))
})

/** `webhooks headers set`: static headers sent with every delivery of an owner or provider (audited). */
export const setHeaders = Effect.fn("cli.webhooks.headers.set")(function* (
  input: Input<"webhooks headers set">,
) {
  const target = yield* targetOf(input.options, "webhooks headers set")
  const file = yield* readJsonFile(input.options.file, (message) => new WebhookCommandRejected({ message }))
  const headers = readCustomHeaders(file, false)
  return yield* printJson({ headers: yield* (yield* Secrets).setHeaders(target, headers, yield* actor) })
})

export const showHeaders = Effect.fn("cli.webhooks.headers.show")(function* (
  input: Input<"webhooks headers show">,
) {
  const target = yield* targetOf(input.options, "webhooks headers show")
  return yield* printJson({ headers: yield* (yield* Secrets).headers(target, yield* actor) })
})
