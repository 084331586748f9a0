import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { runCli } from "../support/Cli.ts"
import {
  type IngestClient,
  ingestClient,
  postEvent,
  PROSPECT_UPDATE_MAPPING,
  prospectUpdate,
  setMapping,
} from "../support/Ingest.ts"
import { issueSource, prospectPartner, prospectService, provisionedOwner } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

/** The gateways and the workers (the ingest actor among them) on this file's database. */
const service = prospectService()

/** `npm run cli -- ...` on this file's database, run in this process through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli(service.env, ...args)

const files = mkdtempSync(join(tmpdir(), "ingest-cli-"))
afterAll(() => rmSync(files, { recursive: true, force: true }))

/** A mapping file with `content` (JSON unless it is already text); its absolute path. */
const mappingFile = (name: string, content: unknown) => {
  const path = join(files, name)
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content, null, 2))
  return path
}

/** The issue's example mapping: `last_name` and `email` left out. */
const EXAMPLE_MAPPING = {
  ProspectUpdate: {
    source_prospect_id: "/id",
    pms_property_id: "/property/code",
    occurred_at: "/updated_at",
    first_name: "/applicant/first_name",
    phone: "/applicant/phone",
    earliest_move_in_date: "/move_in",
  },
}

/** The source's mappings as stored. */
const storedMapping = (source: string) =>
  Effect.flatMap(Effect.service(Ingest), (ingest) => ingest.mapping(source))

/** A refused command: exit status 2, the message on stderr, nothing on stdout, no stack trace. */
const assertRefused = (run: { code: number | null; stdout: string; stderr: string }, message: RegExp) => {
  assert.strictEqual(run.code, 2, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`)
  assert.match(run.stderr, message)
  assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
  assert.strictEqual(run.stdout.trim(), "")
}

interface LogRecord {
  readonly id: string
  readonly event_id: string
  readonly received_at: string
  readonly source: string
  readonly event_type: string
  readonly source_prospect_id: string | null
  readonly occurred_at: string | null
  readonly outcome: string
  readonly reason: string | null
  readonly prospect_id: string | null
}

/** `ingest log ...args`, its JSON lines parsed. */
const ingestLog = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const run = yield* cli("ingest", "log", ...args)
    assert.strictEqual(run.code, 0, run.stderr)
    assert.isTrue(run.stdout === "" || run.stdout.endsWith("\n"), run.stdout)
    return run.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as LogRecord)
  })

const logCount = (source: string) =>
  query(
    (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from ingest_log where source = ${source}`,
  ).pipe(Effect.map((rows) => rows[0]!.n))

/** POSTs an event of `source` and waits until the ingest actor has logged it (the source's `count`th record). */
const ingested = (client: IngestClient, source: string, payload: unknown, count: number) =>
  Effect.gen(function* () {
    const posted = yield* postEvent(client, { source, event_type: "ProspectUpdate", payload })
    assert.strictEqual(posted.status, 202, posted.text)
    yield* eventually(logCount(source), (n) => n >= count)
  })

/** A source with an ingestion client granted an owner whose building is `pms-prop-1`. */
const ingestingSource = (code: string) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, `org-${code}`)
    return yield* ingestClient(code, [slug])
  })

