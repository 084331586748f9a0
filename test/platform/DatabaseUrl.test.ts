import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { parseDatabaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"

const parsed = (text: string) => {
  const result = parseDatabaseUrl(text)
  if (Result.isFailure(result)) assert.fail(`refused ${text}: ${result.failure}`)
  return result.success
}

const problem = (text: string) => {
  const result = parseDatabaseUrl(text)
  if (Result.isSuccess(result)) assert.fail(`accepted ${text}`)
  return result.failure
}

describe("DATABASE_URL", () => {
  it("reads several hosts, each with its port, and target_session_attrs", () => {
    const url = parsed(
      "postgres://app:s%40cret@db-a.internal:5432,10.0.0.7:5433/partners?target_session_attrs=primary",
    )
    assert.deepStrictEqual(url.hosts, [
      { host: "db-a.internal", port: 5432 },
      { host: "10.0.0.7", port: 5433 },
    ])
    assert.strictEqual(url.database, "partners")
    assert.strictEqual(url.targetSessionAttrs, "primary")
  })

  it("reads one host with or without a port, and no target_session_attrs", () => {
    assert.deepStrictEqual(parsed("postgresql://postgres@127.0.0.1/partner_service").hosts, [
      { host: "127.0.0.1", port: undefined },
    ])
    const url = parsed("postgres://postgres@localhost:6543/partner_service?sslmode=require")
    assert.deepStrictEqual(url.hosts, [{ host: "localhost", port: 6543 }])
    assert.isUndefined(url.targetSessionAttrs)
  })

  it("names another database on the same hosts, user and parameters", () => {
    const url = parsed("postgres://app:s%40cret@h1:5432,h2:5433/partners?target_session_attrs=primary")
    assert.strictEqual(
      withDatabase(url, "postgres"),
      "postgres://app:s%40cret@h1:5432,h2:5433/postgres?target_session_attrs=primary",
    )
    assert.strictEqual(parsed(withDatabase(url, "ps test")).database, "ps test")
  })

  const malformed: ReadonlyArray<readonly [string, string]> = [
    ["mysql://app@db/partners", "it does not start with postgres:// or postgresql://"],
    ["postgres://app@h1:5432,h2:99999/db", "the port of host 2 (h2) is not a number from 1 to 65535"],
    ["postgres://app@h1:5432,h2:abc/db", "the port of host 2 (h2) is not a number from 1 to 65535"],
    ["postgres://app@h1:0/db", "the port of the host (h1) is not a number from 1 to 65535"],
    [
      "postgres://app@h1:5432,h2/db",
      "host 2 (h2) has no port: with several hosts, give each its port (host:5432)",
    ],
    ["postgres://app@h1:5432,,h3:5432/db", "host 2 is empty"],
    ["postgres://app@h1:5432,h_2!:5432/db", "host 2 is not a host name or IPv4 address"],
    [
      "postgres://app@[::1]:5432/db",
      "the host is an IPv6 address, which the driver cannot reach from a URL: use a host name",
    ],
    [
      "postgres://app@h1:5432,h2:5432/db?target_session_attrs=master",
      'target_session_attrs "master" is not one of read-write, read-only, primary, standby, prefer-standby',
    ],
    [
      "postgres://app@h1:5432/db?target_session_attrs=primary&target_session_attrs=any",
      "target_session_attrs is given more than once",
    ],
    ["postgres://app:p@ss@h1:5432/db", "the user or password holds an @: percent-encode it as %40"],
    [
      "postgres://app:pa/ss@h1:5432/db",
      "the user or password holds a /, ? or #: percent-encode it (%2F, %3F, %23)",
    ],
    ["postgres://app@h1:5432/db%zz", "the database name is not valid percent-encoding"],
  ]
  for (const [text, message] of malformed) {
    it(`refuses ${text}: ${message}`, () => {
      assert.strictEqual(problem(text), message)
    })
  }

  it("never repeats the password in a refusal", () => {
    for (const text of ["postgres://app:hunter2@h1:5432,h2:x/db", "postgres://app:hunter2/x@h1/db"]) {
      assert.notInclude(problem(text), "hunter2")
    }
  })
})
