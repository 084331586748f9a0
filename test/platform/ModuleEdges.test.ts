import { readdirSync, readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"
import { FIELD_LIMITS } from "../../backend/contract/FieldLimits.ts"
import { Streams } from "../../backend/contract/Streams.ts"
import { EventNames } from "../../backend/events/Catalog.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/** One import of a backend file: the importing file and what it names, a package or a backend path. */
interface Edge {
  readonly from: string
  readonly to: string
}

/** Every `.ts` file under `dir`, as a path relative to the repository root with `/` separators. */
const sourceFiles = (dir: string): Array<string> =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`
    if (entry.isDirectory()) return sourceFiles(relative)
    return entry.name.endsWith(".ts") ? [relative] : []
  })

/**
 * The import graph of `backend/`, read from the source text with TypeScript's own scanner (static imports,
 * re-exports, type-only imports and dynamic `import()` alike). Relative imports become repository paths.
 */
const importGraph = (): Array<Edge> =>
  sourceFiles("backend").flatMap((from) =>
    ts
      .preProcessFile(readFileSync(path.join(ROOT, from), "utf8"), true, true)
      .importedFiles.map(({ fileName }) => ({
        from,
        to: fileName.startsWith(".") ? path.posix.join(path.posix.dirname(from), fileName) : fileName,
      })),
  )

/** The folder directly under `backend/` a file lives in (`platform`, `roster`, ...); root files have none. */
const moduleOf = (file: string) => {
  const parts = file.split("/")
  return parts[0] === "backend" && parts.length > 2 ? parts[1] : undefined
}

/**
 * The architecture as a table, bottom to top: each folder of `backend/` with the folders it may import. Every
 * arrow points down (a folder names only folders above it in this table), so there are no cycles between folders;
 * `cli/` and the root files (`main.ts`, `App.ts`, `Infrastructure.ts`) compose the whole service and may import
 * any folder. `docs/architecture.md` says what each folder owns.
 */
const LAYERS: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["platform", []],
  ["contract", ["platform"]],
  ["events", ["platform"]],
  ["audit", ["platform"]],
  ["auth", ["platform", "contract"]],
  ["roster", ["platform", "contract", "audit", "auth"]],
  ["prospects", ["platform", "contract", "events", "roster"]],
  ["ingest", ["platform", "contract", "roster", "prospects"]],
  ["webhooks", ["platform", "contract", "events", "audit", "roster"]],
  ["policies", ["platform", "contract", "events", "audit", "roster", "prospects"]],
  ["enrollment", ["platform", "contract", "roster", "prospects", "policies"]],
  ["portal", ["platform", "contract", "events", "audit", "auth", "roster", "webhooks"]],
  [
    "operator",
    [
      "platform",
      "contract",
      "events",
      "audit",
      "auth",
      "roster",
      "prospects",
      "ingest",
      "webhooks",
      "policies",
      "enrollment",
      "portal",
    ],
  ],
  ["reference", ["platform", "contract", "events", "auth", "webhooks"]],
]
const ALLOWED = new Map(LAYERS)

/** Folders that compose the service: they may import every folder of the table. */
const COMPOSERS = new Set(["cli", undefined])

/**
 * Where `enrollment/` may enter `policies/` and `prospects/`: their services, schema files and settings, never
 * their rules (underwriting, pricing, eligibility), which stay behind the services.
 */
const ENROLLMENT_ENTRIES: ReadonlyMap<string, ReadonlyArray<string>> = new Map([
  ["policies", ["Config.ts", "Domain.ts", "Policies.ts", "Payments.ts"]],
  ["prospects", ["Domain.ts", "Enrollments.ts", "Sources.ts"]],
])

/**
 * Folders split into parts, each part with the parts it may import, bottom to top like the table above. A part
 * imports the folder's own files (its shared schemas and settings) and the parts it lists; the folder's own files
 * import no part.
 */
const PARTS: ReadonlyMap<string, ReadonlyArray<readonly [string, ReadonlyArray<string>]>> = new Map([
  // The delivery engine knows nothing of how endpoints are managed; endpoint management uses the engine's address
  // rules and signature check.
  [
    "webhooks",
    [
      ["delivery", []],
      ["endpoints", ["delivery"]],
      // Replays find endpoints as endpoint management does and hand their deliveries to the engine.
      ["replays", ["delivery", "endpoints"]],
      // Bulk retries (the console's and the portal's recoveries) snapshot what endpoint management's filters
      // match and retry it through it.
      ["bulk", ["endpoints"]],
    ],
  ],
  // The console's routes sit on the operator services, which know nothing of HTTP.
  ["operator", [["http", []]]],
])

/** The part of its folder a file lives in (`delivery` of `backend/webhooks/delivery/Router.ts`); none at the top. */
const partOf = (file: string) => {
  const parts = file.split("/")
  return parts[0] === "backend" && parts.length > 3 ? parts[2] : undefined
}

const isPlatform = (file: string) => moduleOf(file) === "platform"
const isBackendPath = (target: string) => target.startsWith("backend/")
const isDriver = (target: string) => target === "postgres" || target.startsWith("@nats-io/")
const isRepo = (target: string) => /(^|\/)[A-Za-z]*Repo\.ts$/.test(target)

/** The edges of `graph` that break the layout, each with the rule it breaks. */
const violations = (graph: ReadonlyArray<Edge>) =>
  graph.flatMap((edge) => {
    const broken: Array<string> = []
    const from = moduleOf(edge.from)
    const to = isBackendPath(edge.to) ? moduleOf(edge.to) : undefined
    if (to !== undefined && from !== to && !COMPOSERS.has(from)) {
      const allowed = ALLOWED.get(from!)
      if (allowed === undefined) broken.push(`${from}/ is missing from the table`)
      else if (!allowed.includes(to)) {
        broken.push(
          allowed.length === 0 ? `${from}/ imports no other folder` : `${from}/ may not import ${to}/`,
        )
      }
    }
    if (from === "enrollment" && to !== undefined && ENROLLMENT_ENTRIES.has(to)) {
      if (!ENROLLMENT_ENTRIES.get(to)!.includes(path.posix.basename(edge.to))) {
        broken.push(`enrollment/ uses ${to}/ only through ${ENROLLMENT_ENTRIES.get(to)!.join(", ")}`)
      }
    }
    const parts = from === undefined ? undefined : PARTS.get(from)
    if (parts !== undefined && from === to) {
      const [fromPart, toPart] = [partOf(edge.from), partOf(edge.to)]
      if (toPart !== undefined && toPart !== fromPart) {
        const where = fromPart === undefined ? `${from}/` : `${from}/${fromPart}/`
        const allowed = fromPart === undefined ? [] : new Map(parts).get(fromPart)
        if (allowed === undefined) broken.push(`${where} is missing from the parts of ${from}/`)
        else if (!allowed.includes(toPart)) broken.push(`${where} may not import ${from}/${toPart}/`)
      }
    }
    if (isRepo(edge.to) && isBackendPath(edge.to) && moduleOf(edge.to) !== moduleOf(edge.from)) {
      broken.push("no context imports another context's Repo.ts")
    }
    if (!isPlatform(edge.from) && isDriver(edge.to)) {
      broken.push("only platform/ imports postgres and @nats-io/*")
    }
    if (!isPlatform(edge.from) && edge.to.startsWith("backend/platform/nats/")) {
      broken.push("only platform/ uses the JetStream protocol code of platform/nats/")
    }
    return broken.map((rule) => `${edge.from} -> ${edge.to}: ${rule}`)
  })

/** String literals of a source file, read with TypeScript's scanner (comments are not literals). */
const stringLiterals = (file: string) => {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard)
  scanner.setText(readFileSync(path.join(ROOT, file), "utf8"))
  const literals: Array<string> = []
  for (let token = scanner.scan(); token !== ts.SyntaxKind.EndOfFileToken; token = scanner.scan()) {
    if (token === ts.SyntaxKind.StringLiteral || token === ts.SyntaxKind.NoSubstitutionTemplateLiteral) {
      literals.push(scanner.getTokenValue())
    }
  }
  return literals
}

describe("module edges of backend/", () => {
  it("read like the architecture: every arrow of the table points down", () => {
    LAYERS.forEach(([folder, imports], index) => {
      const below = LAYERS.slice(0, index).map(([name]) => name)
      for (const target of imports) assert.include(below, target, `${folder}/ -> ${target}/ points down`)
    })
    // The folders of backend/ are the table's and the composers', nothing else.
    const folders = new Set(sourceFiles("backend").map(moduleOf))
    assert.deepStrictEqual(
      [...folders].filter((folder) => !ALLOWED.has(folder!) && !COMPOSERS.has(folder)),
      [],
    )
    // Likewise inside a folder split into parts, and every part of such a folder is in its table.
    for (const [folder, parts] of PARTS) {
      parts.forEach(([part, imports], index) => {
        const below = parts.slice(0, index).map(([name]) => name)
        for (const target of imports)
          assert.include(below, target, `${folder}/${part}/ -> ${target}/ points down`)
      })
      const found = new Set(
        sourceFiles(`backend/${folder}`)
          .map(partOf)
          .filter((part) => part !== undefined),
      )
      assert.sameMembers(
        [...found],
        parts.map(([part]) => part),
        `the parts of ${folder}/`,
      )
    }
    // Nothing below operator/ imports it: the console's API sits on top of the contexts it operates.
    for (const [folder, imports] of LAYERS) {
      if (folder !== "operator") assert.notInclude(imports, "operator", folder)
    }
  })

  it("break none of the architecture's rules", () => {
    const graph = importGraph()
    // The scanner found the imports at all: the platform's database and NATS layers import their drivers.
    assert.deepInclude(graph, { from: "backend/platform/Db.ts", to: "postgres" })
    assert.isTrue(
      graph.some((edge) => edge.from.startsWith("backend/platform/") && edge.to.startsWith("@nats-io/")),
    )
    assert.deepStrictEqual(violations(graph), [])
  })

  it("keep the domain out of platform/: no stream, subject, event, field or context setting is named there", () => {
    // The streams' subject tokens, not their base names: the byte limit and discard policy of each stream are
    // still the platform's settings, keyed by base name.
    const domainWords = new Set([
      ...Object.values(Streams).map((stream) => stream.subjects),
      ...EventNames,
      ...Object.keys(FIELD_LIMITS),
    ])
    const named = sourceFiles("backend/platform").flatMap((file) =>
      stringLiterals(file)
        .filter(
          (literal) =>
            domainWords.has(literal) ||
            EventNames.some((event) => literal.includes(`.${event}`)) ||
            // The contexts read their own settings (webhooks/Config.ts, policies/Config.ts, ingest/Config.ts).
            /^(WEBHOOK|PAYMENT|STRIPE|INGEST_LOG)_/.test(literal),
        )
        .map((literal) => `${file}: ${literal}`),
    )
    assert.deepStrictEqual(named, [])
  })

  it("names each kind of forbidden edge", () => {
    const forbidden: ReadonlyArray<Edge> = [
      { from: "backend/platform/Http.ts", to: "backend/roster/Domain.ts" },
      { from: "backend/ingest/Ingest.ts", to: "backend/roster/Repo.ts" },
      { from: "backend/policies/Policies.ts", to: "backend/prospects/SourcesRepo.ts" },
      { from: "backend/cli/Tail.ts", to: "@nats-io/jetstream" },
      { from: "backend/roster/Repo.ts", to: "postgres" },
      { from: "backend/main.ts", to: "postgres" },
      { from: "backend/cli/Tail.ts", to: "backend/platform/nats/Client.ts" },
      { from: "backend/roster/Repo.ts", to: "backend/operator/Audit.ts" },
      { from: "backend/platform/Nats.ts", to: "backend/contract/Streams.ts" },
      { from: "backend/events/Catalog.ts", to: "backend/prospects/Domain.ts" },
      { from: "backend/enrollment/View.ts", to: "backend/policies/Underwriting.ts" },
      { from: "backend/tools/Thing.ts", to: "backend/platform/Db.ts" },
      { from: "backend/webhooks/delivery/Router.ts", to: "backend/webhooks/endpoints/Endpoints.ts" },
      { from: "backend/webhooks/Domain.ts", to: "backend/webhooks/delivery/Egress.ts" },
      { from: "backend/webhooks/outbound/Thing.ts", to: "backend/webhooks/delivery/Egress.ts" },
      { from: "backend/operator/Sessions.ts", to: "backend/operator/http/Cookie.ts" },
    ]
    assert.deepStrictEqual(violations(forbidden), [
      "backend/platform/Http.ts -> backend/roster/Domain.ts: platform/ imports no other folder",
      "backend/ingest/Ingest.ts -> backend/roster/Repo.ts: no context imports another context's Repo.ts",
      "backend/policies/Policies.ts -> backend/prospects/SourcesRepo.ts: no context imports another context's Repo.ts",
      "backend/cli/Tail.ts -> @nats-io/jetstream: only platform/ imports postgres and @nats-io/*",
      "backend/roster/Repo.ts -> postgres: only platform/ imports postgres and @nats-io/*",
      "backend/main.ts -> postgres: only platform/ imports postgres and @nats-io/*",
      "backend/cli/Tail.ts -> backend/platform/nats/Client.ts: only platform/ uses the JetStream protocol code of platform/nats/",
      "backend/roster/Repo.ts -> backend/operator/Audit.ts: roster/ may not import operator/",
      "backend/platform/Nats.ts -> backend/contract/Streams.ts: platform/ imports no other folder",
      "backend/events/Catalog.ts -> backend/prospects/Domain.ts: events/ may not import prospects/",
      "backend/enrollment/View.ts -> backend/policies/Underwriting.ts: enrollment/ uses policies/ only through Config.ts, Domain.ts, Policies.ts, Payments.ts",
      "backend/tools/Thing.ts -> backend/platform/Db.ts: tools/ is missing from the table",
      "backend/webhooks/delivery/Router.ts -> backend/webhooks/endpoints/Endpoints.ts: webhooks/delivery/ may not import webhooks/endpoints/",
      "backend/webhooks/Domain.ts -> backend/webhooks/delivery/Egress.ts: webhooks/ may not import webhooks/delivery/",
      "backend/webhooks/outbound/Thing.ts -> backend/webhooks/delivery/Egress.ts: webhooks/outbound/ is missing from the parts of webhooks/",
      "backend/operator/Sessions.ts -> backend/operator/http/Cookie.ts: operator/ may not import operator/http/",
    ])
    const allowed: ReadonlyArray<Edge> = [
      { from: "backend/platform/Db.ts", to: "postgres" },
      { from: "backend/platform/nats/Puller.ts", to: "@nats-io/transport-node" },
      { from: "backend/roster/Roster.ts", to: "backend/roster/Repo.ts" },
      { from: "backend/prospects/Prospects.ts", to: "backend/roster/Domain.ts" },
      { from: "backend/platform/Nats.ts", to: "backend/platform/nats/Client.ts" },
      { from: "backend/roster/Repo.ts", to: "backend/audit/Audit.ts" },
      { from: "backend/enrollment/Journey.ts", to: "backend/policies/Policies.ts" },
      { from: "backend/cli/RunCommand.ts", to: "backend/operator/Operators.ts" },
      { from: "backend/App.ts", to: "backend/webhooks/delivery/Workers.ts" },
      { from: "backend/webhooks/endpoints/Endpoints.ts", to: "backend/webhooks/delivery/Egress.ts" },
      { from: "backend/webhooks/delivery/Delivery.ts", to: "backend/webhooks/Config.ts" },
      { from: "backend/operator/http/Route.ts", to: "backend/operator/Sessions.ts" },
      { from: "backend/operator/Health.ts", to: "backend/webhooks/delivery/HealthBuckets.ts" },
    ]
    assert.deepStrictEqual(violations(allowed), [])
  })
})
