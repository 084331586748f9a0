import { readdirSync, readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/**
 * One writer per table: the table of tables in `docs/architecture.md` names each table's owner (the only folder of
 * `backend/` whose SQL inserts, updates or deletes its rows) and the folders that may also read it. Every other
 * folder reaches those rows through what the owner exports. This file reads the SQL of `backend/` and checks it
 * against that table.
 */

interface Ownership {
  readonly owner: string
  readonly readers: ReadonlyArray<string>
}

/** A table named by the SQL of a file, and whether the statement writes it. */
interface Use {
  readonly file: string
  readonly table: string
  readonly writes: boolean
}

/** Every `.ts` file under `dir`, as a path relative to the repository root with `/` separators. */
const sourceFiles = (dir: string): Array<string> =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`
    if (entry.isDirectory()) return sourceFiles(relative)
    return entry.name.endsWith(".ts") ? [relative] : []
  })

/**
 * The tables the migrations leave, in the order they run: each `create table` adds one, a `drop table` removes it,
 * an `alter table ... rename to` renames it.
 */
const migratedTables = () => {
  const tables = new Set<string>()
  const dir = path.join(ROOT, "backend/migrations")
  for (const name of readdirSync(dir).sort()) {
    const text = readFileSync(path.join(dir, name), "utf8").toLowerCase()
    for (const [, verb, table, renamed] of text.matchAll(
      /\b(create (?:unlogged )?table (?:if not exists )?|drop table (?:if exists )?|alter table )([a-z_][a-z0-9_]*)(?: rename to ([a-z_][a-z0-9_]*))?/g,
    )) {
      if (verb!.startsWith("create")) tables.add(table!)
      else if (verb!.startsWith("drop")) tables.delete(table!)
      else if (renamed !== undefined) {
        tables.delete(table!)
        tables.add(renamed)
      }
    }
  }
  return tables
}

/**
 * The table of tables of `docs/architecture.md` (its "Tables" section): a row names one or more tables in its first
 * cell, their owner folder in the second, and the other folders that may read them in the third (`-` for none).
 */
const tableOfTables = () => {
  const doc = readFileSync(path.join(ROOT, "docs/architecture.md"), "utf8")
  const section = doc.split(/^## /m).find((part) => part.startsWith("Tables\n"))
  assert.isDefined(section, "docs/architecture.md has a Tables section")
  const owners = new Map<string, Ownership>()
  for (const line of section!.split("\n")) {
    const cells = line.split("|").slice(1, -1)
    if (cells.length !== 3 || /^\s*-+\s*$/.test(cells[0]!)) continue
    const named = (cell: string) => [...cell.matchAll(/`([a-z_][a-z0-9_]*)\/?`/g)].map((m) => m[1]!)
    const [tables, [owner], readers] = cells.map(named) as [Array<string>, Array<string>, Array<string>]
    if (owner === undefined) continue
    for (const table of tables) {
      assert.isFalse(owners.has(table), `${table} is in the table of tables once`)
      owners.set(table, { owner, readers })
    }
  }
  return owners
}

/** The folder of `backend/` a file belongs to (`webhooks` for `backend/webhooks/endpoints/Repo.ts`). */
const folderOf = (file: string) => file.split("/")[1]!.replace(/\.ts$/, "")

/** The retention helpers of `platform/Prune.ts`, which delete from the tables named in their arguments. */
const PRUNE_HELPERS = new Set(["pruneOlder", "pruneJobs"])

/**
 * The tables `text` (one file's source) names in SQL: written by `insert into`, `update ... set` and `delete from`
 * (and by the arguments of a prune helper), read by `from` (but `delete from`), `join` and `using`. SQL lives in string and template
 * literals, whose substitutions are read as a placeholder.
 */
const tableUses = (file: string, text: string, tables: ReadonlySet<string>): Array<Use> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const uses: Array<Use> = []
  const add = (table: string, writes: boolean) => {
    if (tables.has(table)) uses.push({ file, table, writes })
  }
  const read = (literal: string, pruned: boolean) => {
    const sql = literal.replace(/\s+/g, " ").toLowerCase()
    if (pruned) add(sql, true)
    for (const [, table] of sql.matchAll(/\binsert into ([a-z_][a-z0-9_]*)/g)) add(table!, true)
    for (const [, table] of sql.matchAll(/\bupdate ([a-z_][a-z0-9_]*) (?:(?:as )?[a-z_]+ )?set\b/g))
      add(table!, true)
    for (const [, table] of sql.matchAll(/\bdelete from ([a-z_][a-z0-9_]*)/g)) add(table!, true)
    for (const [, table] of sql.matchAll(/(?<!delete )\b(?:from|join|using) ([a-z_][a-z0-9_]*)/g))
      add(table!, false)
  }
  const visit = (node: ts.Node, pruned: boolean) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) read(node.text, pruned)
    else if (ts.isTemplateExpression(node)) {
      read([node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(" ? "), pruned)
    }
    const prunes =
      ts.isCallExpression(node) && ts.isIdentifier(node.expression) && PRUNE_HELPERS.has(node.expression.text)
    ts.forEachChild(node, (child) => visit(child, pruned || prunes))
  }
  visit(source, false)
  return uses
}

/** The uses that break the table: a write by a folder that is not the owner, a read by one not named. */
const broken = (uses: ReadonlyArray<Use>, owners: ReadonlyMap<string, Ownership>) => {
  const found = new Set<string>()
  for (const { file, table, writes } of uses) {
    const folder = folderOf(file)
    const owned = owners.get(table)
    if (owned === undefined) found.add(`${file}: ${table} is missing from the table of tables`)
    else if (folder === owned.owner) continue
    else if (writes) found.add(`${file}: ${folder}/ writes ${table}, which ${owned.owner}/ owns`)
    else if (!owned.readers.includes(folder)) {
      found.add(
        `${file}: ${folder}/ reads ${table}, which only ${[owned.owner, ...owned.readers].join("/, ")}/ may`,
      )
    }
  }
  return [...found]
}

describe("tables of backend/", () => {
  const tables = migratedTables()
  const owners = tableOfTables()

  it("are each in the table of tables, with an owner that is a folder of backend/", () => {
    assert.sameMembers([...owners.keys()], [...tables])
    const folders = new Set(sourceFiles("backend").map(folderOf))
    for (const [table, { owner, readers }] of owners) {
      for (const folder of [owner, ...readers]) assert.isTrue(folders.has(folder), `${table}: ${folder}/`)
    }
  })

  it("are written only by their owner and read only by it and the readers the table names", () => {
    const uses = sourceFiles("backend").flatMap((file) =>
      tableUses(file, readFileSync(path.join(ROOT, file), "utf8"), tables),
    )
    // The reading found the SQL at all: the delivery engine writes its deliveries, the roster reads its owners.
    assert.deepInclude(uses, {
      file: "backend/webhooks/delivery/RouterRepo.ts",
      table: "webhook_deliveries",
      writes: true,
    })
    assert.isTrue(
      uses.some((use) => use.table === "owners" && !use.writes && folderOf(use.file) === "roster"),
    )
    assert.deepStrictEqual(broken(uses, owners), [])
  })

  it("names each kind of broken ownership", () => {
    const check = (file: string, text: string) => broken(tableUses(file, text, tables), owners)
    assert.deepStrictEqual(
      check(
        "backend/operator/RetentionRepo.ts",
        "const go = (sql) => sql`delete from webhook_attempts a using doomed where a.delivery_id = doomed.id`",
      ),
      ["backend/operator/RetentionRepo.ts: operator/ writes webhook_attempts, which webhooks/ owns"],
    )
    assert.deepStrictEqual(
      check(
        "backend/operator/System.ts",
        'const n = pruneOlder(db, "dead_letters", "created_at", before, 10)',
      ),
      ["backend/operator/System.ts: operator/ writes dead_letters, which platform/ owns"],
    )
    assert.deepStrictEqual(
      check(
        "backend/roster/OwnersRepo.ts",
        "sql`update client_owner_grants g set buildings = ${b} where g.owner_id = ${id}`",
      ),
      ["backend/roster/OwnersRepo.ts: roster/ writes client_owner_grants, which auth/ owns"],
    )
    assert.deepStrictEqual(
      check(
        "backend/operator/Directory.ts",
        "sql`select slug from owners o join prospects p on p.owner_id = o.id`",
      ),
      [
        "backend/operator/Directory.ts: operator/ reads owners, which only roster/, auth/, policies/, prospects/, webhooks/ may",
        "backend/operator/Directory.ts: operator/ reads prospects, which only prospects/, ingest/ may",
      ],
    )
    // Its own rows, the readers named, and words that are not SQL pass.
    assert.deepStrictEqual(
      check(
        "backend/prospects/Repo.ts",
        "sql`insert into prospects (id) select 1 from owners`; const text = 'the owners tab'",
      ),
      [],
    )
  })
})
