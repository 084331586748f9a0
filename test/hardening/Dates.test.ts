import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { OUT_OF_RANGE } from "../../backend/platform/Dates.ts"
import { authEnv, authService, createOwner } from "../support/Auth.ts"
import { ingestSetUp, envelope, logOf, prospectUpdate, send } from "../support/Ingest.ts"
import { call, createOperator, signIn } from "../support/Operator.ts"
import { issueSource, postProspect, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { api, createEndpoint, ENDPOINT, ownerEndpoints, webhookPartner } from "../support/Webhooks.ts"

const service = authService({
  env: authEnv({ ROLES: "partner-api,ingest-api,console,workers", CONSOLE_PORT: "0" }),
})

/**
 * Valid ISO 8601 times that JavaScript reads but Postgres cannot store: year 0, directly or through an offset, and
 * a year past 9999 once the offset is applied.
 */
const UNSTORABLE = ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]

const refusedAsOutOfRange = (answer: { status: number; text: string }, what: string) => {
  assert.strictEqual(answer.status, 422, `${what}: ${answer.text}`)
  assert.include(answer.text, OUT_OF_RANGE, what)
}

describe("times outside the years 0001 to 9999", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("are refused with 422 by every console filter, and no bulk retry is stored", () =>
      Effect.gen(function* () {
        const email = "dates-admin@example.com"
        yield* createOperator(email, "admin")
        const session = yield* signIn(email)
        const jobs = query((sql) => sql<Array<{ n: number }>>`select count(*)::int as n from bulk_retries`)
        const before = (yield* jobs)[0]!.n
        for (const value of UNSTORABLE) {
          const at = encodeURIComponent(value)
          for (const path of [
            `/api/deliveries?since=${at}`,
            `/api/deliveries?until=${at}`,
            `/api/deliveries/count?since=${at}`,
            `/api/audit?since=${at}`,
            `/api/ingest?until=${at}`,
          ]) {
            refusedAsOutOfRange(yield* call("GET", path, session), path)
          }
          for (const path of ["/api/bulk-retries/previews", "/api/bulk-retries"]) {
            const answer = yield* call("POST", path, { ...session, body: { filter: { since: value } } })
            refusedAsOutOfRange(answer, `${path} ${value}`)
          }
        }
        assert.strictEqual((yield* jobs)[0]!.n, before)
      }),
    )

    it.effect("are refused with 422 as a replay's since, from the partner API and the console", () =>
      Effect.gen(function* () {
        const slug = "dates-replay"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), ENDPOINT)
        const email = "dates-replayer@example.com"
        yield* createOperator(email, "admin")
        const session = yield* signIn(email)
        for (const since of UNSTORABLE) {
          const path = `${ownerEndpoints(slug)}/${endpoint.id}/replay`
          refusedAsOutOfRange(yield* api(partner, "POST", path, { since }), `${path} ${since}`)
          const consolePath = `/api/endpoints/${endpoint.id}/replays`
          refusedAsOutOfRange(
            yield* call("POST", consolePath, { ...session, body: { since } }),
            `${consolePath} ${since}`,
          )
        }
      }),
    )

    it.effect("are refused with 422 in a prospect's terms_accepted_at, storing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "dates-src", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-dates")
        for (const [n, value] of UNSTORABLE.entries()) {
          const answer = yield* postProspect(partner, slug, {
            source: "dates-src",
            source_prospect_id: `p-${n}`,
            terms_accepted_at: value,
          })
          refusedAsOutOfRange(answer, value)
        }
        const stored = yield* query(
          (sql) =>
            sql<Array<{ n: number }>>`select count(*)::int as n from prospects where source = 'dates-src'`,
        )
        assert.strictEqual(stored[0]!.n, 0)
      }),
    )

    it.effect("in an inbound event's time are logged as ignored, not failed by the worker", () =>
      Effect.gen(function* () {
        const setUp = yield* ingestSetUp("org-dates-ingest", "dates-ingest")
        const times: ReadonlyArray<unknown> = [...UNSTORABLE, 8.64e15]
        for (const [n, updatedAt] of times.entries()) {
          const id = yield* send(
            setUp,
            envelope("dates-ingest", prospectUpdate(`e-${n}`, "", { updated_at: updatedAt })),
          )
          const logged = yield* logOf("dates-ingest", id)
          assert.strictEqual(logged.outcome, "ignored", `${String(updatedAt)}: ${logged.reason}`)
          assert.include(logged.reason ?? "", "occurred_at", String(updatedAt))
        }
      }),
    )
  })
})
