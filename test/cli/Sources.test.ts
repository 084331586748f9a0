import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { Sources } from "../../backend/prospects/Sources.ts"
import { createClient } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

const env = isolatedEnv()

/** The migrated database the CLI works on, with `Auth` to make clients and `Sources` to check the CLI's work. */
const platform = Layer.mergeAll(Sources.layer, Auth.layer).pipe(
  Layer.provideMerge(PlatformLayer),
  Layer.provideMerge(isolationLayer(env)),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

/** `npm run cli -- ...` on this file's database, run in this process through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli(env, ...args)

interface Printed {
  readonly code: string
  readonly flow: string
  readonly optional_ingest_fields: boolean
  readonly redirect_domains: ReadonlyArray<string>
  readonly clients: ReadonlyArray<string>
}

const partnerClient = createClient({ gateway: "partner" }).pipe(Effect.map((c) => c.clientId))

/** Every source as stored, to tell that a refused command changed nothing. */
const sourcesSnapshot = Effect.flatMap(Effect.service(Sources), (sources) => sources.list).pipe(
  Effect.map((all) => JSON.stringify(all)),
)

describe("npm run cli -- sources", () => {
  layer(platform, { excludeTestServices: true })((it) => {
    it.effect("sources create prints the source as stored", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        const run = yield* cli(
          "sources",
          "create",
          "--code",
          "vero",
          "--flow",
          "expedited",
          "--optional-ingest-fields",
          "--redirect-domains",
          "vero.example.com,example.org",
          "--clients",
          clientId,
        )
        assert.strictEqual(run.code, 0, run.stderr)
        const printed = JSON.parse(run.stdout) as Printed
        assert.deepStrictEqual(printed, {
          code: "vero",
          flow: "expedited",
          optional_ingest_fields: true,
          redirect_domains: ["vero.example.com", "example.org"],
          clients: [clientId],
        })
        const stored = yield* Effect.flatMap(Effect.service(Sources), (sources) => sources.find("vero"))
        assert.deepStrictEqual(stored, {
          code: "vero",
          flow: "expedited",
          optionalIngestFields: true,
          redirectDomains: ["vero.example.com", "example.org"],
          clients: [clientId],
        })
      }),
    )

    it.effect("sources create run again updates the source; lists it omits are kept", () =>
      Effect.gen(function* () {
        const first = yield* partnerClient
        const second = yield* partnerClient
        const created = yield* cli(
          "sources",
          "create",
          "--code",
          "rerun",
          "--flow",
          "embedded",
          "--optional-ingest-fields",
          "--redirect-domains",
          "old.example.com",
          "--clients",
          first,
        )
        assert.strictEqual(created.code, 0, created.stderr)
        const updated = yield* cli(
          "sources",
          "create",
          "--code",
          "rerun",
          "--flow",
          "expedited",
          "--clients",
          `${first},${second}`,
        )
        assert.strictEqual(updated.code, 0, updated.stderr)
        assert.deepStrictEqual(JSON.parse(updated.stdout), {
          code: "rerun",
          flow: "expedited",
          optional_ingest_fields: false,
          redirect_domains: ["old.example.com"],
          clients: [first, second].sort(),
        })
        const emptied = yield* cli(
          "sources",
          "create",
          "--code",
          "rerun",
          "--flow",
          "expedited",
          "--redirect-domains",
          "",
        )
        assert.strictEqual(emptied.code, 0, emptied.stderr)
        assert.deepStrictEqual((JSON.parse(emptied.stdout) as Printed).redirect_domains, [])
      }),
    )

    it.effect("sources list prints every source", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        for (const [code, flow] of [
          ["listed-a", "embedded"],
          ["listed-b", "expedited"],
        ]) {
          const run = yield* cli("sources", "create", "--code", code!, "--flow", flow!, "--clients", clientId)
          assert.strictEqual(run.code, 0, run.stderr)
        }
        const run = yield* cli("sources", "list")
        assert.strictEqual(run.code, 0, run.stderr)
        const listed = JSON.parse(run.stdout) as Array<Printed>
        const mine = listed.filter((s) => s.code.startsWith("listed-"))
        assert.deepStrictEqual(mine, [
          {
            code: "listed-a",
            flow: "embedded",
            optional_ingest_fields: false,
            redirect_domains: [],
            clients: [clientId],
          },
          {
            code: "listed-b",
            flow: "expedited",
            optional_ingest_fields: false,
            redirect_domains: [],
            clients: [clientId],
          },
        ])
      }),
    )

    const badInput: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; message: RegExp }> = [
      {
        name: "an unknown client",
        args: ["sources", "create", "--code", "ghosted", "--flow", "embedded", "--clients", "cli_ghost"],
        message: /unknown clients: cli_ghost/,
      },
      {
        name: "a flow that is neither embedded nor expedited",
        args: ["sources", "create", "--code", "popup", "--flow", "popup"],
        message: /flow must be embedded or expedited, not 'popup'/,
      },
      {
        name: "an unknown option",
        args: ["sources", "create", "--code", "colour", "--flow", "embedded", "--colour", "red"],
        message: /Unknown option '--colour'/,
      },
      {
        name: "a missing --flow",
        args: ["sources", "create", "--code", "noflow"],
        message: /usage: sources create --code CODE --flow embedded\|expedited/,
      },
      {
        name: "an invalid code",
        args: ["sources", "create", "--code", "Vero", "--flow", "embedded"],
        message: /code 'Vero' must be 1-40 lowercase letters, digits, '-' or '_'/,
      },
      {
        name: "a redirect domain with a scheme",
        args: [
          "sources",
          "create",
          "--code",
          "schemed",
          "--flow",
          "expedited",
          "--redirect-domains",
          "https://example.com",
        ],
        message: /redirect domains must be lowercase hostnames .*: https:\/\/example\.com/,
      },
      {
        name: "an unknown sources command",
        args: ["sources", "delete", "vero"],
        message: /unknown sources command: delete/,
      },
    ]

    for (const { name, args, message } of badInput) {
      it.effect(`exits 2 with a clear message and changes nothing on ${name}`, () =>
        Effect.gen(function* () {
          const before = yield* sourcesSnapshot
          const run = yield* cli(...args)
          assert.strictEqual(run.code, 2, run.stderr)
          assert.match(run.stderr, message)
          assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
          assert.strictEqual(run.stdout.trim(), "")
          assert.strictEqual(yield* sourcesSnapshot, before)
        }),
      )
    }
  })
})
