import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import { createOwner } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"
import { provisionProvider, query } from "../support/Webhooks.ts"

const env = { ...isolatedEnv(), CLI_ACTOR: "alice" }

const OWNERS = ["sec-a", "sec-b", "sec-c", "sec-new", "hdr-a", "hdr-new"] as const

/** The migrated database the CLI works on, with owners and a provisioned provider; Crypto to open secrets. */
const platform = Layer.effectDiscard(
  Effect.gen(function* () {
    for (const slug of OWNERS) yield* createOwner(slug)
    yield* provisionProvider("sec-co", { owners: ["sec-a"] })
  }),
).pipe(
  Layer.provideMerge(Layer.mergeAll(Crypto.layer, Secrets.layer)),
  Layer.provideMerge(PlatformLayer),
  Layer.provideMerge(isolationLayer(env)),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

const cli = (...args: ReadonlyArray<string>) => runCli(env, ...args)

interface PrintedSecret {
  readonly secret: string
  readonly created_at: string
  readonly expires_at: string | null
}

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

/** The owner's subscriber with its first secret, as its first endpoint makes them. */
const firstEndpointOf = (slug: string) =>
  Secrets.use((secrets) => secrets.subscriber({ kind: "owner", slug }, true)).pipe(Effect.orDie)

const show = (...target: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const run = yield* cli("secrets", "show", ...target)
    assert.strictEqual(run.code, 0, run.stderr)
    return (JSON.parse(run.stdout) as { secrets: Array<PrintedSecret> }).secrets
  })

const auditOf = (target: string) =>
  query(
    (sql) => sql<Array<{ actor: string; action: string; details: Record<string, unknown> }>>`
      select actor, action, details from audit_log where target = ${target} order by id`,
  )

const dir = mkdtempSync(join(tmpdir(), "webhook-headers-"))
const file = (name: string, content: string) => {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}

const storedHeaders = (slug: string) =>
  query(
    (sql) => sql<Array<{ custom_headers: Record<string, string> }>>`
      select s.custom_headers from webhook_subscribers s join owners o on o.id = s.owner_id where o.slug = ${slug}`,
  ).pipe(Effect.map(([row]) => row?.custom_headers))

