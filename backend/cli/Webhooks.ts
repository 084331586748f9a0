import { readFile } from "node:fs/promises"
import { userInfo } from "node:os"
import { resolve } from "node:path"
import { Effect } from "effect"
import { type SubscriberRef, WebhookCommandRejected } from "../webhooks/Domain.ts"
import { Secrets } from "../webhooks/Secrets.ts"
import { CliUsage, parse, printJson } from "./Usage.ts"

const TARGET = "--owner SLUG|--provider NAME"
const SHOW_USAGE = `usage: secrets show ${TARGET}`
const ROTATE_USAGE = `usage: secrets rotate ${TARGET} [--overlap 24h]`
const HEADERS_SET_USAGE = `usage: webhooks headers set ${TARGET} --file headers.json`
const HEADERS_SHOW_USAGE = `usage: webhooks headers show ${TARGET}`

/** Who ran the command, for the audit log: `CLI_ACTOR` when set (a shared shell, a runbook), else the OS user. */
export const cliActor = () => {
  const named = process.env.CLI_ACTOR?.trim()
  if (named) return `cli:${named}`
  try {
    return `cli:${userInfo().username}`
  } catch {
    return `cli:${process.env.USER ?? "unknown"}`
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
  values: { readonly owner?: string | undefined; readonly provider?: string | undefined },
  usage: string,
) =>
  values.owner && !values.provider
    ? Effect.succeed<SubscriberRef>({ kind: "owner", slug: values.owner })
    : values.provider && !values.owner
      ? Effect.succeed<SubscriberRef>({ kind: "provider", name: values.provider })
      : Effect.fail(new CliUsage({ message: usage }))

const TARGET_OPTIONS = { owner: { type: "string" }, provider: { type: "string" } } as const

/** A relative path is the operator's: npm runs the CLI from the package root and says in INIT_CWD where it started. */
const readJsonFile = (file: string) =>
  Effect.gen(function* () {
    const path = resolve(process.env.INIT_CWD ?? process.cwd(), file)
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) =>
        new WebhookCommandRejected({ message: `cannot read ${file}: ${(error as Error).message}` }),
    })
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) =>
        new WebhookCommandRejected({ message: `${file} is not valid JSON: ${(error as Error).message}` }),
    })
  })

/** `secrets show|rotate`: the signing secrets operators share with partners out of band. Both are audited. */
export const secrets = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const service = yield* Secrets
    switch (command) {
      case "show": {
        const { values, positionals } = yield* parse(rest, TARGET_OPTIONS)
        if (positionals.length > 0) return yield* new CliUsage({ message: SHOW_USAGE })
        const target = yield* targetOf(values, SHOW_USAGE)
        return yield* printJson({ secrets: yield* service.show(target, cliActor()) })
      }
      case "rotate": {
        const { values, positionals } = yield* parse(rest, { ...TARGET_OPTIONS, overlap: { type: "string" } })
        if (positionals.length > 0) return yield* new CliUsage({ message: ROTATE_USAGE })
        const target = yield* targetOf(values, ROTATE_USAGE)
        const overlap = parseDuration(values.overlap ?? "24h")
        if (overlap === undefined) {
          return yield* new CliUsage({
            message: `--overlap takes a duration such as 30m, 24h or 2d, not '${values.overlap}'`,
          })
        }
        return yield* printJson(yield* service.rotate(target, overlap, cliActor()))
      }
      default:
        return yield* new CliUsage({ message: `unknown secrets command: ${command ?? "(none)"}` })
    }
  })

/** `webhooks headers set|show`: static headers sent with every delivery of an owner or provider. */
export const webhooks = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [group, command, ...rest] = args
    if (group !== "headers") {
      return yield* new CliUsage({ message: `unknown webhooks command: ${group ?? "(none)"}` })
    }
    const service = yield* Secrets
    switch (command) {
      case "set": {
        const { values, positionals } = yield* parse(rest, { ...TARGET_OPTIONS, file: { type: "string" } })
        if (positionals.length > 0 || !values.file) return yield* new CliUsage({ message: HEADERS_SET_USAGE })
        const target = yield* targetOf(values, HEADERS_SET_USAGE)
        const file = yield* readJsonFile(values.file)
        return yield* printJson({ headers: yield* service.setHeaders(target, file, cliActor()) })
      }
      case "show": {
        const { values, positionals } = yield* parse(rest, TARGET_OPTIONS)
        if (positionals.length > 0) return yield* new CliUsage({ message: HEADERS_SHOW_USAGE })
        const target = yield* targetOf(values, HEADERS_SHOW_USAGE)
        return yield* printJson({ headers: yield* service.headers(target) })
      }
      default:
        return yield* new CliUsage({ message: `unknown webhooks headers command: ${command ?? "(none)"}` })
    }
  })
