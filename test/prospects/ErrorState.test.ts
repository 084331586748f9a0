import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { partitionOf } from "../../backend/platform/Partition.ts"
import { ELIGIBILITY_PARTITIONS, prospectKey } from "../../backend/prospects/Events.ts"
import { Prospects } from "../../backend/prospects/Prospects.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  type ProspectBody,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually, readStream } from "../support/Streams.ts"

const service = prospectService()

/** The fault: the database refuses every move of a prospect to `ready`, so each decision dies recording itself. */
const FAULT = "test fault: prospects may not become ready"

const breakDecisions = query(async (sql) => {
  await sql.unsafe(`
    create or replace function refuse_ready() returns trigger language plpgsql as $$
    begin
      raise exception '${FAULT}';
    end
    $$`)
  await sql.unsafe(`
    create trigger refuse_ready before update on prospects
    for each row when (new.status = 'ready') execute function refuse_ready()`)
})

const repairDecisions = query((sql) => sql.unsafe(`drop trigger if exists refuse_ready on prospects`))

/** The retries take about 3 s (200 + 400 + 800 + 1600 ms) per prospect; one partition may hold several. */
const TIMEOUT = 60_000

const REASON = /^eligibility check failed 5 times: .*test fault: prospects may not become ready/

interface StoredState {
  readonly status: string
  readonly version: number
  readonly decided_version: number | null
  readonly error_reason: string | null
  readonly eligible: boolean | null
  readonly effective_coverage_amount_cents: string | null
}

