import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import { FORBIDDEN, gatewayPort, httpRequest, obtainToken, UNAUTHORIZED } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { completeProspect, issueSource, prospectService, prospectSetUp } from "../support/Prospects.ts"

const service = prospectService()

/** An ingestion gateway client made as `clients create --gateway ingest` makes it. */
const ingestClientWith = (input: {
  readonly owners: ReadonlyArray<string>
  readonly source: string
  readonly legacyPartnerScopes?: ReadonlyArray<string>
}) =>
  Effect.flatMap(Effect.service(Auth), (auth) =>
    auth.createClient({ gateway: "ingest", name: "legacy integration", ...input }),
  ).pipe(Effect.orDie)

/** A prospect route on the ingestion gateway with `token`. */
const onIngest = (token: string, method: "GET" | "POST", path: string, body?: unknown) =>
  Effect.gen(function* () {
    return yield* httpRequest(yield* gatewayPort("ingest-api"), path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  })

describe("legacy Partner API grants on the ingestion gateway", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "lets a client created with legacy partner scopes call the prospect routes there; others get 403",
      () =>
        Effect.gen(function* () {
          const source = "legacy-src"
          const { slug } = yield* prospectSetUp("org-legacy", source)
          const legacy = yield* ingestClientWith({
            owners: [slug],
            source,
            legacyPartnerScopes: ["prospects:write", "prospects:read"],
          })
          const plain = yield* ingestClientWith({ owners: [slug], source })
          yield* issueSource({ code: source, clients: [legacy.clientId, plain.clientId] })
          const legacyToken = yield* obtainToken("ingest", legacy)
          const plainToken = yield* obtainToken("ingest", plain)

          const created = yield* onIngest(legacyToken, "POST", `/partners/${slug}/prospects`, {
            prospect: completeProspect(source, "legacy-1"),
          })
          assert.strictEqual(created.status, 200, created.text)
          assert.strictEqual(JSON.parse(created.text).status_code, 201)
          const read = yield* onIngest(legacyToken, "GET", `/partners/${slug}/prospects/${source}/legacy-1`)
          assert.strictEqual(read.status, 200, read.text)
          assert.strictEqual(JSON.parse(read.text).prospect.source_prospect_id, "legacy-1")

          for (const [method, path, body] of [
            ["POST", `/partners/${slug}/prospects`, { prospect: completeProspect(source, "plain-1") }],
            ["GET", `/partners/${slug}/prospects/${source}/legacy-1`, undefined],
          ] as const) {
            const refused = yield* onIngest(plainToken, method, path, body)
            assert.strictEqual(refused.status, 403, `${method} ${path}: ${refused.text}`)
            assert.strictEqual(refused.text, FORBIDDEN)
          }
          // The legacy client's token is the ingestion gateway's: the Partner API gateway refuses it.
          const onPartner = yield* httpRequest(
            yield* gatewayPort("partner-api"),
            `/partners/${slug}/prospects/${source}/legacy-1`,
            { headers: { authorization: `Bearer ${legacyToken}` } },
          )
          assert.strictEqual(onPartner.status, 401)
          assert.strictEqual(onPartner.text, UNAUTHORIZED)
        }),
    )

    it.effect("grants legacy scopes only through the operator's flag, only on the ingestion gateway", () =>
      Effect.gen(function* () {
        const created = yield* runCli(
          service.env,
          "clients",
          "create",
          "--gateway",
          "ingest",
          "--name",
          "Older integration",
          "--legacy-partner-scopes",
          "prospects:write prospects:read",
        )
        assert.strictEqual(created.code, 0, created.stderr)
        const clientId = (JSON.parse(created.stdout) as { client_id: string }).client_id
        const listed = (yield* Effect.flatMap(Effect.service(Auth), (auth) => auth.listClients)).find(
          (c) => c.id === clientId,
        )
        assert.deepStrictEqual(listed?.scopes, ["ingest:events", "prospects:write", "prospects:read"])

        const auth = yield* Auth
        const refusals = yield* Effect.all([
          Effect.flip(auth.createClient({ gateway: "ingest", name: "new", scopes: ["prospects:write"] })),
          Effect.flip(
            auth.createClient({ gateway: "partner", name: "p", legacyPartnerScopes: ["prospects:read"] }),
          ),
          Effect.flip(
            auth.createClient({ gateway: "ingest", name: "w", legacyPartnerScopes: ["webhooks:manage"] }),
          ),
        ])
        assert.deepStrictEqual(
          refusals.map((r) => r.message),
          [
            "scopes not available on the ingest gateway: prospects:write (available: ingest:events)",
            "legacy Partner API scopes are granted only to ingestion gateway clients",
            "legacy Partner API scopes not available: webhooks:manage (available: prospects:write, prospects:read)",
          ],
        )
      }),
    )
  })
})
