import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Roster } from "../../backend/roster/Roster.ts"
import { authService, FORBIDDEN, gatewayPort, httpRequest } from "../support/Auth.ts"
import {
  createOwnerThroughApi,
  postBatch,
  postJson,
  postOwner,
  query,
  rosterPartner,
} from "../support/Roster.ts"

const service = authService()

/** The owner as the response shows it right after creation with only a name. */
const freshOwner = (externalOrgId: string, slug: string, name: string) => ({
  external_org_id: externalOrgId,
  owner_slug: slug,
  name,
  purchase_flow_enabled: false,
  active: false,
  max_coverage_amount_cents: null,
  embedded_frame_ancestors: [],
  guarantor_coverage_capable: false,
  default_bank_account_external_id: null,
  brand_name: null,
  brand_logo_url: null,
  brand_accent_color: null,
})

describe("POST /partners/property_owners", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    it.effect("creates an owner whose readable slug comes from its name, with the purchase flow off", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const answer = yield* postOwner(partner, {
          external_org_id: "org-acme",
          name: "Acme Properties, Inc.",
        })
        assert.strictEqual(answer.status, 200, answer.text)
        assert.deepStrictEqual(answer.body, {
          status_code: 201,
          owner_slug: "acme-properties-inc",
          property_owner: freshOwner("org-acme", "acme-properties-inc", "Acme Properties, Inc."),
        })
      }),
    )

    it.effect("gives a second owner with the same name the slug with -2", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const first = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-twin-1",
          name: "Twin Homes",
        })
        const second = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-twin-2",
          name: "Twin Homes",
        })
        const third = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-twin-3",
          name: "twin homes!",
        })
        assert.deepStrictEqual([first, second, third], ["twin-homes", "twin-homes-2", "twin-homes-3"])
      }),
    )

    it.effect("gives owners of one name created at the same time distinct slugs", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const answers = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, i) => i),
          (i) => postOwner(partner, { external_org_id: `org-crowd-${i}`, name: "Crowded Homes" }),
          { concurrency: "unbounded" },
        )
        assert.deepStrictEqual(
          answers.map((a) => [a.status, a.body.status_code]),
          Array.from({ length: 6 }, () => [200, 201]),
          answers.map((a) => a.text).join("\n"),
        )
        assert.sameMembers(
          answers.map((a) => a.body.owner_slug),
          [
            "crowded-homes",
            "crowded-homes-2",
            "crowded-homes-3",
            "crowded-homes-4",
            "crowded-homes-5",
            "crowded-homes-6",
          ],
        )
      }),
    )

    it.effect("creates one owner when its first payload arrives twice at the same time", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const answers = yield* Effect.forEach(
          [0, 1, 2, 3],
          () => postOwner(partner, { external_org_id: "org-twice", name: "Twice Homes" }),
          { concurrency: "unbounded" },
        )
        assert.sameMembers(
          answers.map((a) => `${a.status} ${a.body.status_code} ${a.body.owner_slug}`),
          ["200 201 twice-homes", "200 200 twice-homes", "200 200 twice-homes", "200 200 twice-homes"],
        )
        const rows = yield* query((sql) => sql`select 1 from owners where external_org_id = 'org-twice'`)
        assert.strictEqual(rows.length, 1)
      }),
    )

    it.effect("requires a name when the owner is created (422, nothing stored)", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const answer = yield* postOwner(partner, { external_org_id: "org-nameless" })
        assert.strictEqual(answer.status, 422)
        assert.strictEqual(
          answer.text,
          `{"status_code":422,"error":"Property owner invalid.","property_owner":{"name":"is required when the owner is created"},"errors":{"name":["is required when the owner is created"]}}`,
        )
        const rows = yield* query((sql) => sql`select 1 from owners where external_org_id = 'org-nameless'`)
        assert.strictEqual(rows.length, 0)
      }),
    )

    it.effect("takes one owner object, not an array", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const answer = yield* postOwner(partner, [{ external_org_id: "org-array", name: "Array" }] as never)
        assert.strictEqual(answer.status, 422)
        assert.strictEqual(
          answer.text,
          `{"status_code":422,"error":"Property owner invalid.","property_owner":{"base":"must be PropertyOwnerInput"},"errors":{"base":["must be PropertyOwnerInput"]}}`,
        )
      }),
    )

    it.effect("updates the existing owner when the payload is sent again (upsert on external_org_id)", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const payload = {
          external_org_id: "org-resend",
          name: "Resend Realty",
          max_coverage_amount_cents: 250000,
        }
        const slug = yield* createOwnerThroughApi(partner, payload)
        const again = yield* postOwner(partner, payload)
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.body, {
          status_code: 200,
          owner_slug: slug,
          property_owner: {
            ...freshOwner("org-resend", slug, "Resend Realty"),
            max_coverage_amount_cents: 250000,
          },
        })
        const renamed = yield* postOwner(partner, {
          external_org_id: "org-resend",
          name: "Resend Realty Group",
        })
        assert.strictEqual(renamed.body.owner_slug, slug, "the slug stays when the name changes")
        assert.strictEqual(renamed.body.property_owner.name, "Resend Realty Group")
        const rows = yield* query(
          (sql) => sql<Array<{ slug: string }>>`select slug from owners where external_org_id = 'org-resend'`,
        )
        assert.deepStrictEqual(
          rows.map((r) => r.slug),
          [slug],
        )
      }),
    )

    it.effect("keeps the stored value when a field is omitted, and clears it on an explicit null", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-omit",
          name: "Omit Owners",
          max_coverage_amount_cents: 500000,
          embedded_frame_ancestors: ["https://pms.example.com"],
          guarantor_coverage_capable: true,
        })
        const omitted = yield* postOwner(partner, { external_org_id: "org-omit" })
        assert.deepStrictEqual(omitted.body.property_owner, {
          ...freshOwner("org-omit", slug, "Omit Owners"),
          max_coverage_amount_cents: 500000,
          embedded_frame_ancestors: ["https://pms.example.com"],
          guarantor_coverage_capable: true,
        })
        const cleared = yield* postOwner(partner, {
          external_org_id: "org-omit",
          max_coverage_amount_cents: null,
        })
        assert.strictEqual(cleared.status, 200, cleared.text)
        assert.isNull(cleared.body.property_owner.max_coverage_amount_cents)
        assert.deepStrictEqual(cleared.body.property_owner.embedded_frame_ancestors, [
          "https://pms.example.com",
        ])
        const [row] = yield* query(
          (sql) =>
            sql<
              Array<{ max_coverage_amount_cents: string | null; guarantor_coverage_capable: boolean }>
            >`select max_coverage_amount_cents, guarantor_coverage_capable from owners where slug = ${slug}`,
        )
        assert.deepStrictEqual(row, { max_coverage_amount_cents: null, guarantor_coverage_capable: true })
      }),
    )

    it.effect(
      "takes the portal's brand on create and update, keeps it when omitted and clears it on null",
      () =>
        Effect.gen(function* () {
          const partner = yield* rosterPartner()
          const brand = {
            brand_name: "Acme Living",
            brand_logo_url: "https://cdn.example.com/acme/logo.png?v=2",
            brand_accent_color: "#0055aa",
          }
          const slug = yield* createOwnerThroughApi(partner, {
            external_org_id: "org-brand",
            name: "Brand Owners",
            ...brand,
          })
          const omitted = yield* postOwner(partner, { external_org_id: "org-brand", name: "Brand Owners" })
          assert.strictEqual(omitted.status, 200, omitted.text)
          assert.deepStrictEqual(omitted.body.property_owner, {
            ...freshOwner("org-brand", slug, "Brand Owners"),
            ...brand,
          })
          const changed = yield* postOwner(partner, {
            external_org_id: "org-brand",
            brand_accent_color: "#767676",
          })
          assert.strictEqual(changed.body.property_owner.brand_accent_color, "#767676")
          assert.strictEqual(changed.body.property_owner.brand_name, "Acme Living")
          const cleared = yield* postOwner(partner, {
            external_org_id: "org-brand",
            brand_name: null,
            brand_logo_url: null,
            brand_accent_color: null,
          })
          assert.strictEqual(cleared.status, 200, cleared.text)
          assert.deepStrictEqual(cleared.body.property_owner, freshOwner("org-brand", slug, "Brand Owners"))
          const [row] = yield* query(
            (sql) => sql<Array<Record<string, string | null>>>`
            select brand_name, brand_logo_url, brand_accent_color from owners where slug = ${slug}`,
          )
          assert.deepStrictEqual(row, { brand_name: null, brand_logo_url: null, brand_accent_color: null })
        }),
    )

    it.effect(
      "refuses a logo that is not an HTTPS URL without credentials, and a colour white text is unreadable on",
      () =>
        Effect.gen(function* () {
          const partner = yield* rosterPartner()
          const slug = yield* createOwnerThroughApi(partner, {
            external_org_id: "org-bad-brand",
            name: "Bad Brand",
            brand_logo_url: "https://cdn.example.com/kept.png",
            brand_accent_color: "#000000",
          })
          const URL_MESSAGE =
            "must be an HTTPS URL without credentials, such as https://cdn.example.com/logo.png"
          for (const logo of [
            "http://cdn.example.com/logo.png",
            "https://user:secret@cdn.example.com/logo.png",
            "https://user@cdn.example.com/logo.png",
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "https://*.example.com/logo.png",
            "/logo.png",
            `https://cdn.example.com/${"a".repeat(2048)}`,
          ]) {
            const answer = yield* postOwner(partner, {
              external_org_id: "org-bad-brand",
              brand_logo_url: logo,
            })
            assert.strictEqual(answer.status, 422, logo)
            const message = logo.length > 2048 ? "is too long (maximum is 2048 characters)" : URL_MESSAGE
            assert.deepStrictEqual(
              (answer.body as unknown as { errors: unknown }).errors,
              { brand_logo_url: [message] },
              logo,
            )
          }
          const colours: Array<[string, string]> = [
            ["#ffee00", "must have at least 4.5:1 contrast with white text (#ffee00 has 1.2:1)"],
            ["#777777", "must have at least 4.5:1 contrast with white text (#777777 has 4.4:1)"],
            ["#fff", "must be a colour written #rrggbb"],
            ["0055aa", "must be a colour written #rrggbb"],
            ["#0055aa ", "must be a colour written #rrggbb"],
            ["red", "must be a colour written #rrggbb"],
          ]
          for (const [colour, message] of colours) {
            const answer = yield* postOwner(partner, {
              external_org_id: "org-bad-brand",
              brand_accent_color: colour,
            })
            assert.strictEqual(answer.status, 422, colour)
            assert.deepStrictEqual(
              (answer.body as unknown as { errors: unknown }).errors,
              { brand_accent_color: [message] },
              colour,
            )
          }
          const long = yield* postOwner(partner, {
            external_org_id: "org-bad-brand",
            brand_name: "n".repeat(256),
          })
          assert.deepStrictEqual((long.body as unknown as { errors: unknown }).errors, {
            brand_name: ["is too long (maximum is 255 characters)"],
          })
          const [row] = yield* query(
            (sql) => sql<Array<Record<string, string | null>>>`
            select brand_name, brand_logo_url, brand_accent_color from owners where slug = ${slug}`,
          )
          assert.deepStrictEqual(row, {
            brand_name: null,
            brand_logo_url: "https://cdn.example.com/kept.png",
            brand_accent_color: "#000000",
          })
        }),
    )

    it.effect("documents the brand fields in /openapi.json, in the request and the owner", () =>
      Effect.gen(function* () {
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const schemas = (
          JSON.parse(answer.text) as {
            components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> }
          }
        ).components.schemas
        const input = schemas.PropertyOwnerInput!.properties
        const owner = schemas.PropertyOwner!.properties
        for (const field of ["brand_name", "brand_logo_url", "brand_accent_color"]) {
          assert.isDefined(input[field], field)
          assert.isDefined(owner[field], field)
          assert.include(JSON.stringify(input[field]), "description", field)
        }
        assert.include(JSON.stringify(input.brand_logo_url), "2048")
        assert.include(JSON.stringify(input.brand_name), "255")
        assert.include(JSON.stringify(input.brand_accent_color), "4.5:1")
      }),
    )

    it.effect("replaces the whole embedded_frame_ancestors array when present; it does not merge", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        yield* createOwnerThroughApi(partner, {
          external_org_id: "org-frames",
          name: "Frame Owners",
          embedded_frame_ancestors: ["https://a.example.com", "https://b.example.com"],
        })
        const replaced = yield* postOwner(partner, {
          external_org_id: "org-frames",
          embedded_frame_ancestors: ["https://c.example.com"],
        })
        assert.deepStrictEqual(replaced.body.property_owner.embedded_frame_ancestors, [
          "https://c.example.com",
        ])
        const emptied = yield* postOwner(partner, {
          external_org_id: "org-frames",
          embedded_frame_ancestors: [],
        })
        assert.deepStrictEqual(emptied.body.property_owner.embedded_frame_ancestors, [])
        const [row] = yield* query(
          (sql) =>
            sql<
              Array<{ embedded_frame_ancestors: Array<string> }>
            >`select embedded_frame_ancestors from owners where external_org_id = 'org-frames'`,
        )
        assert.deepStrictEqual(row!.embedded_frame_ancestors, [])
      }),
    )

    it.effect("refuses embedded_frame_ancestors that are not HTTPS origins with 422, changing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        yield* createOwnerThroughApi(partner, {
          external_org_id: "org-origins",
          name: "Origin Owners",
          embedded_frame_ancestors: ["https://kept.example.com"],
        })
        const answer = yield* postOwner(partner, {
          external_org_id: "org-origins",
          embedded_frame_ancestors: [
            "http://pms.example.com",
            "https://pms.example.com/embed",
            "https://ok.example.com",
          ],
        })
        assert.strictEqual(answer.status, 422)
        assert.strictEqual(
          answer.text,
          `{"status_code":422,"error":"Property owner invalid.","property_owner":{` +
            `"embedded_frame_ancestors.0":"must be an HTTPS origin such as https://pms.example.com",` +
            `"embedded_frame_ancestors.1":"must be an HTTPS origin such as https://pms.example.com"},` +
            `"errors":{"embedded_frame_ancestors.0":["must be an HTTPS origin such as https://pms.example.com"],` +
            `"embedded_frame_ancestors.1":["must be an HTTPS origin such as https://pms.example.com"]}}`,
        )
        const [row] = yield* query(
          (sql) =>
            sql<
              Array<{ embedded_frame_ancestors: Array<string> }>
            >`select embedded_frame_ancestors from owners where external_org_id = 'org-origins'`,
        )
        assert.deepStrictEqual(row!.embedded_frame_ancestors, ["https://kept.example.com"])
      }),
    )

    it.effect(
      "takes only exact HTTPS origins as frame ancestors: no wildcard, user info, query or fragment",
      () =>
        Effect.gen(function* () {
          const partner = yield* rosterPartner()
          yield* createOwnerThroughApi(partner, {
            external_org_id: "org-exact-origins",
            name: "Exact Origins",
            embedded_frame_ancestors: ["https://kept.example.com"],
          })
          const refused = [
            "https://*.com",
            "https://*.example.com",
            "https://*",
            "https://user:pass@pms.example.com",
            "https://user@pms.example.com",
            "https://pms.example.com?x=1",
            "https://pms.example.com#x",
            "https://pms.example.com:*",
            "https://pms_1.example.com",
            "https://pms.example.com:443",
            "https://pms.example.com/.",
            "https://pms.example.com 'unsafe-inline'",
            "https://pms.example.com;script-src *",
          ]
          for (const origin of refused) {
            const answer = yield* postOwner(partner, {
              external_org_id: "org-exact-origins",
              embedded_frame_ancestors: [origin],
            })
            assert.strictEqual(answer.status, 422, origin)
            assert.deepStrictEqual(
              JSON.parse(answer.text),
              {
                status_code: 422,
                error: "Property owner invalid.",
                property_owner: {
                  "embedded_frame_ancestors.0": "must be an HTTPS origin such as https://pms.example.com",
                },
                errors: {
                  "embedded_frame_ancestors.0": ["must be an HTTPS origin such as https://pms.example.com"],
                },
              },
              origin,
            )
          }
          const [row] = yield* query(
            (sql) =>
              sql<
                Array<{ embedded_frame_ancestors: Array<string> }>
              >`select embedded_frame_ancestors from owners where external_org_id = 'org-exact-origins'`,
          )
          assert.deepStrictEqual(row!.embedded_frame_ancestors, ["https://kept.example.com"])
          const accepted = [
            "https://pms.example.com:8443",
            "https://127.0.0.1",
            "https://[::1]:8443",
            "https://a-b.example/",
          ]
          const answer = yield* postOwner(partner, {
            external_org_id: "org-exact-origins",
            embedded_frame_ancestors: accepted,
          })
          assert.strictEqual(answer.status, 200, answer.text)
          assert.deepStrictEqual(answer.body.property_owner.embedded_frame_ancestors, accepted)
        }),
    )

    it.effect("starts with purchase_flow_enabled false, and sending it true makes the owner active", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        // Even when sent true at creation: the owner starts with the purchase flow off.
        const created = yield* postOwner(partner, {
          external_org_id: "org-activate",
          name: "Activate Owners",
          purchase_flow_enabled: true,
        })
        assert.strictEqual(created.body.status_code, 201, created.text)
        assert.strictEqual(created.body.property_owner.purchase_flow_enabled, false)
        assert.strictEqual(created.body.property_owner.active, false)
        const activated = yield* postOwner(partner, {
          external_org_id: "org-activate",
          purchase_flow_enabled: true,
        })
        assert.strictEqual(activated.body.status_code, 200, activated.text)
        assert.strictEqual(activated.body.property_owner.purchase_flow_enabled, true)
        assert.strictEqual(activated.body.property_owner.active, true)
        const [row] = yield* query(
          (sql) =>
            sql<
              Array<{ purchase_flow_enabled: boolean }>
            >`select purchase_flow_enabled from owners where external_org_id = 'org-activate'`,
        )
        assert.isTrue(row!.purchase_flow_enabled)
      }),
    )

    it.effect("answers 409 when the external_org_id belongs to an owner the service manages directly", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const managed = yield* Roster.use((roster) => roster.createManagedOwner("Legacy PM Co", "org-legacy"))
        const answer = yield* postOwner(partner, { external_org_id: "org-legacy", name: "Legacy PM Co" })
        assert.strictEqual(answer.status, 409)
        assert.strictEqual(
          answer.text,
          `{"status_code":409,"error":"The owner org-legacy is managed by the service directly: coordinate with your partner success contact."}`,
        )
        const rows = yield* query(
          (sql) =>
            sql<
              Array<{ slug: string; name: string }>
            >`select slug, name from owners where external_org_id = 'org-legacy'`,
        )
        assert.deepStrictEqual(rows, [{ slug: managed.slug, name: "Legacy PM Co" }])
        const grants = yield* query(
          (sql) => sql`select 1 from client_owner_grants where client_id = ${partner.clientId}
                       and owner_id = ${managed.id}`,
        )
        assert.strictEqual(grants.length, 0, "the caller is not granted the managed owner")
      }),
    )

    it.effect("grants the owner to the client that created it; another client gets 403 until granted", () =>
      Effect.gen(function* () {
        const creator = yield* rosterPartner()
        const other = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(creator, {
          external_org_id: "org-granted",
          name: "Granted Owner",
        })
        const mine = yield* postBatch(creator, slug, "bank_accounts", [])
        assert.deepStrictEqual(mine, {
          status_code: 200,
          results: [],
          meta: { created: 0, updated: 0, failed: 0 },
        })
        for (const kind of ["bank_accounts", "properties", "units"]) {
          const refused = yield* postJson(other, `/partners/${slug}/${kind}`, [])
          assert.strictEqual(refused.status, 403, kind)
          assert.strictEqual(refused.text, FORBIDDEN)
        }
        yield* Roster.use((roster) =>
          Effect.flatMap(roster.ownerBySlug(slug), (owner) =>
            roster.grantOwner(owner!.id, other.clientId, null),
          ),
        )
        const granted = yield* postJson(other, `/partners/${slug}/properties`, [])
        assert.strictEqual(granted.status, 200, granted.text)
      }),
    )

    it.effect("answers 403 when another client re-posts an owner it is not granted, changing nothing", () =>
      Effect.gen(function* () {
        const creator = yield* rosterPartner()
        const other = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(creator, {
          external_org_id: "org-theirs",
          name: "Their Owner",
        })
        const answer = yield* postOwner(other, {
          external_org_id: "org-theirs",
          name: "Hijacked",
          purchase_flow_enabled: true,
        })
        assert.strictEqual(answer.status, 403)
        assert.strictEqual(answer.text, FORBIDDEN)
        const rows = yield* query(
          (sql) =>
            sql<
              Array<{ slug: string; name: string; purchase_flow_enabled: boolean }>
            >`select slug, name, purchase_flow_enabled from owners where external_org_id = 'org-theirs'`,
        )
        assert.deepStrictEqual(rows, [{ slug, name: "Their Owner", purchase_flow_enabled: false }])
      }),
    )
  })
})