const stored = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql<Array<StoredState>>`
      select status, version, decided_version, error_reason, eligible, effective_coverage_amount_cents
      from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  ).pipe(Effect.map(([row]) => row!))

const isError = (prospect: ProspectBody["prospect"]) => prospect.status === "error"

/** The prospect's `eligibility.decided.<slug>` payloads on the ELIGIBILITY stream, once `check` holds. */
const decidedMessages = (
  slug: string,
  prospectId: number,
  check: (payloads: ReadonlyArray<Record<string, unknown>>) => boolean,
) =>
  eventually(
    readStream("ELIGIBILITY").pipe(
      Effect.map((messages) =>
        messages
          .filter((m) => m.subject === `eligibility.decided.${slug}`)
          .map((m) => m.json as Record<string, unknown>)
          .filter((payload) => payload.prospect_id === String(prospectId)),
      ),
    ),
    check,
  )

/** A partner with a source of its own, an active owner, and the fault in place. */
const setUp = (org: string, source: string) =>
  Effect.gen(function* () {
    const setUp = yield* prospectSetUp(org, source)
    yield* breakDecisions
    return setUp
  })

describe("prospect status error", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "moves a prospect whose eligibility keeps failing to error, with the reason on GET and eligibility.decided",
      () =>
        Effect.gen(function* () {
          const source = "err-enter"
          const { partner, slug } = yield* setUp("org-err-enter", source)
          const posted = yield* postProspect(partner, slug, completeProspect(source, "e-1"))
          assert.strictEqual(posted.body.status_code, 201, posted.text)
          assert.strictEqual(posted.body.prospect.status, "processing")
          assert.notProperty(posted.body.prospect, "error_reason", "no error_reason outside status error")

          const failed = yield* awaitProspect(partner, slug, source, "e-1", isError)
          assert.match(failed.error_reason as string, REASON)
          assert.isNull(failed.enrollment_url)
          assert.isNull(failed.hosted_enrollment_url)
          assert.isNull(failed.effective_coverage_amount_cents)
          assert.notProperty(failed, "sdi_ineligibility_reasons")
          assert.notProperty(failed, "cd_ineligibility_reasons")

          const row = yield* stored(source, "e-1")
          assert.strictEqual(row.status, "error")
          assert.strictEqual(row.version, 1)
          assert.isNull(row.decided_version, "nothing was decided")
          assert.strictEqual(row.error_reason, failed.error_reason)

          const decided = yield* decidedMessages(slug, failed.id, (payloads) =>
            payloads.some((p) => p.status === "error"),
          )
          assert.strictEqual(decided.length, 1, "one eligibility.decided, for the error")
          assert.deepInclude(decided[0]!, {
            prospect_id: String(failed.id),
            version: 1,
            source,
            source_prospect_id: "e-1",
            status: "error",
            error_reason: failed.error_reason,
          })

          // It stays in error: nothing retries it on its own. With the fault gone a retry would make it ready; a
          // control prospect on its partition (whose requests are handled one at a time, in order) is decided after
          // any retry of it, so once the control is ready, such a retry would have been made.
          yield* repairDecisions
          const partition = partitionOf(prospectKey(String(failed.id)), ELIGIBILITY_PARTITIONS)
          let control: string | undefined
          for (let i = 0; control === undefined; i++) {
            const candidate = yield* postProspect(partner, slug, completeProspect(source, `control-${i}`))
            assert.strictEqual(candidate.body.status_code, 201, candidate.text)
            const id = String(candidate.body.prospect.id)
            if (partitionOf(prospectKey(id), ELIGIBILITY_PARTITIONS) === partition) control = `control-${i}`
          }
          yield* awaitProspect(partner, slug, source, control)
          const later = yield* getProspect(partner, slug, source, "e-1")
          assert.strictEqual(later.body.prospect.status, "error")
          assert.strictEqual(later.body.prospect.error_reason, failed.error_reason)
          assert.deepInclude(yield* stored(source, "e-1"), {
            status: "error",
            version: 1,
            decided_version: null,
          })
        }).pipe(Effect.ensuring(repairDecisions)),
      TIMEOUT,
    )

    it.effect(
      "leaves error on the next POST: complete goes through processing to ready, incomplete to incomplete",
      () =>
        Effect.gen(function* () {
          const source = "err-repost"
          const { partner, slug } = yield* setUp("org-err-repost", source)
          yield* postProspect(partner, slug, completeProspect(source, "r-complete"))
          yield* postProspect(partner, slug, completeProspect(source, "r-incomplete"))
          yield* awaitProspect(partner, slug, source, "r-complete", isError)
          yield* awaitProspect(partner, slug, source, "r-incomplete", isError)
          yield* repairDecisions

          const again = yield* postProspect(partner, slug, completeProspect(source, "r-complete"))
          assert.strictEqual(again.status, 200, again.text)
          assert.strictEqual(again.body.status_code, 200)
          assert.strictEqual(again.body.prospect.status, "processing")
          assert.notProperty(again.body.prospect, "error_reason")
          const ready = yield* awaitProspect(partner, slug, source, "r-complete")
          assert.notProperty(ready, "error_reason")
          assert.strictEqual(ready.effective_coverage_amount_cents, 200_000)
          assert.isString(ready.enrollment_url)
          const row = yield* stored(source, "r-complete")
          assert.deepInclude(row, { status: "ready", version: 2, decided_version: 2, error_reason: null })
          const decided = yield* decidedMessages(slug, ready.id, (payloads) =>
            payloads.some((p) => p.status === "ready"),
          )
          assert.deepStrictEqual(
            decided.map((p) => [p.version, p.status]),
            [
              [1, "error"],
              [2, "ready"],
            ],
          )
          assert.isNull(decided[1]!.error_reason)

          const incomplete = yield* postProspect(
            partner,
            slug,
            completeProspect(source, "r-incomplete", { phone: null }),
          )
          assert.strictEqual(incomplete.status, 200, incomplete.text)
          assert.strictEqual(incomplete.body.prospect.status, "incomplete")
          assert.deepStrictEqual(incomplete.body.prospect.missing_fields, ["phone"])
          assert.notProperty(incomplete.body.prospect, "error_reason")
          const fetched = yield* getProspect(partner, slug, source, "r-incomplete")
          assert.strictEqual(fetched.body.prospect.status, "incomplete")
          assert.notProperty(fetched.body.prospect, "error_reason")
          assert.isNull((yield* stored(source, "r-incomplete")).error_reason)

          // An incomplete prospect cannot be rechecked; completing it by POST decides it.
          const prospects = yield* Effect.service(Prospects)
          const refused = yield* prospects.recheck(source, "r-incomplete").pipe(Effect.flip)
          assert.strictEqual(refused._tag, "ProspectIncomplete")
          yield* postProspect(partner, slug, completeProspect(source, "r-incomplete"))
          const completed = yield* awaitProspect(partner, slug, source, "r-incomplete")
          assert.notProperty(completed, "error_reason")
        }).pipe(Effect.ensuring(repairDecisions)),
      TIMEOUT,
    )

    it.effect(
      "leaves error on an operator's recheck once the cause is fixed",
      () =>
        Effect.gen(function* () {
          const source = "err-recheck"
          const { partner, slug } = yield* setUp("org-err-recheck", source)
          yield* postProspect(partner, slug, completeProspect(source, "c-1"))
          const failed = yield* awaitProspect(partner, slug, source, "c-1", isError)
          assert.match(failed.error_reason as string, REASON)
          yield* repairDecisions

          const prospects = yield* Effect.service(Prospects)
          const rechecked = yield* prospects.recheck(source, "c-1")
          assert.strictEqual(rechecked.owner_slug, slug)
          assert.strictEqual(rechecked.prospect.status, "processing")
          assert.notProperty(rechecked.prospect, "error_reason")

          const ready = yield* awaitProspect(partner, slug, source, "c-1")
          assert.notProperty(ready, "error_reason")
          assert.strictEqual(ready.effective_coverage_amount_cents, 200_000)
          assert.isString(ready.enrollment_url)
          const row = yield* stored(source, "c-1")
          assert.deepInclude(row, { status: "ready", version: 2, decided_version: 2, error_reason: null })
          assert.strictEqual(row.eligible, true)
          const decided = yield* decidedMessages(slug, ready.id, (payloads) =>
            payloads.some((p) => p.status === "ready"),
          )
          assert.deepStrictEqual(
            decided.map((p) => [p.version, p.status]),
            [
              [1, "error"],
              [2, "ready"],
            ],
          )
        }).pipe(Effect.ensuring(repairDecisions)),
      TIMEOUT,
    )
  })
})
