import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  postProspect,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually, readStream } from "../support/Streams.ts"

const service = prospectService()

/** The prospect's `eligibility.requested` payloads on the ELIGIBILITY stream. */
const requests = (prospectId: number) =>
  readStream("ELIGIBILITY").pipe(
    Effect.map((messages) =>
      messages
        .filter((m) => m.subject.startsWith("eligibility.requested."))
        .map((m) => m.json as Record<string, unknown>)
        .filter((payload) => payload.prospect_id === String(prospectId)),
    ),
  )

describe("a prospect whose decision was lost", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "left processing for a minute with its request acknowledged, is asked for again and decided; a recent one is left alone",
      () =>
        Effect.gen(function* () {
          const source = "lost-decision"
          const { partner, slug } = yield* prospectSetUp("org-lost-decision", source)
          for (const id of ["lost", "recent"]) {
            const posted = yield* postProspect(partner, slug, completeProspect(source, id))
            assert.strictEqual(posted.body.status_code, 201, posted.text)
          }
          const lost = yield* awaitProspect(partner, slug, source, "lost")
          yield* awaitProspect(partner, slug, source, "recent")
          assert.lengthOf(yield* requests(lost.id), 1)

          // What a failover to a standby that missed the decision's commit leaves: the version undecided,
          // `processing` since its write, and its request acknowledged. "recent" is the same, but only just written.
          yield* query(
            (sql) => sql`
              update prospects set status = 'processing', decided_version = null,
                     updated_at = case when source_prospect_id = 'lost' then now() - interval '90 seconds'
                                       else now() end
              where source = ${source}`,
          )
          const decided = yield* awaitProspect(partner, slug, source, "lost")
          assert.strictEqual(decided.status, "ready")
          const again = yield* eventually(requests(lost.id), (payloads) => payloads.length >= 2)
          assert.deepStrictEqual(again[1], again[0], "the same version asked for again")
          const [recent] = yield* query(
            (sql) => sql<Array<{ status: string }>>`
              select status from prospects where source = ${source} and source_prospect_id = 'recent'`,
          )
          assert.strictEqual(
            recent!.status,
            "processing",
            "a prospect processing for less than a minute waits",
          )
        }),
    )
  })
})
