import { spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "vitest"
import { databaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"
import { baseDatabaseUrl } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))
const fixture = fileURLToPath(new URL("fixtures/reserved-connection-loss.mjs", import.meta.url))
const typesFixture = fileURLToPath(new URL("fixtures/types-fetch-loss.mjs", import.meta.url))
const resetFixture = fileURLToPath(new URL("fixtures/statement-after-reset.mjs", import.meta.url))
const patch = path.join(root, "infra/patches/postgres+3.4.9.patch")
const installed = path.join(root, "node_modules/postgres")
const serverUrl = withDatabase(databaseUrl(baseDatabaseUrl), "postgres")

const run = (driverDir: string, script = fixture) =>
  spawnSync(process.execPath, [script, driverDir, serverUrl], { encoding: "utf8", timeout: 30_000 })

describe("the postgres driver as installed (infra/patches)", () => {
  const scratch = mkdtempSync(path.join(tmpdir(), "driver-"))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it("without the patch, a query on a reserved connection whose backend died, or one ended while it fetches the types, ends the process", () => {
    cpSync(installed, path.join(scratch, "node_modules/postgres"), { recursive: true })
    const reverse = spawnSync("git", ["apply", "--reverse", patch], { cwd: scratch, encoding: "utf8" })
    assert.strictEqual(reverse.status, 0, reverse.stderr)
    const unpatched = run(path.join(scratch, "node_modules/postgres"))
    assert.notStrictEqual(unpatched.status, 0)
    assert.include(unpatched.stderr, "TypeError: Cannot read properties of null (reading 'write')")
    assert.include(unpatched.stderr, "nextWrite")
    assert.notInclude(unpatched.stdout, "survived")
    const typesCut = run(path.join(scratch, "node_modules/postgres"), typesFixture)
    assert.notStrictEqual(typesCut.status, 0)
    assert.include(typesCut.stderr, "57P01")
    assert.notInclude(typesCut.stdout, "survived")
  })

  it("refuses queries on a connection whose backend died, keeps the process, and the pool serves again", () => {
    const patched = run(installed)
    assert.strictEqual(patched.status, 0, patched.stderr)
    assert.deepStrictEqual(patched.stdout.trim().split("\n"), [
      "reserved: refused CONNECTION_CLOSED",
      "reserved again: refused CONNECTION_CLOSED",
      "transaction: refused CONNECTION_CLOSED",
      ...Array.from({ length: 6 }, () => "pool: answered"),
      "survived",
    ])
  })

  it("refuses a ROLLBACK sent on a reserved connection between its reset and its close; without the patch it waits forever", () => {
    const patched = run(installed, resetFixture)
    assert.strictEqual(patched.status, 0, patched.stderr)
    assert.deepStrictEqual(patched.stdout.trim().split("\n"), [
      "statement: refused ECONNRESET",
      "reset: true",
      "rollback: refused CONNECTION_CLOSED",
      'then: answered {"n":1}',
      "survived",
    ])
    const unpatchedDir = path.join(scratch, "reset", "node_modules/postgres")
    cpSync(installed, unpatchedDir, { recursive: true })
    const reverse = spawnSync("git", ["apply", "--reverse", patch], {
      cwd: path.join(scratch, "reset"),
      encoding: "utf8",
    })
    assert.strictEqual(reverse.status, 0, reverse.stderr)
    const unpatched = run(unpatchedDir, resetFixture)
    assert.include(unpatched.stdout, "rollback: still waiting")
  })

  it("closes a connection cut while it fetches the array types, keeps the process, and fetches them again", () => {
    const patched = run(installed, typesFixture)
    assert.strictEqual(patched.status, 0, patched.stderr)
    const lines = patched.stdout.trim().split("\n")
    assert.include(lines, "cut: true")
    assert.include(lines, 'then: answered {"xs":[1,2]}')
    assert.strictEqual(lines.at(-1), "survived")
  })
})
