import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { verifySecret } from "../../backend/platform/Crypto.ts"
import { runCli } from "../support/Cli.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"
import { query } from "../support/Webhooks.ts"

const env = { ...isolatedEnv(), CLI_ACTOR: "alice" }
const platform = PlatformLayer.pipe(
  Layer.provideMerge(isolationLayer(env)),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
)
const cli = (...args: ReadonlyArray<string>) => runCli(env, ...args)

const stored = (email: string) =>
  query(
    (sql) => sql<Array<{ role: string; disabled: boolean; password_hash: string }>>`
      select role, disabled, password_hash from operators where lower(email) = lower(${email})`,
  ).pipe(Effect.map(([row]) => row))

const auditOf = (target: string) =>
  query(
    (sql) => sql<Array<{ actor: string; channel: string; action: string; before: unknown; after: unknown }>>`
      select actor, channel, action, before, after from audit_log where target = ${target} order by id`,
  )

describe("npm run cli -- operators", () => {
  layer(platform, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("create prints a generated password once, stored only as a slow hash", () =>
      Effect.gen(function* () {
        const run = yield* cli("operators", "create", "--email", "ops@example.com", "--role", "operator")
        assert.strictEqual(run.code, 0, run.stderr)
        const printed = JSON.parse(run.stdout) as { email: string; role: string; password: string }
        assert.deepStrictEqual(Object.keys(printed), ["email", "role", "password"])
        assert.strictEqual(printed.role, "operator")
        assert.isAtLeast(printed.password.length, 20)
        const row = (yield* stored("ops@example.com"))!
        assert.match(row.password_hash, /^scrypt\$/)
        assert.notInclude(row.password_hash, printed.password)
        assert.isTrue(yield* verifySecret(printed.password, row.password_hash))
        assert.notInclude(run.stderr, printed.password)
        const [entry] = yield* auditOf("operator:ops@example.com")
        assert.deepStrictEqual(entry, {
          actor: "cli:alice",
          channel: "cli",
          action: "operators.create",
          before: null,
          after: { email: "ops@example.com", role: "operator", disabled: false },
        })
      }),
    )

    it.effect("create refuses an email that is not an address with a clear message, storing nothing", () =>
      Effect.gen(function* () {
        for (const email of [
          "<img src=x onerror=alert(1)>@example.com",
          "ops@localhost",
          "two words@example.com",
        ]) {
          const run = yield* cli("operators", "create", "--email", email, "--role", "viewer")
          assert.strictEqual(run.code, 2, run.stdout)
          assert.include(run.stderr, "email must be an address such as name@example.com")
          assert.strictEqual(run.stdout, "")
          assert.isUndefined(yield* stored(email))
        }
        const disable = yield* cli("operators", "disable", "--email", "<b>x</b>@example.com")
        assert.strictEqual(disable.code, 2)
        assert.include(disable.stderr, "email must be an address")
      }),
    )

    it.effect("create with --password prints no password and refuses one under 12 characters", () =>
      Effect.gen(function* () {
        const short = yield* cli(
          "operators",
          "create",
          "--email",
          "v@example.com",
          "--role",
          "viewer",
          "--password",
          "short-11chr",
        )
        assert.strictEqual(short.code, 2)
        assert.include(short.stderr, "password must be 12")
        assert.isUndefined(yield* stored("v@example.com"))
        const run = yield* cli(
          "operators",
          "create",
          "--email",
          "v@example.com",
          "--role",
          "viewer",
          "--password",
          "twelve-chars",
        )
        assert.strictEqual(run.code, 0, run.stderr)
        assert.deepStrictEqual(JSON.parse(run.stdout), { email: "v@example.com", role: "viewer" })
        assert.isTrue(yield* verifySecret("twelve-chars", (yield* stored("v@example.com"))!.password_hash))
      }),
    )

    it.effect("refuses a second operator with the same email in another case, a bad email or role", () =>
      Effect.gen(function* () {
        assert.strictEqual(
          (yield* cli("operators", "create", "--email", "dup@example.com", "--role", "admin")).code,
          0,
        )
        const again = yield* cli("operators", "create", "--email", "DUP@example.com", "--role", "viewer")
        assert.strictEqual(again.code, 2)
        assert.include(again.stderr, "already exists")
        assert.strictEqual(
          (yield* cli("operators", "create", "--email", "not-an-email", "--role", "viewer")).code,
          2,
        )
        assert.strictEqual(
          (yield* cli("operators", "create", "--email", "x@example.com", "--role", "root")).code,
          2,
        )
      }),
    )

    it.effect("list, set-role and disable, each change audited with before and after", () =>
      Effect.gen(function* () {
        assert.strictEqual(
          (yield* cli("operators", "create", "--email", "lee@example.com", "--role", "viewer")).code,
          0,
        )
        const role = yield* cli("operators", "set-role", "--email", "Lee@example.com", "--role", "admin")
        assert.strictEqual(role.code, 0, role.stderr)
        assert.strictEqual(JSON.parse(role.stdout).role, "admin")
        const disable = yield* cli("operators", "disable", "--email", "lee@example.com")
        assert.strictEqual(disable.code, 0, disable.stderr)
        assert.isTrue(JSON.parse(disable.stdout).disabled)
        const list = yield* cli("operators", "list")
        const lee = (JSON.parse(list.stdout).operators as Array<Record<string, unknown>>).find(
          (o) => o.email === "lee@example.com",
        )!
        assert.deepStrictEqual(Object.keys(lee).sort(), [
          "created_at",
          "disabled",
          "email",
          "last_sign_in_at",
          "role",
        ])
        assert.deepInclude(lee, { role: "admin", disabled: true, last_sign_in_at: null })
        assert.notInclude(list.stdout, "scrypt")
        const entries = yield* auditOf("operator:lee@example.com")
        assert.deepStrictEqual(
          entries.map((e) => [e.action, e.before, e.after]),
          [
            ["operators.create", null, { email: "lee@example.com", role: "viewer", disabled: false }],
            [
              "operators.set_role",
              { email: "lee@example.com", role: "viewer", disabled: false },
              { email: "lee@example.com", role: "admin", disabled: false },
            ],
            [
              "operators.disable",
              { email: "lee@example.com", role: "admin", disabled: false },
              { email: "lee@example.com", role: "admin", disabled: true },
            ],
          ],
        )
        const missing = yield* cli("operators", "disable", "--email", "ghost@example.com")
        assert.strictEqual(missing.code, 2)
        assert.include(missing.stderr, "no operator ghost@example.com")
      }),
    )

    it.effect("records the state-changing commands whose services audit nothing themselves", () =>
      Effect.gen(function* () {
        const run = yield* cli("clients", "create", "--gateway", "partner", "--name", "audited-client")
        assert.strictEqual(run.code, 0, run.stderr)
        const [entry] = yield* auditOf("client:audited-client")
        assert.strictEqual(entry?.actor, "cli:alice")
        assert.strictEqual(entry?.channel, "cli")
        assert.strictEqual(entry?.action, "clients.create")
        assert.deepInclude((entry?.after as { options: object }).options, {
          gateway: "partner",
          name: "audited-client",
        })
        // Its secret is printed once and never recorded.
        const secret = JSON.parse(run.stdout).client_secret as string
        assert.notInclude(JSON.stringify(entry), secret)
        // A refused command records nothing.
        assert.strictEqual((yield* cli("clients", "revoke", "no-such-client")).code, 2)
        assert.strictEqual((yield* auditOf("client:no-such-client")).length, 0)
      }),
    )
  })
})
