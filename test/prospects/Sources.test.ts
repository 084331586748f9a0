import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import type { Source } from "../../backend/prospects/Domain.ts"
import {
  redirectAllowed,
  type SourceInput,
  Sources,
  UnknownSource,
  unknownSourceErrors,
} from "../../backend/prospects/Sources.ts"
import { createClient } from "../support/Auth.ts"
import { query } from "../support/Roster.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const platform = Layer.mergeAll(Sources.layer, Auth.layer).pipe(Layer.provideMerge(testPlatform().layer))

const sources = Effect.service(Sources)
const create = (input: SourceInput) => Effect.flatMap(sources, (s) => s.create(input))
const find = (code: string) => Effect.flatMap(sources, (s) => s.find(code))
const mayUse = (code: string, clientId: string) => Effect.flatMap(sources, (s) => s.mayUse(code, clientId))
const partnerClient = createClient({ gateway: "partner" }).pipe(Effect.map((c) => c.clientId))

/** Both tables as stored, to tell that a refused command wrote nothing. */
const snapshot = Effect.all([
  query((sql) => sql`select code, flow, optional_ingest_fields, redirect_domains, updated_at from sources`),
  query((sql) => sql`select source_code, client_id from source_clients order by source_code, client_id`),
]).pipe(Effect.map((tables) => JSON.stringify(tables)))

