import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { createOwnerThroughApi, postBatch, query, rosterPartner } from "../support/Roster.ts"

const service = authService()

/** `npm run cli -- ...` on this file's database, as the operator `ops-jane`, through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli({ ...service.env, CLI_ACTOR: "ops-jane" }, ...args)

const files = mkdtempSync(join(tmpdir(), "set-address-cli-"))
afterAll(() => rmSync(files, { recursive: true, force: true }))

const addressFile = (name: string, content: unknown) => {
  const path = join(files, name)
  writeFileSync(path, JSON.stringify(content))
  return path
}

const SEED = { line_one: "12 Oak Ct", city: "Springfield", state: "IL", zip: "62701" }
const at = (line_one: string) => ({ address: { ...SEED, line_one } })

const building = (slug: string) =>
  query(
    (sql) => sql<Array<{ street: string; city: string; zip: string; address_locked: boolean }>>`
      select p.street, p.city, p.zip, p.address_locked from properties p join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'p-1'`,
  ).pipe(Effect.map(([row]) => row!))

describe("npm run cli -- properties set-address", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("explains itself with --help", () =>
      Effect.gen(function* () {
        const run = yield* cli("properties", "set-address", "--help")
        assert.strictEqual(run.code, 0, run.stderr)
        assert.include(run.stdout, "usage: properties set-address OWNER_SLUG EXTERNAL_ID --file address.json")
        assert.include(run.stdout, "locked")
      }),
    )

    it.effect("corrects and locks a building's address, audited; units no longer move its street", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-set-address",
          name: "Addr",
        })
        yield* postBatch(partner, slug, "properties", [
          { external_system_id: "p-1", building_name: "Oak Court", address: SEED },
        ])
        const run = yield* cli(
          "properties",
          "set-address",
          slug,
          "p-1",
          "--file",
          addressFile("oak.json", {
            line_one: "14 N Oak Ct Apt 3",
            city: "Springfield",
            state: "Illinois",
            zip: "62702-1234",
          }),
        )
        assert.strictEqual(run.code, 0, run.stderr)
        assert.deepInclude(JSON.parse(run.stdout), {
          owner_slug: slug,
          external_system_id: "p-1",
          address: { line_one: "14 North Oak Court", city: "Springfield", state: "IL", zip: "62702" },
          address_locked: true,
        })
        const corrected = {
          street: "14 North Oak Court",
          city: "Springfield",
          zip: "62702",
          address_locked: true,
        }
        assert.deepStrictEqual(yield* building(slug), corrected)
        const audit = yield* query(
          (sql) => sql<Array<{ actor: string; action: string; target: string; details: unknown }>>`
            select actor, action, target, details from audit_log where target = ${`property:${slug}/p-1`}`,
        )
        assert.deepStrictEqual(
          [...audit],
          [
            {
              actor: "cli:ops-jane",
              action: "property.set_address",
              target: `property:${slug}/p-1`,
              details: {
                before: { line_one: "12 Oak Court", city: "Springfield", state: "IL", zip: "62701" },
                after: { line_one: "14 North Oak Court", city: "Springfield", state: "IL", zip: "62702" },
              },
            },
          ],
        )

        // Units on another street: derivation has stopped, and the disagreement is kept for operators.
        const units = yield* postBatch(partner, slug, "units", [
          { external_system_id: "u-1", property_external_id: "p-1", ...at("40 Elm St Apt 1") },
          { external_system_id: "u-2", property_external_id: "p-1", ...at("40 Elm St Apt 2") },
        ])
        assert.deepStrictEqual(units.meta, { created: 2, updated: 0, failed: 0 })
        assert.deepStrictEqual(yield* building(slug), corrected)
        const disagreements = yield* query(
          (sql) => sql<Array<{ stored_street: string; derived_street: string }>>`
            select d.stored_street, d.derived_street from address_disagreements d
            join properties p on p.id = d.property_id join owners o on o.id = p.owner_id where o.slug = ${slug}`,
        )
        assert.deepStrictEqual(
          [...disagreements],
          [{ stored_street: "14 North Oak Court", derived_street: "40 Elm Street" }],
        )
        // A partner's seed address sent again does not undo the correction either.
        yield* postBatch(partner, slug, "properties", [{ external_system_id: "p-1", address: SEED }])
        assert.deepStrictEqual(yield* building(slug), corrected)
      }),
    )

    it.effect(
      "refuses an unknown building or an address it cannot normalize, exiting 2 and changing nothing",
      () =>
        Effect.gen(function* () {
          const partner = yield* rosterPartner()
          const slug = yield* createOwnerThroughApi(partner, {
            external_org_id: "org-set-bad",
            name: "Bad Addr",
          })
          yield* postBatch(partner, slug, "properties", [
            { external_system_id: "p-1", building_name: "Oak Court", address: SEED },
          ])
          const unknown = yield* cli(
            "properties",
            "set-address",
            slug,
            "p-9",
            "--file",
            addressFile("ok.json", SEED),
          )
          assert.strictEqual(unknown.code, 2)
          assert.include(unknown.stderr, `owner ${slug} has no property with external_system_id p-9`)
          const bad = yield* cli(
            "properties",
            "set-address",
            slug,
            "p-1",
            "--file",
            addressFile("bad.json", { line_one: "1 Main St", state: "ZZ", zip: "620" }),
          )
          assert.strictEqual(bad.code, 2)
          assert.include(bad.stderr, "city is required")
          const usage = yield* cli("properties", "set-address", slug)
          assert.strictEqual(usage.code, 2)
          assert.deepStrictEqual(yield* building(slug), {
            street: "12 Oak Court",
            city: "Springfield",
            zip: "62701",
            address_locked: false,
          })
        }),
    )
  })
})
