import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import { Db } from "../../backend/platform/Db.ts"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { authEnv, createClient, createOwner } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { isolationLayer } from "../support/TestPlatform.ts"

const env = authEnv()
const OWNER = "cli-acme"
const OTHER_OWNER = "cli-other"

/** The migrated database the CLI works on, with two owners, and `Auth` to check what the CLI did. */
const platform = Layer.effectDiscard(Effect.all([createOwner(OWNER), createOwner(OTHER_OWNER)])).pipe(
  Layer.provideMerge(Auth.layer),
  Layer.provideMerge(PlatformLayer),
  Layer.provideMerge(isolationLayer(env)),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

/** `npm run cli -- ...` on this file's database, run in this process through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli(env, ...args)

interface Created {
  readonly client_id: string
  readonly client_secret: string
  readonly audience: string
  readonly token_url: string
}

interface Listed {
  readonly client_id: string
  readonly scopes: ReadonlyArray<string>
  readonly owners: ReadonlyArray<string>
  readonly revoked_at: string | null
}

const createWithCli = (name: string) =>
  Effect.gen(function* () {
    const run = yield* cli(
      "clients",
      "create",
      "--gateway",
      "partner",
      "--name",
      name,
      "--scopes",
      "prospects:read prospects:write",
      "--owners",
      OWNER,
    )
    assert.strictEqual(run.code, 0, run.stderr)
    return { ...run, created: JSON.parse(run.stdout) as Created }
  })

/** What `/token` would answer the client, asked directly of `Auth`. */
const issue = (clientId: string, clientSecret: string) =>
  Effect.flatMap(Effect.service(Auth), (auth) =>
    auth.issueToken("partner", {
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: clientSecret,
      audience: env.PARTNER_API_AUDIENCE!,
    }),
  )

/** Every client with its grants and state, to tell that a refused command changed nothing. */
const clientsSnapshot = Effect.flatMap(Effect.service(Auth), (auth) => auth.listClients).pipe(
  Effect.map((clients) => JSON.stringify(clients)),
)

const activeKid = Effect.flatMap(Effect.service(Db), (db) =>
  db.query((sql) => sql<Array<{ kid: string }>>`select kid from signing_keys where retired_at is null`),
).pipe(Effect.map((rows) => rows.map((r) => r.kid)))

describe("npm run cli -- clients / keys", () => {
  layer(platform, { excludeTestServices: true })((it) => {
    it.effect("clients create prints exactly client_id, client_secret, audience and token_url", () =>
      Effect.gen(function* () {
        const { created, stderr } = yield* createWithCli("Acme PMS")
        assert.sameMembers(Object.keys(created), ["client_id", "client_secret", "audience", "token_url"])
        assert.match(created.client_id, /^cli_/)
        assert.strictEqual(created.audience, env.PARTNER_API_AUDIENCE)
        assert.strictEqual(created.token_url, `${env.PUBLIC_BASE_URL}/token`)
        assert.notInclude(stderr, created.client_secret)
        const token = yield* issue(created.client_id, created.client_secret)
        assert.strictEqual(token.scope, "prospects:read prospects:write")
      }),
    )

    it.effect("clients list shows each client with its scopes and owners, and no secret", () =>
      Effect.gen(function* () {
        const { created } = yield* createWithCli("Listed PMS")
        const run = yield* cli("clients", "list")
        assert.strictEqual(run.code, 0, run.stderr)
        const listed = JSON.parse(run.stdout) as Array<Listed & Record<string, unknown>>
        const entry = listed.find((c) => c.client_id === created.client_id)
        assert.isDefined(entry)
        assert.deepStrictEqual(entry!.scopes, ["prospects:read", "prospects:write"])
        assert.deepStrictEqual(entry!.owners, [OWNER])
        assert.isNull(entry!.revoked_at)
        for (const client of listed) {
          assert.isFalse(
            Object.keys(client).some((key) => /secret|hash/i.test(key)),
            Object.keys(client).join(),
          )
        }
        assert.notInclude(run.stdout, created.client_secret)
        assert.notInclude(run.stdout, "scrypt$")
      }),
    )

    it.effect("clients grant ID --owners adds an owner to the client's grants", () =>
      Effect.gen(function* () {
        const { clientId } = yield* createClient({ gateway: "partner", owners: [OWNER] })
        const run = yield* cli("clients", "grant", clientId, "--owners", OTHER_OWNER)
        assert.strictEqual(run.code, 0, run.stderr)
        assert.deepStrictEqual(JSON.parse(run.stdout), { client_id: clientId, granted_owners: [OTHER_OWNER] })
        const client = (yield* (yield* Auth).listClients).find((c) => c.id === clientId)
        assert.deepStrictEqual(client?.owners, [OWNER, OTHER_OWNER])
      }),
    )

    it.effect("clients revoke ID makes the token endpoint refuse the client", () =>
      Effect.gen(function* () {
        const client = yield* createClient({ gateway: "partner", owners: [OWNER] })
        yield* issue(client.clientId, client.clientSecret)
        const run = yield* cli("clients", "revoke", client.clientId)
        assert.strictEqual(run.code, 0, run.stderr)
        const refused = yield* Effect.flip(issue(client.clientId, client.clientSecret))
        assert.strictEqual(refused._tag, "InvalidClient")
      }),
    )

    const badInput: ReadonlyArray<{
      readonly name: string
      readonly args: Array<string>
      readonly message: RegExp
    }> = [
      {
        name: "an unknown scope",
        args: [
          "clients",
          "create",
          "--gateway",
          "partner",
          "--name",
          "N",
          "--scopes",
          "prospects:read nope:nope",
        ],
        message: /scopes not available on the partner gateway: nope:nope/,
      },
      {
        name: "an empty scope list",
        args: ["clients", "create", "--gateway", "partner", "--name", "N", "--scopes", ""],
        message: /a client needs at least one scope/,
      },
      {
        name: "a scope of the other gateway",
        args: ["clients", "create", "--gateway", "ingest", "--name", "N", "--scopes", "prospects:read"],
        message: /scopes not available on the ingest gateway: prospects:read/,
      },
      {
        name: "an unknown owner slug",
        args: ["clients", "create", "--gateway", "partner", "--name", "N", "--owners", `${OWNER},ghost`],
        message: /unknown owner slugs: ghost/,
      },
      {
        name: "a missing --gateway",
        args: ["clients", "create", "--name", "N"],
        message: /usage: clients create --gateway partner\|ingest --name NAME/,
      },
      {
        name: "an unknown option",
        args: ["clients", "create", "--gateway", "partner", "--name", "N", "--colour", "red"],
        message: /Unknown option '--colour'/,
      },
      {
        name: "a grant of an unknown owner slug",
        args: ["clients", "grant", "cli_no_such_client", "--owners", "ghost"],
        message: /unknown owner slugs: ghost/,
      },
      {
        name: "a grant to an unknown client",
        args: ["clients", "grant", "cli_no_such_client", "--owners", OWNER],
        message: /no client cli_no_such_client/,
      },
      {
        name: "a revoke of an unknown client",
        args: ["clients", "revoke", "cli_no_such_client"],
        message: /no active client cli_no_such_client/,
      },
    ]

    for (const { name, args, message } of badInput) {
      it.effect(`exits 2 with a clear message and changes nothing on ${name}`, () =>
        Effect.gen(function* () {
          const before = yield* clientsSnapshot
          const run = yield* cli(...args)
          assert.strictEqual(run.code, 2, run.stderr)
          assert.match(run.stderr, message)
          assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
          assert.strictEqual(run.stdout.trim(), "")
          assert.strictEqual(yield* clientsSnapshot, before)
        }),
      )
    }

    it.effect("keys rotate prints the kid of a new signing key and retires the previous one", () =>
      Effect.gen(function* () {
        const [before] = yield* activeKid
        const run = yield* cli("keys", "rotate")
        assert.strictEqual(run.code, 0, run.stderr)
        const { kid } = JSON.parse(run.stdout) as { kid: string }
        assert.isString(kid)
        assert.notStrictEqual(kid, before)
        assert.deepStrictEqual(yield* activeKid, [kid])
      }),
    )
  })
})