describe("Sources", () => {
  layer(platform, { excludeTestServices: true })((it) => {
    it.effect("issues a source with its flow, optional ingest fields, redirect domains and clients", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        const created = yield* create({
          code: "vero",
          flow: "expedited",
          optionalIngestFields: true,
          redirectDomains: ["vero.example.com", "example.org"],
          clients: [clientId],
        })
        const expected: Source = {
          code: "vero",
          flow: "expedited",
          optionalIngestFields: true,
          redirectDomains: ["vero.example.com", "example.org"],
          clients: [clientId],
        }
        assert.deepStrictEqual(created, expected)
        assert.deepStrictEqual(yield* find("vero"), expected)
      }),
    )

    it.effect("requires the ingest fields, allows no redirect and lists no client unless told", () =>
      Effect.gen(function* () {
        const created = yield* create({ code: "plain_1", flow: "embedded" })
        assert.deepStrictEqual(created, {
          code: "plain_1",
          flow: "embedded",
          optionalIngestFields: false,
          redirectDomains: [],
          clients: [],
        })
      }),
    )

    it.effect("updates the source created again with the same code, replacing the lists it is given", () =>
      Effect.gen(function* () {
        const first = yield* partnerClient
        const second = yield* partnerClient
        yield* create({
          code: "rerun",
          flow: "embedded",
          optionalIngestFields: true,
          redirectDomains: ["old.example.com"],
          clients: [first],
        })
        const updated = yield* create({
          code: "rerun",
          flow: "expedited",
          optionalIngestFields: false,
          redirectDomains: ["new.example.com"],
          clients: [second],
        })
        assert.deepStrictEqual(updated, {
          code: "rerun",
          flow: "expedited",
          optionalIngestFields: false,
          redirectDomains: ["new.example.com"],
          clients: [second],
        })
        assert.deepStrictEqual(yield* find("rerun"), updated)
        const rows = yield* query((sql) => sql`select 1 from sources where code = 'rerun'`)
        assert.strictEqual(rows.length, 1)
      }),
    )

    it.effect("keeps the stored redirect domains and clients when an update omits them", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        yield* create({
          code: "kept",
          flow: "expedited",
          optionalIngestFields: true,
          redirectDomains: ["kept.example.com"],
          clients: [clientId],
        })
        const updated = yield* create({ code: "kept", flow: "embedded" })
        assert.deepStrictEqual(updated, {
          code: "kept",
          flow: "embedded",
          optionalIngestFields: true,
          redirectDomains: ["kept.example.com"],
          clients: [clientId],
        })
        const emptied = yield* create({ code: "kept", flow: "embedded", redirectDomains: [], clients: [] })
        assert.deepStrictEqual(emptied.redirectDomains, [])
        assert.deepStrictEqual(emptied.clients, [])
      }),
    )

    it.effect("stores a repeated domain or client once", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        const created = yield* create({
          code: "twice",
          flow: "expedited",
          redirectDomains: ["example.com", "example.com"],
          clients: [clientId, clientId],
        })
        assert.deepStrictEqual(created.redirectDomains, ["example.com"])
        assert.deepStrictEqual(created.clients, [clientId])
      }),
    )

    it.effect("lists every source in code order; find knows nothing of a code never issued", () =>
      Effect.gen(function* () {
        yield* create({ code: "list-b", flow: "embedded" })
        yield* create({ code: "list-a", flow: "expedited" })
        const codes = (yield* Effect.flatMap(sources, (s) => s.list)).map((s) => s.code)
        assert.includeMembers(codes, ["list-a", "list-b"])
        assert.deepStrictEqual(codes, [...codes].sort())
        assert.isUndefined(yield* find("never-issued"))
      }),
    )

    const refused: ReadonlyArray<{
      readonly name: string
      readonly input: (clientId: string) => SourceInput
      readonly message: RegExp
    }> = [
      {
        name: "an uppercase code",
        input: () => ({ code: "Vero", flow: "embedded" }),
        message: /code 'Vero' must be 1-40 lowercase letters, digits, '-' or '_'/,
      },
      {
        name: "a code of 41 characters",
        input: () => ({ code: "a".repeat(41), flow: "embedded" }),
        message: /must be 1-40 lowercase letters/,
      },
      {
        name: "an empty code",
        input: () => ({ code: "", flow: "embedded" }),
        message: /code '' must be 1-40/,
      },
      {
        name: "a code with a dot",
        input: () => ({ code: "ve.ro", flow: "embedded" }),
        message: /code 've.ro'/,
      },
      {
        name: "an unknown flow",
        input: () => ({ code: "guarded", flow: "iframe" }),
        message: /flow must be embedded or expedited, not 'iframe'/,
      },
      ...[
        "https://example.com",
        "example.com/return",
        "Example.com",
        "example.com:443",
        "localhost",
        "10.0.0.1",
      ].map((domain) => ({
        name: `the redirect domain ${domain}`,
        input: () => ({ code: "guarded", flow: "expedited", redirectDomains: ["ok.example.com", domain] }),
        message: new RegExp(
          `redirect domains must be lowercase hostnames .*: ${domain.replace(/[.]/g, "\\.")}$`,
        ),
      })),
      {
        name: "an unknown client",
        input: (clientId) => ({ code: "guarded", flow: "embedded", clients: [clientId, "cli_ghost"] }),
        message: /unknown clients: cli_ghost/,
      },
    ]

    for (const { name, input, message } of refused) {
      it.effect(`refuses ${name} and writes nothing`, () =>
        Effect.gen(function* () {
          const clientId = yield* partnerClient
          const before = yield* snapshot
          const error = yield* Effect.flip(create(input(clientId)))
          assert.strictEqual(error._tag, "SourceCommandRejected")
          assert.match(error.message, message)
          assert.strictEqual(yield* snapshot, before)
        }),
      )
    }

    it.effect("refuses an update with an unknown client and keeps the stored source as it was", () =>
      Effect.gen(function* () {
        const clientId = yield* partnerClient
        const stored = yield* create({
          code: "steady",
          flow: "embedded",
          redirectDomains: ["steady.example.com"],
          clients: [clientId],
        })
        const before = yield* snapshot
        const error = yield* Effect.flip(
          create({
            code: "steady",
            flow: "expedited",
            optionalIngestFields: true,
            redirectDomains: ["other.example.com"],
            clients: ["cli_ghost"],
          }),
        )
        assert.strictEqual(error._tag, "SourceCommandRejected")
        assert.strictEqual(yield* snapshot, before)
        assert.deepStrictEqual(yield* find("steady"), stored)
      }),
    )

    it.effect("names every problem of a refused command at once", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          create({ code: "BAD", flow: "popup", redirectDomains: ["http://x.com"], clients: ["cli_ghost"] }),
        )
        assert.match(error.message, /code 'BAD'/)
        assert.match(error.message, /flow must be embedded or expedited, not 'popup'/)
        assert.match(error.message, /http:\/\/x\.com/)
        assert.match(error.message, /unknown clients: cli_ghost/)
      }),
    )

    it.effect("lets a client submit for a source only when the source lists it", () =>
      Effect.gen(function* () {
        const listed = yield* partnerClient
        const other = yield* partnerClient
        yield* create({ code: "guest", flow: "embedded", clients: [listed] })
        assert.isTrue(yield* mayUse("guest", listed))
        assert.isFalse(yield* mayUse("guest", other))
        assert.isFalse(yield* mayUse("never-issued", listed))
        yield* create({ code: "guest", flow: "embedded", clients: [other] })
        assert.isFalse(yield* mayUse("guest", listed))
        assert.isTrue(yield* mayUse("guest", other))
      }),
    )
  })

  const source = { redirectDomains: ["example.com", "partner.test"] }
  const redirects: ReadonlyArray<readonly [string, boolean]> = [
    ["https://example.com/return", true],
    ["https://example.com", true],
    ["https://EXAMPLE.com/done?x=1", true],
    ["https://app.example.com/return", true],
    ["https://a.b.partner.test/", true],
    ["https://example.com:8443/return", true],
    ["https://other.com/return", false],
    ["https://evilexample.com/return", false],
    ["https://example.com.evil.test/return", false],
    ["https://example.co/return", false],
    ["http://example.com/return", false],
    ["javascript:alert(1)", false],
    ["//example.com/return", false],
    ["example.com/return", false],
    ["https://example.com@evil.test/", false],
    ["https://user:pass@example.com/", false],
    ["not a url", false],
    ["", false],
  ]
  for (const [url, allowed] of redirects) {
    it(`redirectAllowed(${JSON.stringify(url)}) is ${allowed}`, () => {
      assert.strictEqual(redirectAllowed(source, url), allowed)
    })
  }

  it("allows no redirect at all for a source without redirect domains", () => {
    assert.isFalse(redirectAllowed({ redirectDomains: [] }, "https://example.com/"))
  })

  it("answers an unknown source with the published 422 fields of the prospect", () => {
    const error = new UnknownSource({ source: "nope" })
    assert.deepStrictEqual(error.prospectErrors, {
      source: "Source is not included in the list",
      enrollment_source: "Enrollment source must exist",
    })
    assert.strictEqual(error.prospectErrors, unknownSourceErrors)
    assert.strictEqual(error._tag, "UnknownSource")
  })
})
