import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { normalizeStreetLine } from "../../backend/roster/Address.ts"
import { authService, FORBIDDEN } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { postBatch, postJson, postOwner, query, rosterPartner } from "../support/Roster.ts"

const service = authService()

/** `npm run cli -- ...` on this file's database, run in this process through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli(service.env, ...args)

const createManaged = (name: string, externalOrgId: string) =>
  Effect.gen(function* () {
    const run = yield* cli("owners", "create-managed", "--name", name, "--external-org-id", externalOrgId)
    assert.strictEqual(run.code, 0, run.stderr)
    return JSON.parse(run.stdout) as { owner_slug: string; name: string; external_org_id: string }
  })

/** A building the service holds for a managed owner, by its PMS property id, not yet linked. */
const serviceBuilding = (slug: string, pmsPropertyId: string, lineOne: string) => {
  const street = normalizeStreetLine(lineOne)
  return query(
    (sql) => sql`
      insert into properties (owner_id, building_name, street_key, street, city, state, zip, pms_type, pms_property_id)
      select id, ${pmsPropertyId}, ${street.key}, ${street.display}, 'Springfield', 'IL', '62701', 'yardi',
             ${pmsPropertyId}
      from owners where slug = ${slug}`,
  )
}

describe("npm run cli -- owners", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    it.effect(
      "create-managed prints the owner; the owner endpoint then answers 409 for its external_org_id",
      () =>
        Effect.gen(function* () {
          const created = yield* createManaged("Legacy Holdings", "org-cli-legacy")
          assert.deepStrictEqual(created, {
            owner_slug: "legacy-holdings",
            name: "Legacy Holdings",
            external_org_id: "org-cli-legacy",
          })
          const rows = yield* query(
            (sql) => sql<Array<{ managed_by_service: boolean; purchase_flow_enabled: boolean }>>`
            select managed_by_service, purchase_flow_enabled from owners where slug = 'legacy-holdings'`,
          )
          assert.deepStrictEqual([...rows], [{ managed_by_service: true, purchase_flow_enabled: true }])
          const partner = yield* rosterPartner()
          const answer = yield* postOwner(partner, {
            external_org_id: "org-cli-legacy",
            name: "Legacy Holdings",
          })
          assert.strictEqual(answer.status, 409, answer.text)
          // Running it again finds the same owner rather than making a duplicate.
          assert.deepStrictEqual(yield* createManaged("Legacy Holdings", "org-cli-legacy"), created)
        }),
    )

    it.effect(
      "create-managed refuses an external_org_id a partner-created owner already has, exiting 2",
      () =>
        Effect.gen(function* () {
          const partner = yield* rosterPartner()
          const created = yield* postOwner(partner, {
            external_org_id: "org-cli-partner",
            name: "Partner Made",
          })
          assert.strictEqual(created.status, 200, created.text)
          const run = yield* cli(
            "owners",
            "create-managed",
            "--name",
            "Partner Made",
            "--external-org-id",
            "org-cli-partner",
          )
          assert.strictEqual(run.code, 2)
          assert.strictEqual(run.stdout, "")
          assert.include(run.stderr, "org-cli-partner is already the partner-created owner partner-made")
          const rows = yield* query(
            (sql) => sql<Array<{ managed_by_service: boolean }>>`
            select managed_by_service from owners where external_org_id = 'org-cli-partner'`,
          )
          assert.deepStrictEqual([...rows], [{ managed_by_service: false }])
        }),
    )

    it.effect("create-managed without --name or --external-org-id exits 2 with the usage", () =>
      Effect.gen(function* () {
        for (const args of [["--name", "No Id"], ["--external-org-id", "org-no-name"], []]) {
          const run = yield* cli("owners", "create-managed", ...args)
          assert.strictEqual(run.code, 2, run.stdout)
          assert.include(run.stderr, "usage: owners create-managed --name NAME --external-org-id ID")
          assert.strictEqual(run.stdout, "")
        }
        const rows = yield* query(
          (sql) => sql`select 1 from owners where name = 'No Id' or external_org_id = 'org-no-name'`,
        )
        assert.strictEqual(rows.length, 0)
      }),
    )

    it.effect(
      "create-managed stores an NFD external_org_id as its NFC form and refuses one with a zero-width space, exiting 2",
      () =>
        Effect.gen(function* () {
          const created = yield* createManaged("Cafe Owner", "org-cafe\u0301")
          assert.strictEqual(created.external_org_id, "org-caf\u00e9")
          assert.strictEqual(
            (yield* createManaged("Cafe Owner", "org-caf\u00e9")).owner_slug,
            created.owner_slug,
          )
          const run = yield* cli(
            "owners",
            "create-managed",
            "--name",
            "Lookalike",
            "--external-org-id",
            "org\u200b-1",
          )
          assert.strictEqual(run.code, 2, run.stdout)
          assert.include(
            run.stderr,
            "--external-org-id must not contain zero-width or bidirectional control characters",
          )
          const rows = yield* query((sql) => sql`select 1 from owners where name = 'Lookalike'`)
          assert.strictEqual(rows.length, 0)
        }),
    )

    it.effect("grant lets the client act for the owner, which answered 403 before", () =>
      Effect.gen(function* () {
        const { owner_slug: slug } = yield* createManaged("Granted Legacy", "org-cli-granted")
        const partner = yield* rosterPartner()
        const before = yield* postJson(partner, `/partners/${slug}/properties`, [])
        assert.strictEqual(before.status, 403)
        assert.strictEqual(before.text, FORBIDDEN)
        const run = yield* cli("owners", "grant", "--owner", slug, "--client", partner.clientId)
        assert.strictEqual(run.code, 0, run.stderr)
        assert.deepStrictEqual(JSON.parse(run.stdout), {
          owner_slug: slug,
          client_id: partner.clientId,
          buildings: null,
        })
        yield* serviceBuilding(slug, "LEG-9", "9 Legacy Ln")
        const body = yield* postBatch(partner, slug, "properties", [
          {
            external_system_id: "leg-9",
            building_name: "Nine",
            address: { line_one: "9 Legacy Ln", city: "Springfield", state: "IL", zip: "62701" },
            pms_type: "yardi",
            pms_property_id: "LEG-9",
          },
        ])
        assert.deepStrictEqual(
          body.results.map((r) => r.action),
          ["updated"],
        )
      }),
    )

    it.effect("grant --buildings limits the client to the named buildings", () =>
      Effect.gen(function* () {
        const { owner_slug: slug } = yield* createManaged("Partial Legacy", "org-cli-partial")
        yield* serviceBuilding(slug, "LEG-1", "1 Legacy Ln")
        yield* serviceBuilding(slug, "LEG-2", "2 Legacy Ln")
        yield* serviceBuilding(slug, "LEG-3", "3 Legacy Ln")
        const partner = yield* rosterPartner()
        const run = yield* cli(
          "owners",
          "grant",
          "--owner",
          slug,
          "--client",
          partner.clientId,
          "--buildings",
          "LEG-1,LEG-2",
        )
        assert.strictEqual(run.code, 0, run.stderr)
        assert.deepStrictEqual(JSON.parse(run.stdout), {
          owner_slug: slug,
          client_id: partner.clientId,
          buildings: ["LEG-1", "LEG-2"],
        })
        const item = (pmsPropertyId: string) => ({
          external_system_id: pmsPropertyId.toLowerCase(),
          building_name: pmsPropertyId,
          address: { line_one: "1 Legacy Ln", city: "Springfield", state: "IL", zip: "62701" },
          pms_type: "yardi",
          pms_property_id: pmsPropertyId,
        })
        const body = yield* postBatch(partner, slug, "properties", [
          item("LEG-1"),
          item("LEG-2"),
          item("LEG-3"),
        ])
        assert.deepStrictEqual(
          body.results.map((r) => [r.external_system_id, r.action, r.errors]),
          [
            ["leg-1", "updated", undefined],
            ["leg-2", "updated", undefined],
            ["leg-3", "failed", { pms_property_id: ["is not a building granted to these credentials"] }],
          ],
        )
      }),
    )

    it.effect("grant exits 2 for an unknown owner or client, granting nothing", () =>
      Effect.gen(function* () {
        const { owner_slug: slug } = yield* createManaged("Lonely Legacy", "org-cli-lonely")
        const partner = yield* rosterPartner()
        const noOwner = yield* cli(
          "owners",
          "grant",
          "--owner",
          "no-such-owner",
          "--client",
          partner.clientId,
        )
        assert.strictEqual(noOwner.code, 2)
        assert.include(noOwner.stderr, "no owner no-such-owner")
        const noClient = yield* cli("owners", "grant", "--owner", slug, "--client", "cli_no_such_client")
        assert.strictEqual(noClient.code, 2, noClient.stderr)
        assert.include(noClient.stderr, "no client cli_no_such_client")
        const missing = yield* cli("owners", "grant", "--owner", slug)
        assert.strictEqual(missing.code, 2)
        assert.include(missing.stderr, "usage: owners grant --owner SLUG --client CLIENT_ID")
        const grants = yield* query(
          (sql) =>
            sql`select 1 from client_owner_grants g join owners o on o.id = g.owner_id where o.slug = ${slug}`,
        )
        assert.strictEqual(grants.length, 0)
      }),
    )
  })
})