describe("npm run cli -- sources mapping / ingest log", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("sources mapping set stores and prints the mapping; show prints it back", () =>
      Effect.gen(function* () {
        yield* issueSource({ code: "map-rt", clients: [] })
        const empty = yield* cli("sources", "mapping", "show", "map-rt")
        assert.strictEqual(empty.code, 0, empty.stderr)
        assert.deepStrictEqual(JSON.parse(empty.stdout), {})

        const set = yield* cli(
          "sources",
          "mapping",
          "set",
          "map-rt",
          "--file",
          mappingFile("rt.json", EXAMPLE_MAPPING),
        )
        assert.strictEqual(set.code, 0, set.stderr)
        assert.deepStrictEqual(JSON.parse(set.stdout), EXAMPLE_MAPPING)
        assert.deepStrictEqual(yield* storedMapping("map-rt"), EXAMPLE_MAPPING)

        const shown = yield* cli("sources", "mapping", "show", "map-rt")
        assert.strictEqual(shown.code, 0, shown.stderr)
        assert.deepStrictEqual(JSON.parse(shown.stdout), EXAMPLE_MAPPING)
      }),
    )

    it.effect("sources mapping set replaces every mapping of the source with the file's", () =>
      Effect.gen(function* () {
        yield* issueSource({ code: "map-replace", clients: [] })
        const both = {
          ...EXAMPLE_MAPPING,
          LeadCreated: { source_prospect_id: "/lead/id", pms_property_id: "/site", occurred_at: "/at" },
        }
        const first = yield* cli(
          "sources",
          "mapping",
          "set",
          "map-replace",
          "--file",
          mappingFile("both.json", both),
        )
        assert.strictEqual(first.code, 0, first.stderr)
        assert.deepStrictEqual(Object.keys(JSON.parse(first.stdout) as object), [
          "LeadCreated",
          "ProspectUpdate",
        ])

        const second = yield* cli(
          "sources",
          "mapping",
          "set",
          "map-replace",
          "--file",
          mappingFile("one.json", PROSPECT_UPDATE_MAPPING),
        )
        // A defect is reported on stdout, so both are shown.
        assert.strictEqual(second.code, 0, `stdout:\n${second.stdout}\nstderr:\n${second.stderr}`)
        assert.deepStrictEqual(JSON.parse(second.stdout), PROSPECT_UPDATE_MAPPING)
        assert.deepStrictEqual(yield* storedMapping("map-replace"), PROSPECT_UPDATE_MAPPING)
      }),
    )

    const rejected: ReadonlyArray<{
      readonly name: string
      readonly args: (file: (content: unknown) => string) => ReadonlyArray<string>
      readonly message: RegExp
    }> = [
      {
        name: "a mapping without occurred_at",
        args: (file) => [
          "map-refused",
          "--file",
          file({ ProspectUpdate: { source_prospect_id: "/id", pms_property_id: "/property/code" } }),
        ],
        message: /^ProspectUpdate: occurred_at must be mapped$/m,
      },
      {
        name: "a field mapped to something that is not a JSON Pointer",
        args: (file) => [
          "map-refused",
          "--file",
          file({ ProspectUpdate: { ...EXAMPLE_MAPPING.ProspectUpdate, phone: "applicant.phone" } }),
        ],
        message:
          /^ProspectUpdate\.phone: "applicant\.phone" is not a JSON Pointer such as \/applicant\/phone$/m,
      },
      {
        name: "an unknown field",
        args: (file) => [
          "map-refused",
          "--file",
          file({ ProspectUpdate: { ...EXAMPLE_MAPPING.ProspectUpdate, favourite_colour: "/colour" } }),
        ],
        message: /^ProspectUpdate: 'favourite_colour' is not a prospect field$/m,
      },
      {
        name: "a file with several problems (every one is named)",
        args: (file) => [
          "map-refused",
          "--file",
          file({ ProspectUpdate: { source_prospect_id: "id", colour: "/c", pms_property_id: "/p" } }),
        ],
        message:
          /ProspectUpdate\.source_prospect_id: "id" is not a JSON Pointer.*; ProspectUpdate: 'colour' is not a prospect field; ProspectUpdate: occurred_at must be mapped/,
      },
      {
        name: "a file that is not a JSON object",
        args: (file) => ["map-refused", "--file", file([EXAMPLE_MAPPING])],
        message: /the file must hold a JSON object of event types/,
      },
      {
        name: "an unknown source",
        args: (file) => ["never-issued", "--file", file(EXAMPLE_MAPPING)],
        message: /^unknown source never-issued$/m,
      },
      {
        name: "a file that is not JSON",
        args: (file) => ["map-refused", "--file", file('{"ProspectUpdate": {"source_prospect_id": "/id",}')],
        message: /^\S+refused-\d+\.json is not valid JSON: /m,
      },
      {
        name: "a file that cannot be read",
        args: () => ["map-refused", "--file", join(files, "missing.json")],
        message: /^cannot read \S+missing\.json: .*ENOENT/m,
      },
    ]

    it.effect("sources mapping set exits 2, naming the problem, and changes nothing on a refused file", () =>
      Effect.gen(function* () {
        yield* issueSource({ code: "map-refused", clients: [] })
        yield* setMapping("map-refused", EXAMPLE_MAPPING)
        let written = 0
        const file = (content: unknown) => mappingFile(`refused-${written++}.json`, content)
        for (const { name, args, message } of rejected) {
          const run = yield* cli("sources", "mapping", "set", ...args(file))
          assertRefused(run, message)
          assert.notInclude(run.stderr, "usage:", name)
          assert.deepStrictEqual(yield* storedMapping("map-refused"), EXAMPLE_MAPPING, name)
        }
      }),
    )

    it.effect("sources mapping show exits 2 for an unknown source", () =>
      Effect.gen(function* () {
        assertRefused(
          yield* cli("sources", "mapping", "show", "never-issued"),
          /^unknown source never-issued$/m,
        )
      }),
    )

    const badMappingCommands: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; message: RegExp }> =
      [
        {
          name: "set without --file",
          args: ["sources", "mapping", "set", "vero"],
          message: /usage: sources mapping set CODE --file mapping\.json/,
        },
        {
          name: "set without a code",
          args: ["sources", "mapping", "set", "--file", "mapping.json"],
          message: /usage: sources mapping set CODE --file mapping\.json/,
        },
        {
          name: "show with two codes",
          args: ["sources", "mapping", "show", "vero", "other"],
          message: /usage: sources mapping show CODE/,
        },
        {
          name: "an unknown option",
          args: ["sources", "mapping", "show", "vero", "--event-type", "ProspectUpdate"],
          message: /Unknown option '--event-type'/,
        },
        {
          name: "an unknown mapping command",
          args: ["sources", "mapping", "delete", "vero"],
          message: /unknown sources mapping command: delete/,
        },
        {
          name: "ingest log with an unknown outcome",
          args: ["ingest", "log", "--outcome", "lost"],
          message: /--outcome must be applied, stale, duplicate, ignored, failed, not 'lost'/,
        },
        {
          name: "ingest log with a limit of 0",
          args: ["ingest", "log", "--limit", "0"],
          message: /--limit must be a whole number from 1 to 1000, not '0'/,
        },
        {
          name: "ingest log with a limit over 1000",
          args: ["ingest", "log", "--limit", "1001"],
          message: /--limit must be a whole number from 1 to 1000, not '1001'/,
        },
        {
          name: "ingest log with a limit that is not a number",
          args: ["ingest", "log", "--limit", "ten"],
          message: /--limit must be a whole number from 1 to 1000, not 'ten'/,
        },
        {
          name: "ingest log with a positional argument",
          args: ["ingest", "log", "vero"],
          message: /usage: ingest log \[--source CODE\]/,
        },
        {
          name: "an unknown ingest command",
          args: ["ingest", "replay"],
          message: /unknown ingest command: replay/,
        },
      ]

    for (const { name, args, message } of badMappingCommands) {
      it.effect(`exits 2 with the usage on ${name}`, () =>
        Effect.gen(function* () {
          const run = yield* cli(...args)
          assertRefused(run, message)
          assert.match(run.stderr, /^usage: /m, "how the command is used")
        }),
      )
    }

    it.effect(
      "ingest log prints what became of each event, newest first, filtered by source, prospect and outcome",
      () =>
        Effect.gen(function* () {
          const source = "log-src"
          const client = yield* ingestingSource(source)
          yield* setMapping(source, PROSPECT_UPDATE_MAPPING)
          const badPhone = prospectUpdate("p-2", "2026-01-10T11:00:00Z", {
            applicant: { first_name: "Ann", last_name: "Lee", email: "ann@example.com", phone: "555-12" },
          })
          yield* ingested(client, source, prospectUpdate("p-1", "2026-01-10T10:00:00Z"), 1)
          yield* ingested(client, source, badPhone, 2)
          yield* ingested(
            client,
            source,
            prospectUpdate("p-3", "2026-01-10T12:00:00Z", { property: { code: "pms-prop-9" } }),
            3,
          )
          yield* ingested(client, source, prospectUpdate("p-1", "2026-01-09T10:00:00Z"), 4)

          const all = yield* ingestLog("--source", source)
          assert.deepStrictEqual(
            all.map((r) => [r.source_prospect_id, r.outcome, r.reason]),
            [
              ["p-1", "stale", "a newer event was already applied"],
              ["p-3", "ignored", "unknown pms_property_id pms-prop-9"],
              ["p-2", "ignored", "Phone is not valid"],
              ["p-1", "applied", null],
            ],
          )
          const applied = all[3]!
          assert.strictEqual(applied.source, source)
          assert.strictEqual(applied.event_type, "ProspectUpdate")
          assert.strictEqual(applied.occurred_at, "2026-01-10T10:00:00.000Z")
          assert.match(applied.event_id, /^[0-9a-f]{64}$/)
          assert.match(applied.received_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          const [prospect] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
            select id::text as id from prospects where source = ${source} and source_prospect_id = 'p-1'`,
          )
          assert.strictEqual(String(applied.prospect_id), prospect!.id)
          assert.strictEqual(String(all[0]!.prospect_id), prospect!.id)
          assert.isNull(all[1]!.prospect_id)
          assert.isNull(all[2]!.prospect_id)

          assert.deepStrictEqual(yield* ingestLog("--source", source, "--outcome", "ignored"), [
            all[1],
            all[2],
          ])
          assert.deepStrictEqual(yield* ingestLog("--source", source, "--prospect", "p-1"), [all[0], all[3]])
          assert.deepStrictEqual(
            yield* ingestLog("--source", source, "--prospect", "p-1", "--outcome", "applied"),
            [all[3]],
          )
          assert.deepStrictEqual(yield* ingestLog("--prospect", "p-2"), [all[2]])
          assert.deepStrictEqual(yield* ingestLog("--source", source, "--limit", "2"), all.slice(0, 2))
          assert.deepStrictEqual(yield* ingestLog("--source", "never-issued"), [])
          assert.deepStrictEqual(yield* ingestLog("--source", source, "--outcome", "duplicate"), [])
        }),
    )

    it.effect(
      "ingest log prints 50 records unless --limit says otherwise",
      () =>
        Effect.gen(function* () {
          const source = "log-many"
          const client = yield* ingestingSource(source)
          // No mapping: every event is logged as ignored, with why.
          for (let i = 0; i < 55; i++) {
            const posted = yield* postEvent(client, {
              source,
              event_type: "ProspectUpdate",
              payload: prospectUpdate(`m-${i}`, "2026-01-10T10:00:00Z"),
            })
            assert.strictEqual(posted.status, 202, posted.text)
          }
          yield* eventually(logCount(source), (n) => n >= 55)

          const defaulted = yield* ingestLog("--source", source)
          assert.strictEqual(defaulted.length, 50)
          const every = yield* ingestLog("--source", source, "--limit", "1000")
          assert.strictEqual(every.length, 55)
          assert.deepStrictEqual(defaulted, every.slice(0, 50))
          const ids = every.map((r) => BigInt(r.id))
          assert.deepStrictEqual(
            ids,
            [...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)),
            "newest first",
          )
          for (const record of every) {
            assert.strictEqual(record.outcome, "ignored")
            assert.strictEqual(record.reason, `no mapping for event type ProspectUpdate on source ${source}`)
          }
        }),
      60_000,
    )
  })
})
