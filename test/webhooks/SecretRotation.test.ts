import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { MAX_OVERLAP_MS } from "../../backend/webhooks/Domain.ts"
import { Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import { createOwner } from "../support/Auth.ts"
import { testPlatform } from "../support/TestPlatform.ts"
import { query } from "../support/Webhooks.ts"

const platform = testPlatform()
const HOUR_MS = 3_600_000

const owner = (slug: string) => ({ kind: "owner" as const, slug })

/**
 * The owner's secrets in the database, oldest first: whether each is active, and how long after the next one was
 * made (by the rotation that set its expiry, in the same transaction) it expires.
 */
const storedSecrets = (slug: string) =>
  query(
    (sql) => sql<Array<{ active: boolean; expires_in_s: number | null; expires_at: Date | null }>>`
      select (s.expires_at is null or s.expires_at > now()) as active,
             extract(epoch from s.expires_at - lead(s.created_at) over (order by s.created_at, s.id))::float8
               as expires_in_s,
             s.expires_at
      from webhook_secrets s
      join webhook_subscribers ws on ws.id = s.subscriber_id
      join owners o on o.id = ws.owner_id
      where o.slug = ${slug}
      order by s.created_at, s.id`,
  )

const lastRotation = (slug: string) =>
  query(
    (sql) => sql<Array<{ actor: string; details: unknown; after: unknown }>>`
      select actor, details, after from audit_log
      where action = 'webhook_secrets.rotate' and target = ${`owner:${slug}`} order by id desc limit 1`,
  ).pipe(Effect.map(([row]) => row))

describe("rotating an owner's signing secret", () => {
  layer(Secrets.layer.pipe(Layer.provideMerge(platform.layer)), { excludeTestServices: true })((it) => {
    it.effect("makes an owner's first secret, with nothing to expire, and audits it", () =>
      Effect.gen(function* () {
        yield* createOwner("rot-first")
        const rotated = yield* Secrets.use((s) => s.rotate(owner("rot-first"), HOUR_MS, "cli:first"))
        assert.match(rotated.secret, /^whsec_/)
        assert.isNull(rotated.expires_at)
        assert.isNull(rotated.previous_secrets_expire_at)
        const stored = yield* storedSecrets("rot-first")
        assert.deepStrictEqual(
          stored.map((s) => s.active),
          [true],
        )
        const shown = yield* Secrets.use((s) => s.show(owner("rot-first"), "cli:first"))
        assert.deepStrictEqual(
          shown.map((s) => s.secret),
          [rotated.secret],
        )
        assert.deepStrictEqual(yield* lastRotation("rot-first"), {
          actor: "cli:first",
          details: { overlap_seconds: 3600, previous_secrets: 0 },
          after: { overlap_seconds: 3600, previous_secrets: 0 },
        })
      }),
    )

    it.effect("keeps the older secret active for the overlap, newest first, and says when it expires", () =>
      Effect.gen(function* () {
        yield* createOwner("rot-overlap")
        const first = yield* Secrets.use((s) => s.rotate(owner("rot-overlap"), 0, "cli:test"))
        const second = yield* Secrets.use((s) => s.rotate(owner("rot-overlap"), 2 * HOUR_MS, "cli:test"))
        assert.notStrictEqual(second.secret, first.secret)
        assert.isNull(second.expires_at)
        const shown = yield* Secrets.use((s) => s.show(owner("rot-overlap"), "cli:test"))
        assert.deepStrictEqual(
          shown.map((s) => s.secret),
          [second.secret, first.secret],
        )
        const [older, newer] = yield* storedSecrets("rot-overlap")
        assert.strictEqual(older!.expires_in_s, 7200)
        assert.isNull(newer!.expires_at)
        assert.strictEqual(second.previous_secrets_expire_at, older!.expires_at!.toISOString())
        assert.deepStrictEqual(yield* lastRotation("rot-overlap"), {
          actor: "cli:test",
          details: { overlap_seconds: 7200, previous_secrets: 1 },
          after: { overlap_seconds: 7200, previous_secrets: 1 },
        })
      }),
    )

    it.effect("never lengthens an older secret's life, and reports the latest expiry of those expiring", () =>
      Effect.gen(function* () {
        yield* createOwner("rot-shorter")
        yield* Secrets.use((s) => s.rotate(owner("rot-shorter"), 0, "cli:test"))
        yield* Secrets.use((s) => s.rotate(owner("rot-shorter"), HOUR_MS, "cli:test"))
        const third = yield* Secrets.use((s) => s.rotate(owner("rot-shorter"), 3 * HOUR_MS, "cli:test"))
        const stored = yield* storedSecrets("rot-shorter")
        assert.deepStrictEqual(
          stored.map((s) => s.expires_in_s),
          [3600, 10800, null],
        )
        assert.strictEqual(third.previous_secrets_expire_at, stored[1]!.expires_at!.toISOString())
        assert.deepStrictEqual((yield* lastRotation("rot-shorter"))!.details, {
          overlap_seconds: 10800,
          previous_secrets: 2,
        })
      }),
    )

    it.effect("with no overlap, leaves the new secret the only active one", () =>
      Effect.gen(function* () {
        yield* createOwner("rot-now")
        yield* Secrets.use((s) => s.rotate(owner("rot-now"), 0, "cli:test"))
        const second = yield* Secrets.use((s) => s.rotate(owner("rot-now"), 0, "cli:test"))
        const shown = yield* Secrets.use((s) => s.show(owner("rot-now"), "cli:test"))
        assert.deepStrictEqual(
          shown.map((s) => s.secret),
          [second.secret],
        )
        assert.deepStrictEqual(
          (yield* storedSecrets("rot-now")).map((s) => s.active),
          [false, true],
        )
      }),
    )

    it.effect("takes an overlap of whole milliseconds from none to 30 days, and refuses any other", () =>
      Effect.gen(function* () {
        yield* createOwner("rot-bounds")
        for (const overlapMs of [-1, 1.5, MAX_OVERLAP_MS + 1, Number.NaN]) {
          const exit = yield* Secrets.use((s) => s.rotate(owner("rot-bounds"), overlapMs, "cli:test")).pipe(
            Effect.exit,
          )
          assert.isTrue(Exit.isFailure(exit), String(overlapMs))
          assert.match(JSON.stringify(exit), /the overlap must be between 0 and 30 days/, String(overlapMs))
        }
        assert.lengthOf(yield* storedSecrets("rot-bounds"), 0)
        yield* Secrets.use((s) => s.rotate(owner("rot-bounds"), 0, "cli:test"))
        const longest = yield* Secrets.use((s) => s.rotate(owner("rot-bounds"), MAX_OVERLAP_MS, "cli:test"))
        assert.isNotNull(longest.previous_secrets_expire_at)
        assert.strictEqual((yield* storedSecrets("rot-bounds"))[0]!.expires_in_s, MAX_OVERLAP_MS / 1000)
      }),
    )
  })
})
