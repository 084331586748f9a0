import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  createClient,
  FORBIDDEN,
  gatewayPort,
  httpRequest,
  obtainToken,
  OWNER_NOT_FOUND,
} from "../support/Auth.ts"
import {
  completeProspect,
  postProspect,
  prospectService,
  prospectSetUp,
  provisionedOwner,
} from "../support/Prospects.ts"
import { assertValid, compilePublished, responseSchema } from "../support/PublishedApi.ts"
import { query, type RosterPartner } from "../support/Roster.ts"

const PATH = "/partners/{owner_slug}/test/sayrhino_users"
const validReset = compilePublished(responseSchema(PATH, "delete", "200"))

/** `DELETE /partners/{slug}/test/sayrhino_users` as the published reference shows it, with an optional body. */
const resetTestUsers = (token: string, slug: string, body?: unknown) =>
  Effect.gen(function* () {
    return yield* httpRequest(yield* gatewayPort("partner-api"), `/partners/${slug}/test/sayrhino_users`, {
      method: "DELETE",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  })

const posted = (partner: RosterPartner, slug: string, prospect: Record<string, unknown>) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.body.prospect.id
  })

const remaining = (source: string) =>
  query(
    (sql) => sql<Array<{ source_prospect_id: string }>>`
      select source_prospect_id from prospects where source = ${source} order by source_prospect_id`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.source_prospect_id)))

describe("the published staging route DELETE /partners/{owner_slug}/test/sayrhino_users (SERVICE_ENV=staging)", () => {
  layer(prospectService({ SERVICE_ENV: "staging" }).layer, { excludeTestServices: true, timeout: 60_000 })(
    (it) => {
      it.effect("resets the owner's test users in the published shape; an email narrows it", () =>
        Effect.gen(function* () {
          const source = "stg-alias"
          const { partner, slug } = yield* prospectSetUp("org-stg-alias", source)
          const otherSlug = yield* provisionedOwner(partner, "org-stg-alias-other")
          const one = yield* posted(
            partner,
            slug,
            completeProspect(source, "a-1", { email: "one@example.com" }),
          )
          const two = yield* posted(
            partner,
            slug,
            completeProspect(source, "a-2", { email: "two@example.com" }),
          )
          const three = yield* posted(
            partner,
            slug,
            completeProspect(source, "a-3", { email: "two@example.com" }),
          )
          yield* posted(partner, otherSlug, completeProspect(source, "a-other", { email: "two@example.com" }))

          const narrowed = yield* resetTestUsers(partner.token, slug, { email: "TWO@example.com" })
          assert.strictEqual(narrowed.status, 200, narrowed.text)
          const ids = [two, three].sort((a, b) => a - b)
          assert.deepStrictEqual(JSON.parse(narrowed.text), {
            reset: {
              insurance_policy_ids: [],
              third_party_prospect_ids: ids,
              unlinked_yardi_resident_ids: [],
              deleted_third_party_prospect_ids: ids,
            },
            status_code: 200,
          })
          assertValid(validReset, JSON.parse(narrowed.text), "the narrowed reset")
          assert.deepStrictEqual(yield* remaining(source), ["a-1", "a-other"])

          // As the published API calls it, with no parameter: every test user of the owner, and only of it.
          const whole = yield* resetTestUsers(partner.token, slug)
          assert.strictEqual(whole.status, 200, whole.text)
          assertValid(validReset, JSON.parse(whole.text), "the whole reset")
          assert.deepStrictEqual(JSON.parse(whole.text).reset.deleted_third_party_prospect_ids, [one])
          assert.deepStrictEqual(yield* remaining(source), ["a-other"])
        }),
      )

      it.effect("takes the staging reset's scope and owner checks", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* prospectSetUp("org-stg-alias-auth", "stg-alias-auth")
          const readOnly = yield* obtainToken(
            "partner",
            yield* createClient({ gateway: "partner", scopes: ["prospects:read"], owners: [slug] }),
          )
          const forbidden = yield* resetTestUsers(readOnly, slug)
          assert.strictEqual(forbidden.status, 403)
          assert.strictEqual(forbidden.text, FORBIDDEN)
          const stranger = yield* obtainToken("partner", yield* createClient({ gateway: "partner" }))
          const notGranted = yield* resetTestUsers(stranger, slug)
          assert.strictEqual(notGranted.status, 403)
          const unknown = yield* resetTestUsers(partner.token, "no-such-owner")
          assert.strictEqual(unknown.status, 404)
          assert.strictEqual(unknown.text, OWNER_NOT_FOUND)
        }),
      )
    },
  )
})

describe("the published staging route outside staging", () => {
  layer(prospectService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("does not exist (404)", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* prospectSetUp("org-dev-alias", "dev-alias")
        const answer = yield* resetTestUsers(partner.token, slug)
        assert.strictEqual(answer.status, 404, answer.text)
      }),
    )
  })
})
