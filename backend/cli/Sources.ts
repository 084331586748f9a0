import { Effect } from "effect"
import { type Source, Sources } from "../prospects/Sources.ts"
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

/** `sources create|list`: the source codes issued to partners. */
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
      default:
        return yield* new CliUsage({ message: `unknown sources command: ${command ?? "(none)"}` })
    }
  })
