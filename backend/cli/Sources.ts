import { Effect } from "effect"
import { MappingRejected } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import type { Source } from "../prospects/Domain.ts"
import { SourceCommandRejected, Sources } from "../prospects/Sources.ts"
import { type Input, list } from "./CommandLine.ts"
import { printJson, readJsonFile } from "./Io.ts"

const printed = (source: Source) => ({
  code: source.code,
  flow: source.flow,
  optional_ingest_fields: source.optionalIngestFields,
  redirect_domains: source.redirectDomains,
  clients: source.clients,
})

/** `sources create`: issues a source code, or updates it. */
export const createSource = Effect.fn("cli.sources.create")(function* (input: Input<"sources create">) {
  const { options } = input
  // A flag cannot say "keep": every run states the flow and whether ingest fields are optional. The lists
  // are kept when omitted, so fixing a domain cannot drop the clients by accident.
  const source = yield* (yield* Sources).create({
    code: options.code,
    flow: options.flow,
    optionalIngestFields: options["optional-ingest-fields"] ?? false,
    redirectDomains: list(options["redirect-domains"]),
    clients: list(options.clients),
  })
  return yield* printJson(printed(source))
})

export const listSources = Effect.fn("cli.sources.list")(function* () {
  return yield* printJson((yield* (yield* Sources).list).map(printed))
})

/** `sources mapping set`: every mapping of the source is replaced by the file's, or none is when it is refused. */
export const setMapping = Effect.fn("cli.sources.mapping.set")(function* (
  input: Input<"sources mapping set">,
) {
  const file = yield* readJsonFile(input.options.file, (message) => new MappingRejected({ message }))
  return yield* printJson(yield* (yield* Ingest).setMapping(input.args[0], file))
})

export const showMapping = Effect.fn("cli.sources.mapping.show")(function* (
  input: Input<"sources mapping show">,
) {
  const [code] = input.args
  if ((yield* (yield* Sources).find(code)) === undefined) {
    return yield* new SourceCommandRejected({ message: `unknown source ${code}` })
  }
  return yield* printJson(yield* (yield* Ingest).mapping(code))
})
