import { readdirSync, readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"

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

const isPlatform = (file: string) => moduleOf(file) === "platform"
const isBackendPath = (target: string) => target.startsWith("backend/")
const isDriver = (target: string) => target === "postgres" || target.startsWith("@nats-io/")
const isRepo = (target: string) => /(^|\/)[A-Za-z]*Repo\.ts$/.test(target)

/** The edges of `graph` that break DESIGN.md's layout, each with the rule it breaks. */
const violations = (graph: ReadonlyArray<Edge>) =>
  graph.flatMap((edge) => {
    const broken: Array<string> = []
    if (isPlatform(edge.from) && isBackendPath(edge.to) && !isPlatform(edge.to)) {
      broken.push("platform/ imports no context")
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

describe("module edges of backend/", () => {
  it("break none of DESIGN.md's rules", () => {
    const graph = importGraph()
    // The scanner found the imports at all: the platform's database and NATS layers import their drivers.
    assert.deepInclude(graph, { from: "backend/platform/Db.ts", to: "postgres" })
    assert.isTrue(
      graph.some((edge) => edge.from.startsWith("backend/platform/") && edge.to.startsWith("@nats-io/")),
    )
    assert.deepStrictEqual(violations(graph), [])
  })

  it("names each kind of forbidden edge", () => {
    const forbidden: ReadonlyArray<Edge> = [
      { from: "backend/platform/Http.ts", to: "backend/roster/Domain.ts" },
      { from: "backend/ingest/Ingest.ts", to: "backend/roster/Repo.ts" },
      { from: "backend/webhooks/Router.ts", to: "backend/prospects/SourcesRepo.ts" },
      { from: "backend/cli/Tail.ts", to: "@nats-io/jetstream" },
      { from: "backend/roster/Repo.ts", to: "postgres" },
      { from: "backend/main.ts", to: "postgres" },
      { from: "backend/cli/Tail.ts", to: "backend/platform/nats/Client.ts" },
    ]
    assert.deepStrictEqual(violations(forbidden), [
      "backend/platform/Http.ts -> backend/roster/Domain.ts: platform/ imports no context",
      "backend/ingest/Ingest.ts -> backend/roster/Repo.ts: no context imports another context's Repo.ts",
      "backend/webhooks/Router.ts -> backend/prospects/SourcesRepo.ts: no context imports another context's Repo.ts",
      "backend/cli/Tail.ts -> @nats-io/jetstream: only platform/ imports postgres and @nats-io/*",
      "backend/roster/Repo.ts -> postgres: only platform/ imports postgres and @nats-io/*",
      "backend/main.ts -> postgres: only platform/ imports postgres and @nats-io/*",
      "backend/cli/Tail.ts -> backend/platform/nats/Client.ts: only platform/ uses the JetStream protocol code of platform/nats/",
    ])
    const allowed: ReadonlyArray<Edge> = [
      { from: "backend/platform/Db.ts", to: "postgres" },
      { from: "backend/platform/nats/Puller.ts", to: "@nats-io/transport-node" },
      { from: "backend/roster/Roster.ts", to: "backend/roster/Repo.ts" },
      { from: "backend/prospects/Prospects.ts", to: "backend/roster/Domain.ts" },
      { from: "backend/platform/Nats.ts", to: "backend/platform/nats/Client.ts" },
    ]
    assert.deepStrictEqual(violations(allowed), [])
  })
})
