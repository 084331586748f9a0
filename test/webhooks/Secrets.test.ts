import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { cliActor, parseDuration } from "../../backend/cli/Webhooks.ts"
import { validateCustomHeaders } from "../../backend/webhooks/endpoints/CustomHeaders.ts"
import { generateSecret, Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import { createOwner } from "../support/Auth.ts"
import { testPlatform } from "../support/TestPlatform.ts"
import { provisionProvider, query } from "../support/Webhooks.ts"

describe("signing secrets", () => {
  it("are whsec_ and the base64 of 32 random bytes", () => {
    const secrets = new Set(Array.from({ length: 100 }, generateSecret))
    assert.strictEqual(secrets.size, 100)
    for (const secret of secrets) {
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.strictEqual(Buffer.from(secret.slice("whsec_".length), "base64").length, 32)
    }
  })
})

describe("custom headers", () => {
  it("accepts header names and visible values", () => {
    assert.deepStrictEqual(validateCustomHeaders({ "X-Api-Key": "k 1", Authorization: "Bearer t" }), {
      headers: { "X-Api-Key": "k 1", Authorization: "Bearer t" },
    })
    assert.deepStrictEqual(validateCustomHeaders({}), { headers: {} })
  })

  const refused: ReadonlyArray<readonly [string, unknown, RegExp]> = [
    ["null", null, /must hold a JSON object/],
    ["a string", "X-Api-Key: k", /must hold a JSON object/],
    ["Content-Type in any case", { "CONTENT-TYPE": "x" }, /Content-Type cannot be set/],
    ["an X-Webhook-* name in any case", { "x-webhook-event": "x" }, /x-webhook-event cannot be set/],
    ["Content-Length", { "Content-Length": "5" }, /Content-Length cannot be set/],
    ["Transfer-Encoding", { "Transfer-Encoding": "chunked" }, /Transfer-Encoding cannot be set/],
    ["a name with a colon", { "X-A:": "x" }, /"X-A:" is not a valid header name/],
    ["an empty name", { "": "x" }, /"" is not a valid header name/],
    ["a name twice in different cases", { "X-Key": "a", "x-key": "b" }, /x-key is given twice/],
    ["an empty value", { "X-Key": "" }, /must be non-empty visible ASCII/],
    ["a value with surrounding spaces", { "X-Key": " a " }, /must be non-empty visible ASCII/],
    ["a value with a NUL", { "X-Key": "a\u0000b" }, /must be non-empty visible ASCII/],
    ["a value beyond ASCII", { "X-Key": "café" }, /must be non-empty visible ASCII/],
    ["a value too long", { "X-Key": "a".repeat(5000) }, /longer than 4096 characters/],
    ["a value that is no string", { "X-Key": ["a"] }, /must be a string/],
    [
      "too many headers",
      Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"])),
      /at most 20 headers, not 21/,
    ],
  ]
  for (const [name, input, message] of refused) {
    it(`refuses ${name}`, () => {
      const result = validateCustomHeaders(input)
      assert.isTrue("problems" in result, JSON.stringify(result))
      if ("problems" in result) assert.match(result.problems.join("; "), message)
    })
  }
})

describe("the CLI's durations and actor", () => {
  it("reads 90s, 30m, 24h and 2d, and nothing else", () => {
    assert.strictEqual(parseDuration("90s"), 90_000)
    assert.strictEqual(parseDuration("30m"), 1_800_000)
    assert.strictEqual(parseDuration("24h"), 86_400_000)
    assert.strictEqual(parseDuration("2d"), 172_800_000)
    assert.strictEqual(parseDuration("0h"), 0)
    for (const bad of ["", "24", "h", "1.5h", "-1h", "2w", "1h30m", "9999999d"]) {
      assert.isUndefined(parseDuration(bad), bad)
    }
  })

  it("names CLI_ACTOR when set, else the OS user", () => {
    const saved = process.env.CLI_ACTOR
    try {
      process.env.CLI_ACTOR = "on-call-bob"
      assert.strictEqual(cliActor(), "cli:on-call-bob")
      delete process.env.CLI_ACTOR
      assert.match(cliActor(), /^cli:.+/)
    } finally {
      if (saved === undefined) delete process.env.CLI_ACTOR
      else process.env.CLI_ACTOR = saved
    }
  })
})

const platform = testPlatform()

describe("the Secrets service", () => {
  layer(Secrets.layer.pipe(Layer.provideMerge(platform.layer)), { excludeTestServices: true })((it) => {
    it.effect("gives a provider its subscriber and one secret when provisioned, however often", () =>
      Effect.gen(function* () {
        yield* createOwner("svc-a")
        yield* provisionProvider("svc-co", { owners: ["svc-a"] })
        yield* provisionProvider("svc-co", { owners: ["svc-a"] })
        const secrets = yield* Secrets.use((s) => s.show({ kind: "provider", name: "svc-co" }, "cli:test"))
        assert.strictEqual(secrets.length, 1)
        const [audit] = yield* query(
          (sql) => sql<Array<{ actor: string; action: string }>>`
            select actor, action from audit_log where target = 'provider:svc-co' order by id desc limit 1`,
        )
        assert.deepStrictEqual(audit, { actor: "cli:test", action: "webhook_secrets.show" })
      }),
    )

    it.effect("refuses a provider that was never provisioned", () =>
      Effect.gen(function* () {
        const exit = yield* Secrets.use((s) =>
          s.rotate({ kind: "provider", name: "nobody" }, 0, "cli:test"),
        ).pipe(Effect.exit)
        assert.isTrue(Exit.isFailure(exit))
        assert.match(JSON.stringify(exit), /ProviderNotProvisioned/)
      }),
    )

    it.effect("keeps secrets sealed: the database never holds one in clear", () =>
      Effect.gen(function* () {
        yield* createOwner("svc-sealed")
        const rotated = yield* Secrets.use((s) =>
          s.rotate({ kind: "owner", slug: "svc-sealed" }, 0, "cli:test"),
        )
        const rows = yield* query(
          (sql) => sql<Array<{ secret_sealed: Buffer }>>`select secret_sealed from webhook_secrets`,
        )
        for (const row of rows) {
          assert.notInclude(row.secret_sealed.toString("latin1"), rotated.secret.slice(6, 20))
        }
      }),
    )
  })
})
