import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { NONEXISTENT } from "../../backend/platform/Dates.ts"
import { authEnv, authService, createOwner } from "../support/Auth.ts"
import { ingestSetUp, envelope, logOf, prospectRows, prospectUpdate, send } from "../support/Ingest.ts"
import { call, createOperator, signIn } from "../support/Operator.ts"
import { issueSource, postProspect, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { api, createEndpoint, ENDPOINT, ownerEndpoints, webhookPartner } from "../support/Webhooks.ts"

const service = authService({
  env: authEnv({ ROLES: "partner-api,ingest-api,console,workers", CONSOLE_PORT: "0" }),
})

/**
 * Timestamps of the right form naming a date or time that does not exist, each of which `new Date` reads as a
 * real instant (2026-02-30 as 2026-03-02, 24:00 as the next day's midnight) or as none.
 */
const NONEXISTENT_TIMES = [
  "2026-02-30T00:00:00Z",
  "2026-04-31T12:00:00Z",
  "2026-13-01T00:00:00Z",
  "2026-03-01T24:00:00Z",
  "2026-03-01T23:59:60Z",
]

const refusedAsNonexistent = (answer: { status: number; text: string }, what: string) => {
  assert.strictEqual(answer.status, 422, `${what}: ${answer.text}`)
  assert.include(answer.text, NONEXISTENT, what)
}

describe("timestamps naming a date or time that does not exist", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("are refused with 422 by every console filter, and no bulk retry is stored", () =>
      Effect.gen(function* () {
        const email = "strict-times-admin@example.com"
        yield* createOperator(email, "admin")
        const session = yield* signIn(email)
        const jobs = query((sql) => sql<Array<{ n: number }>>`select count(*)::int as n from bulk_retries`)
        const before = (yield* jobs)[0]!.n
        for (const value of NONEXISTENT_TIMES) {
          const at = encodeURIComponent(value)
          for (const path of [
            `/api/deliveries?since=${at}`,
            `/api/deliveries?until=${at}`,
            `/api/deliveries/count?since=${at}`,
            `/api/audit?since=${at}`,
            `/api/audit?until=${at}`,
            `/api/ingest?since=${at}`,
            `/api/ingest?until=${at}`,
          ]) {
            refusedAsNonexistent(yield* call("GET", path, session), path)
          }
          for (const path of ["/api/bulk-retries/previews", "/api/bulk-retries"]) {
            for (const key of ["since", "until"]) {
              const answer = yield* call("POST", path, { ...session, body: { filter: { [key]: value } } })
              refusedAsNonexistent(answer, `${path} ${key} ${value}`)
            }
          }
        }
        assert.strictEqual((yield* jobs)[0]!.n, before)
      }),
    )

    it.effect("are refused with 422 as a replay's since or until, from the partner API and the console", () =>
      Effect.gen(function* () {
        const slug = "strict-times-replay"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), ENDPOINT)
        const email = "strict-times-replayer@example.com"
        yield* createOperator(email, "admin")
        const session = yield* signIn(email)
        const path = `${ownerEndpoints(slug)}/${endpoint.id}/replay`
        const consolePath = `/api/endpoints/${endpoint.id}/replays`
        for (const value of NONEXISTENT_TIMES) {
          for (const body of [{ since: value }, { since: "2020-01-01T00:00:00Z", until: value }]) {
            refusedAsNonexistent(yield* api(partner, "POST", path, body), `${path} ${JSON.stringify(body)}`)
            refusedAsNonexistent(
              yield* call("POST", consolePath, { ...session, body }),
              `${consolePath} ${JSON.stringify(body)}`,
            )
          }
        }
        const replays = yield* query(
          (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from webhook_replays`,
        )
        assert.strictEqual(replays[0]!.n, 0)
      }),
    )

    it.effect("are refused with 422 in a prospect's terms_accepted_at, storing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "strict-times-src", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-strict-times")
        for (const [n, value] of NONEXISTENT_TIMES.entries()) {
          const answer = yield* postProspect(partner, slug, {
            source: "strict-times-src",
            source_prospect_id: `p-${n}`,
            terms_accepted_at: value,
          })
          refusedAsNonexistent(answer, value)
          assert.include(answer.text, "terms_accepted_at", value)
        }
        const stored = yield* query(
          (sql) =>
            sql<
              Array<{ n: number }>
            >`select count(*)::int as n from prospects where source = 'strict-times-src'`,
        )
        assert.strictEqual(stored[0]!.n, 0)
      }),
    )

    it.effect("in an inbound event's time are logged as ignored, and touch no prospect", () =>
      Effect.gen(function* () {
        const setUp = yield* ingestSetUp("org-strict-times-ingest", "strict-times-ingest")
        for (const [n, updatedAt] of NONEXISTENT_TIMES.entries()) {
          const id = yield* send(setUp, envelope("strict-times-ingest", prospectUpdate(`e-${n}`, updatedAt)))
          const logged = yield* logOf("strict-times-ingest", id)
          assert.strictEqual(logged.outcome, "ignored", `${updatedAt}: ${logged.reason}`)
          assert.include(logged.reason ?? "", "occurred_at", updatedAt)
          assert.lengthOf(yield* prospectRows("strict-times-ingest", `e-${n}`), 0, updatedAt)
        }
      }),
    )
  })
})