describe("npm run cli -- secrets", () => {
  layer(platform, { excludeTestServices: true })((it) => {
    it.effect("secrets show prints the owner's secret as sealed in the database, and is audited", () =>
      Effect.gen(function* () {
        yield* firstEndpointOf("sec-a")
        const secrets = yield* show("--owner", "sec-a")
        assert.strictEqual(secrets.length, 1)
        assert.match(secrets[0]!.secret, SECRET)
        assert.isNull(secrets[0]!.expires_at)
        const [stored] = yield* query(
          (sql) => sql<Array<{ secret_sealed: Buffer; created_at: Date }>>`
            select w.secret_sealed, w.created_at from webhook_secrets w
            join webhook_subscribers s on s.id = w.subscriber_id join owners o on o.id = s.owner_id
            where o.slug = 'sec-a'`,
        )
        const opened = yield* Effect.flatMap(Effect.service(Crypto), (crypto) =>
          crypto.open(stored!.secret_sealed),
        )
        assert.strictEqual(
          opened.toString("utf8"),
          secrets[0]!.secret,
          "the HMAC key is the string's UTF-8 bytes",
        )
        assert.strictEqual(secrets[0]!.created_at, stored!.created_at.toISOString())

        const audit = yield* auditOf("owner:sec-a")
        assert.deepStrictEqual(
          [...audit],
          [{ actor: "cli:alice", action: "webhook_secrets.show", details: { secrets_shown: 1 } }],
        )
        assert.notInclude(JSON.stringify(audit), "whsec_")

        const provider = yield* show("--provider", "sec-co")
        assert.strictEqual(provider.length, 1)
        assert.notStrictEqual(provider[0]!.secret, secrets[0]!.secret, "one secret per subscriber")
      }),
    )

    it.effect(
      "secrets rotate prints a new secret; the older ones stay valid for the overlap, newest first",
      () =>
        Effect.gen(function* () {
          yield* firstEndpointOf("sec-b")
          const [original] = yield* show("--owner", "sec-b")
          const rotated = yield* cli("secrets", "rotate", "--owner", "sec-b", "--overlap", "2h")
          assert.strictEqual(rotated.code, 0, rotated.stderr)
          const fresh = JSON.parse(rotated.stdout) as PrintedSecret & { previous_secrets_expire_at: string }
          assert.match(fresh.secret, SECRET)
          assert.isNull(fresh.expires_at)
          const overlapEnds = Date.parse(fresh.previous_secrets_expire_at) - Date.parse(fresh.created_at)
          assert.approximately(overlapEnds, 2 * 3600_000, 60_000)

          const both = yield* show("--owner", "sec-b")
          assert.deepStrictEqual(
            both.map((s) => s.secret),
            [fresh.secret, original!.secret],
            "newest first",
          )
          assert.strictEqual(both[1]!.expires_at, fresh.previous_secrets_expire_at)

          // A later rotation with a shorter overlap shortens the expiry already set.
          const originalExpiry = both[1]!.expires_at!
          const again = yield* cli("secrets", "rotate", "--owner", "sec-b", "--overlap", "30m")
          assert.strictEqual(again.code, 0, again.stderr)
          const third = JSON.parse(again.stdout) as PrintedSecret & { previous_secrets_expire_at: string }
          const three = yield* show("--owner", "sec-b")
          assert.deepStrictEqual(
            three.map((s) => s.secret),
            [third.secret, fresh.secret, original!.secret],
          )
          const shortened = third.previous_secrets_expire_at
          assert.isBelow(Date.parse(shortened), Date.parse(originalExpiry))
          assert.approximately(Date.parse(shortened) - Date.parse(third.created_at), 30 * 60_000, 60_000)
          assert.deepStrictEqual(
            three.map((s) => s.expires_at),
            [null, shortened, shortened],
          )

          // A later rotation with a longer overlap never lengthens it: only the newest older secret gets the 3 h.
          const longer = yield* cli("secrets", "rotate", "--owner", "sec-b", "--overlap", "3h")
          assert.strictEqual(longer.code, 0, longer.stderr)
          const fourth = JSON.parse(longer.stdout) as PrintedSecret & { previous_secrets_expire_at: string }
          assert.approximately(
            Date.parse(fourth.previous_secrets_expire_at) - Date.parse(fourth.created_at),
            3 * 3600_000,
            60_000,
          )
          const four = yield* show("--owner", "sec-b")
          assert.deepStrictEqual(
            four.map((s) => [s.secret, s.expires_at]),
            [
              [fourth.secret, null],
              [third.secret, fourth.previous_secrets_expire_at],
              [fresh.secret, shortened],
              [original!.secret, shortened],
            ],
          )

          const cut = yield* cli("secrets", "rotate", "--owner", "sec-b", "--overlap", "0s")
          assert.strictEqual(cut.code, 0, cut.stderr)
          const last = JSON.parse(cut.stdout) as PrintedSecret
          assert.deepStrictEqual(
            (yield* show("--owner", "sec-b")).map((s) => s.secret),
            [last.secret],
            "an overlap of 0 ends the older secrets now",
          )

          const audit = yield* auditOf("owner:sec-b")
          assert.deepStrictEqual(
            audit.filter((a) => a.action === "webhook_secrets.rotate").map((a) => a.details),
            [
              { overlap_seconds: 7200, previous_secrets: 1 },
              { overlap_seconds: 1800, previous_secrets: 2 },
              { overlap_seconds: 10800, previous_secrets: 3 },
              { overlap_seconds: 0, previous_secrets: 4 },
            ],
          )
          assert.isTrue(audit.every((a) => a.actor === "cli:alice"))
        }),
    )

    it.effect("secrets rotate overlaps 24 hours by default, and issues an owner's first secret", () =>
      Effect.gen(function* () {
        const none = yield* cli("secrets", "show", "--owner", "sec-new")
        assert.strictEqual(none.code, 2)
        assert.match(none.stderr, /owner:sec-new has no signing secret yet/)
        const first = yield* cli("secrets", "rotate", "--owner", "sec-new")
        assert.strictEqual(first.code, 0, first.stderr)
        assert.isNull(
          (JSON.parse(first.stdout) as { previous_secrets_expire_at: null }).previous_secrets_expire_at,
        )
        const second = yield* cli("secrets", "rotate", "--owner", "sec-new")
        const printed = JSON.parse(second.stdout) as PrintedSecret & { previous_secrets_expire_at: string }
        assert.approximately(
          Date.parse(printed.previous_secrets_expire_at) - Date.parse(printed.created_at),
          24 * 3600_000,
          60_000,
        )
      }),
    )

    const badSecrets: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; message: RegExp }> = [
      {
        name: "no target",
        args: ["secrets", "show"],
        message: /usage: secrets show --owner SLUG\|--provider NAME/,
      },
      {
        name: "two targets",
        args: ["secrets", "rotate", "--owner", "sec-c", "--provider", "sec-co"],
        message: /usage: secrets rotate/,
      },
      {
        name: "an overlap that is no duration",
        args: ["secrets", "rotate", "--owner", "sec-c", "--overlap", "2w"],
        message: /--overlap takes a duration such as 30m, 24h or 2d, not '2w'/,
      },
      {
        name: "an overlap beyond 30 days",
        args: ["secrets", "rotate", "--owner", "sec-c", "--overlap", "31d"],
        message: /the overlap must be between 0 and 30 days/,
      },
      { name: "an unknown owner", args: ["secrets", "show", "--owner", "ghost"], message: /no owner ghost/ },
      {
        name: "a provider not provisioned",
        args: ["secrets", "rotate", "--provider", "ghost-co"],
        message: /provider ghost-co is not provisioned/,
      },
    ]
    for (const { name, args, message } of badSecrets) {
      it.effect(`secrets exits 2 with a clear message on ${name}`, () =>
        Effect.gen(function* () {
          const run = yield* cli(...args)
          assert.strictEqual(run.code, 2, run.stderr)
          assert.match(run.stderr, message)
          assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
          assert.strictEqual(run.stdout.trim(), "")
        }),
      )
    }

    it.effect(
      "webhooks headers set stores the operator's headers and show prints them, each showing audited",
      () =>
        Effect.gen(function* () {
          const headers = { "X-Api-Key": "k-123", Authorization: "Bearer partner-token" }
          const set = yield* cli(
            "webhooks",
            "headers",
            "set",
            "--owner",
            "hdr-new",
            "--file",
            file("ok.json", JSON.stringify(headers)),
          )
          assert.strictEqual(set.code, 0, set.stderr)
          assert.deepStrictEqual(JSON.parse(set.stdout), { headers })
          assert.deepStrictEqual(
            yield* storedHeaders("hdr-new"),
            headers,
            "the owner's subscriber is made for them",
          )
          const shown = yield* cli("webhooks", "headers", "show", "--owner", "hdr-new")
          assert.deepStrictEqual(JSON.parse(shown.stdout), { headers })
          const replaced = yield* cli(
            "webhooks",
            "headers",
            "set",
            "--owner",
            "hdr-new",
            "--file",
            file("empty.json", "{}"),
          )
          assert.strictEqual(replaced.code, 0, replaced.stderr)
          assert.deepStrictEqual(yield* storedHeaders("hdr-new"), {})
          const provider = yield* cli("webhooks", "headers", "show", "--provider", "sec-co")
          assert.deepStrictEqual(JSON.parse(provider.stdout), { headers: {} })
          const audit = yield* auditOf("owner:hdr-new")
          assert.deepStrictEqual(
            audit.map((a) => [a.actor, a.action, a.details]),
            [
              ["cli:alice", "webhook_headers.set", { names: ["X-Api-Key", "Authorization"] }],
              ["cli:alice", "webhook_headers.show", { names: ["X-Api-Key", "Authorization"] }],
              ["cli:alice", "webhook_headers.set", { names: [] }],
            ],
            "names only: values may be credentials",
          )
          assert.deepStrictEqual(
            (yield* auditOf("provider:sec-co")).filter((a) => a.action.startsWith("webhook_headers")),
            [{ actor: "cli:alice", action: "webhook_headers.show", details: { names: [] } }],
          )
        }),
    )

    const badHeaders: ReadonlyArray<{ name: string; content: string; message: RegExp }> = [
      {
        name: "Content-Type",
        content: '{"content-type": "text/plain"}',
        message: /Content-Type cannot be set: deliveries are always application\/json/,
      },
      {
        name: "an X-Webhook-* header and a transport header",
        content: '{"X-Webhook-Signature": "t=1,v1=00", "Host": "evil.example"}',
        message:
          /X-Webhook-Signature cannot be set: X-Webhook-\* headers are the service's own; Host cannot be set/,
      },
      {
        name: "an invalid name and a value with a line break",
        content: '{"Bad Name": "x", "X-Ok": "a\\r\\nInjected: 1"}',
        message: /"Bad Name" is not a valid header name; the value of "X-Ok" must be non-empty visible ASCII/,
      },
      {
        name: "a value that is not a string",
        content: '{"X-Count": 5}',
        message: /the value of "X-Count" must be a string/,
      },
      {
        name: "an array",
        content: '[["X-Api-Key", "k"]]',
        message: /the headers file must hold a JSON object/,
      },
      { name: "a file that is not JSON", content: "X-Api-Key: k", message: /is not valid JSON/ },
    ]
    for (const { name, content, message } of badHeaders) {
      it.effect(`webhooks headers set refuses ${name} and keeps the stored headers`, () =>
        Effect.gen(function* () {
          yield* Secrets.use((secrets) =>
            secrets.setHeaders(
              { kind: "owner", slug: "hdr-a" },
              { headers: { "X-Kept": "1" }, problems: [] },
              "test",
            ),
          ).pipe(Effect.orDie)
          const path = file(`${name.replace(/\W+/g, "-")}.json`, content)
          const run = yield* cli("webhooks", "headers", "set", "--owner", "hdr-a", "--file", path)
          assert.strictEqual(run.code, 2, run.stderr)
          assert.match(run.stderr, message)
          assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
          assert.deepStrictEqual(yield* storedHeaders("hdr-a"), { "X-Kept": "1" })
        }),
      )
    }

    it.effect("webhooks headers set names a file it cannot read", () =>
      Effect.gen(function* () {
        const run = yield* cli(
          "webhooks",
          "headers",
          "set",
          "--owner",
          "hdr-a",
          "--file",
          join(dir, "missing.json"),
        )
        assert.strictEqual(run.code, 2, run.stderr)
        assert.match(run.stderr, /cannot read .*missing\.json/)
      }),
    )
  })
})
