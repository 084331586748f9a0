import { Context, Effect, Layer, Schema } from "effect"
import { Db } from "../platform/Db.ts"
import { EnrollmentFlow, type Source } from "./Domain.ts"
import { SourcesRepo } from "./SourcesRepo.ts"

/**
 * An operator's source configuration. An omitted option keeps the stored value on an update (false or empty on
 * creation); a list that is given replaces the stored one.
 */
export interface SourceInput {
  readonly code: string
  readonly flow: string
  readonly optionalIngestFields?: boolean | undefined
  readonly redirectDomains?: ReadonlyArray<string> | undefined
  readonly clients?: ReadonlyArray<string> | undefined
}

/** An operator command with an invalid code, flow or domain, or naming a client that does not exist. */
export class SourceCommandRejected extends Schema.TaggedError<SourceCommandRejected>()(
  "SourceCommandRejected",
  { message: Schema.String },
) {}

/** The `prospect` object of the published 422 body for a source that was never issued. */
export const unknownSourceErrors = {
  source: "Source is not included in the list",
  enrollment_source: "Enrollment source must exist",
} as const

/**
 * A prospect names a source code that was never issued. The prospects endpoint answers
 * `{"status_code":422,"error":"Prospect invalid.","prospect":<prospectErrors>}`.
 */
export class UnknownSource extends Schema.TaggedError<UnknownSource>()("UnknownSource", {
  source: Schema.String,
}) {
  get prospectErrors() {
    return unknownSourceErrors
  }

  override get message() {
    return `unknown source ${this.source}`
  }
}

/** Short enough to read in an enrollment URL, and safe in one without escaping. */
const CODE = /^[a-z0-9_-]{1,40}$/
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

const isFlow = (value: string): value is EnrollmentFlow =>
  EnrollmentFlow.literals.includes(value as EnrollmentFlow)

/** A lowercase DNS name of two labels or more (`example.com`); no scheme, port, path or IP address. */
const isRedirectDomain = (domain: string) => {
  const labels = domain.split(".")
  return (
    domain.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => LABEL.test(label)) &&
    /[a-z]/.test(labels[labels.length - 1]!)
  )
}

/**
 * Whether an expedited link may send the renter to `redirectUrl`: an https URL whose host is one of the
 * source's domains or a subdomain of one. Credentials in the URL (`https://example.com@evil.test`) and
 * anything unparsable are refused.
 */
export const redirectAllowed = (source: Pick<Source, "redirectDomains">, redirectUrl: string): boolean => {
  if (!URL.canParse(redirectUrl)) return false
  const url = new URL(redirectUrl)
  if (url.protocol !== "https:" || url.username !== "" || url.password !== "") return false
  return source.redirectDomains.some(
    (domain) => url.hostname === domain || url.hostname.endsWith(`.${domain}`),
  )
}

export class Sources extends Context.Service<Sources>()("partner-service/prospects/Sources", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* SourcesRepo

    /** Issues the code, or updates it; nothing is written when any part of the input is refused. */
    const create = Effect.fn("Sources.create")(function* (input: SourceInput) {
      const problems: Array<string> = []
      if (!CODE.test(input.code)) {
        problems.push(`code '${input.code}' must be 1-40 lowercase letters, digits, '-' or '_'`)
      }
      const flow = isFlow(input.flow) ? input.flow : undefined
      if (flow === undefined) problems.push(`flow must be embedded or expedited, not '${input.flow}'`)
      const redirectDomains = input.redirectDomains && [...new Set(input.redirectDomains)]
      const badDomains = (redirectDomains ?? []).filter((domain) => !isRedirectDomain(domain))
      if (badDomains.length > 0) {
        problems.push(
          `redirect domains must be lowercase hostnames such as example.com, without scheme, port or path: ${badDomains.join(", ")}`,
        )
      }
      const clients = input.clients && [...new Set(input.clients)]
      return yield* db.transaction(
        Effect.gen(function* () {
          if (clients !== undefined) {
            const existing = yield* repo.existingClients(clients)
            const unknown = clients.filter((id) => !existing.has(id))
            if (unknown.length > 0) problems.push(`unknown clients: ${unknown.join(", ")}`)
          }
          if (problems.length > 0 || flow === undefined) {
            return yield* new SourceCommandRejected({ message: problems.join("; ") })
          }
          yield* repo.upsert({
            code: input.code,
            flow,
            optionalIngestFields: input.optionalIngestFields,
            redirectDomains,
          })
          if (clients !== undefined) yield* repo.replaceClients(input.code, clients)
          const stored = yield* repo.find(input.code)
          if (stored === undefined) return yield* Effect.die(new Error(`source ${input.code} not stored`))
          return stored
        }),
      )
    })

    return {
      create,
      find: Effect.fn("Sources.find")(function* (code: string) {
        return yield* repo.find(code)
      }),
      /** The source a stored prospect names; its absence is a broken store, a defect. */
      ofProspect: Effect.fn("Sources.ofProspect")(function* (code: string) {
        const source = yield* repo.find(code)
        if (source === undefined) return yield* Effect.die(new Error(`source ${code} vanished`))
        return source
      }),
      list: repo.list.pipe(Effect.withSpan("Sources.list")),
      /** Whether the client may submit prospects (and ingestion events) for the source. */
      mayUse: Effect.fn("Sources.mayUse")(function* (code: string, clientId: string) {
        return yield* repo.mayUse(code, clientId)
      }),
    }
  }),
}) {
  static readonly layer = Layer.effect(Sources, Sources.make).pipe(Layer.provide(SourcesRepo.layer))
}
