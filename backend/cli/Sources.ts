import { readFile } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import { MappingRejected } from "../ingest/Domain.ts"
import { Ingest } from "../ingest/Ingest.ts"
import { type Source, SourceCommandRejected, Sources } from "../prospects/Sources.ts"
import { CliUsage, list, parse, printJson } from "./Usage.ts"

const CREATE_USAGE =
  "usage: sources create --code CODE --flow embedded|expedited [--optional-ingest-fields] " +
  "[--redirect-domains a.com,b.com] [--clients CLIENT_ID,...]"

const printed = (source: Source) => ({
  code: source.code,
  flow: source.flow,
  optional_ingest_fields: source.optionalIngestFields,
  redirect_domains: source.redirectDomains,
  clients: source.clients,
})

const MAPPING_SET_USAGE = "usage: sources mapping set CODE --file mapping.json"
const MAPPING_SHOW_USAGE = "usage: sources mapping show CODE"

/**
 * The operator's mapping file as JSON. A relative path is the operator's: npm runs the CLI from the package
 * root, and says in INIT_CWD where it was started.
 */
const readMappingFile = (file: string) =>
  Effect.gen(function* () {
    const path = resolve(process.env.INIT_CWD ?? process.cwd(), file)
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) => new MappingRejected({ message: `cannot read ${file}: ${(error as Error).message}` }),
    })
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) =>
        new MappingRejected({ message: `${file} is not valid JSON: ${(error as Error).message}` }),
    })
  })

/** `sources mapping set|show`: where each field of a source's inbound events is in their payloads. */
const mapping = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const ingest = yield* Ingest
    const sources = yield* Sources
    switch (command) {
      case "set": {
        const { values, positionals } = yield* parse(rest, { file: { type: "string" } })
        if (positionals.length !== 1 || !values.file)
          return yield* new CliUsage({ message: MAPPING_SET_USAGE })
        // Every mapping of the source is replaced by the file's, or none is when the file is refused.
        const file = yield* readMappingFile(values.file)
        return yield* printJson(yield* ingest.setMapping(positionals[0]!, file))
      }
      case "show": {
        const { positionals } = yield* parse(rest, {})
        if (positionals.length !== 1) return yield* new CliUsage({ message: MAPPING_SHOW_USAGE })
        const code = positionals[0]!
        if ((yield* sources.find(code)) === undefined) {
          return yield* new SourceCommandRejected({ message: `unknown source ${code}` })
        }
        return yield* printJson(yield* ingest.mapping(code))
      }
      default:
        return yield* new CliUsage({ message: `unknown sources mapping command: ${command ?? "(none)"}` })
    }
  })

/** `sources create|list|mapping`: the source codes issued to partners. */
export const sources = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    const service = yield* Sources
    switch (command) {
      case "create": {
        const { values, positionals } = yield* parse(rest, {
          code: { type: "string" },
          flow: { type: "string" },
          "optional-ingest-fields": { type: "boolean" },
          "redirect-domains": { type: "string" },
          clients: { type: "string" },
        })
        if (values.code === undefined || values.flow === undefined || positionals.length > 0) {
          return yield* new CliUsage({ message: CREATE_USAGE })
        }
        // A flag cannot say "keep": every run states the flow and whether ingest fields are optional. The lists
        // are kept when omitted, so fixing a domain cannot drop the clients by accident.
        const source = yield* service.create({
          code: values.code,
          flow: values.flow,
          optionalIngestFields: values["optional-ingest-fields"] ?? false,
          redirectDomains: list(values["redirect-domains"]),
          clients: list(values.clients),
        })
        return yield* printJson(printed(source))
      }
      case "list": {
        const { positionals } = yield* parse(rest, {})
        if (positionals.length > 0) return yield* new CliUsage({ message: "usage: sources list" })
        return yield* printJson((yield* service.list).map(printed))
      }
      case "mapping":
        return yield* mapping(rest)
      default:
        return yield* new CliUsage({ message: `unknown sources command: ${command ?? "(none)"}` })
    }
  })
