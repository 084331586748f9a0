import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { createOwner } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"
import { query } from "../support/Webhooks.ts"

const env = { ...isolatedEnv(), CLI_ACTOR: "provider-tests" }

/** A building of `slug` known by the partner's id `externalId`. */
const property = (slug: string, externalId: string) =>
  query(
    (sql) => sql`
      insert into properties (owner_id, external_system_id, building_name, street_key, street, city, state, zip)
      select id, ${externalId}, ${externalId}, '1 main st', '1 Main Street', 'Springfield', 'IL', '62701'
      from owners where slug = ${slug}`,
  )

/** The migrated database the CLI works on, with three owners and a building of the first. */
const platform = Layer.effectDiscard(
  Effect.gen(function* () {
    yield* Effect.all([createOwner("prov-a"), createOwner("prov-b"), createOwner("prov-c")])
    yield* property("prov-a", "bldg-1")
    yield* property("prov-b", "bldg-9")
  }),
).pipe(
  Layer.provideMerge(PlatformLayer),
  Layer.provideMerge(isolationLayer(env)),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

const cli = (...args: ReadonlyArray<string>) => runCli(env, ...args)

interface Printed {
  readonly provider: string
  readonly owners: ReadonlyArray<string>
  readonly properties: ReadonlyArray<string>
  readonly created_at: string
  readonly created?: boolean
}

const secretsOf = (provider: string) =>
  query(
    (sql) => sql<Array<{ expires_at: Date | null }>>`
      select w.expires_at from webhook_secrets w join webhook_subscribers s on s.id = w.subscriber_id
      join providers p on p.id = s.provider_id where p.name = ${provider}`,
  )

/** Everything the provider commands write, to tell that a refused command wrote nothing. */
const snapshot = query(
  (sql) => sql<Array<{ state: string }>>`
    select concat_ws('|',
      (select count(*) from providers), (select count(*) from provider_owners),
      (select count(*) from provider_properties), (select count(*) from webhook_subscribers),
      (select count(*) from webhook_secrets)) as state`,
).pipe(Effect.map(([row]) => row!.state))

describe("npm run cli -- providers", () => {
  layer(platform, { excludeTestServices: true })((it) => {
    it.effect(
      "providers create provisions the provider, its subscriber and first secret; rerunning replaces coverage",
      () =>
        Effect.gen(function* () {
          const created = yield* cli("providers", "create", "acme-co", "--owners", "prov-b,prov-a")
          assert.strictEqual(created.code, 0, created.stderr)
          const printed = JSON.parse(created.stdout) as Printed
          assert.deepStrictEqual(
            { ...printed, created_at: "" },
            {
              provider: "acme-co",
              owners: ["prov-a", "prov-b"],
              properties: [],
              created_at: "",
              created: true,
            },
          )
          assert.match(printed.created_at, /^\d{4}-\d{2}-\d{2}T/)
          assert.notInclude(created.stdout, "whsec_", "the secret is shown only by secrets show")
          const secrets = yield* secretsOf("acme-co")
          assert.strictEqual(secrets.length, 1)
          assert.isNull(secrets[0]!.expires_at)

          const narrowed = yield* cli("providers", "create", "acme-co", "--owners", "prov-c")
          assert.strictEqual(narrowed.code, 0, narrowed.stderr)
          assert.deepStrictEqual(JSON.parse(narrowed.stdout), {
            ...printed,
            owners: ["prov-c"],
            created: false,
          })

          const buildings = yield* cli(
            "providers",
            "create",
            "acme-co",
            "--properties",
            "prov-a/bldg-1,prov-b/bldg-9",
          )
          assert.strictEqual(buildings.code, 0, buildings.stderr)
          assert.deepStrictEqual(JSON.parse(buildings.stdout), {
            ...printed,
            owners: [],
            properties: ["prov-a/bldg-1", "prov-b/bldg-9"],
            created: false,
          })
          assert.strictEqual((yield* secretsOf("acme-co")).length, 1, "updating keeps the secret")

          const audit = yield* query(
            (sql) => sql<Array<{ actor: string; action: string }>>`
            select actor, action from audit_log where target = 'provider:acme-co' order by id`,
          )
          assert.deepStrictEqual(audit, [
            { actor: "cli:provider-tests", action: "providers.create" },
            { actor: "cli:provider-tests", action: "providers.update" },
            { actor: "cli:provider-tests", action: "providers.update" },
          ])
        }),
    )

    it.effect("providers list prints every provider with its coverage", () =>
      Effect.gen(function* () {
        for (const [name, owners] of [
          ["list-b", "prov-b"],
          ["list-a", "prov-a,prov-c"],
        ] as const) {
          const run = yield* cli("providers", "create", name, "--owners", owners)
          assert.strictEqual(run.code, 0, run.stderr)
        }
        const run = yield* cli("providers", "list")
        assert.strictEqual(run.code, 0, run.stderr)
        const listed = (JSON.parse(run.stdout) as Array<Printed>).filter((p) =>
          p.provider.startsWith("list-"),
        )
        assert.deepStrictEqual(
          listed.map(({ created_at: _, ...rest }) => rest),
          [
            { provider: "list-a", owners: ["prov-a", "prov-c"], properties: [] },
            { provider: "list-b", owners: ["prov-b"], properties: [] },
          ],
        )
      }),
    )

    const badInput: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; message: RegExp }> = [
      {
        name: "an unknown owner",
        args: ["providers", "create", "ghost-co", "--owners", "prov-a,ghost"],
        message: /unknown owner slugs: ghost/,
      },
      {
        name: "an unknown property",
        args: ["providers", "create", "ghost-co", "--properties", "prov-a/bldg-1,prov-a/nope,noslash"],
        message: /unknown properties \(OWNER_SLUG\/PROPERTY_EXTERNAL_ID\): prov-a\/nope, noslash/,
      },
      {
        name: "both kinds of coverage",
        args: ["providers", "create", "both-co", "--owners", "prov-a", "--properties", "prov-a/bldg-1"],
        message: /usage: providers create NAME --owners/,
      },
      {
        name: "no coverage",
        args: ["providers", "create", "bare-co"],
        message: /usage: providers create NAME --owners/,
      },
      {
        name: "an empty list",
        args: ["providers", "create", "bare-co", "--owners", ""],
        message: /the list must name at least one/,
      },
      {
        name: "no name",
        args: ["providers", "create", "--owners", "prov-a"],
        message: /usage: providers create NAME/,
      },
      {
        name: "a name that cannot be a path segment",
        args: ["providers", "create", "Acme Co", "--owners", "prov-a"],
        message: /provider name 'Acme Co' must be 1-63 lowercase letters, digits, '-' or '_'/,
      },
      {
        name: "an unknown providers command",
        args: ["providers", "delete", "acme-co"],
        message: /unknown providers command: delete/,
      },
    ]

    for (const { name, args, message } of badInput) {
      it.effect(`exits 2 with a clear message and writes nothing on ${name}`, () =>
        Effect.gen(function* () {
          const before = yield* snapshot
          const run = yield* cli(...args)
          assert.strictEqual(run.code, 2, run.stderr)
          assert.match(run.stderr, message)
          assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
          assert.strictEqual(run.stdout.trim(), "")
          assert.strictEqual(yield* snapshot, before)
        }),
      )
    }
  })
})
