import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  postProspect,
  type ProspectBody,
  prospectService,
  UNIT,
  prospectSetUp,
} from "../support/Prospects.ts"
import { postBatch, query, type RosterPartner } from "../support/Roster.ts"
import { eventually, readStream } from "../support/Streams.ts"

const service = prospectService()

/** The unit's own coverage multiplier, so the decided coverage depends on the rent of the data decided. */
const MULTIPLIER = 1.5
const DENIED = "Screening result is denied"

/** Data whose decisions differ: coverage follows the rent, a denied screening refuses deposit insurance. */
const VARIANTS: ReadonlyArray<Record<string, unknown>> = [
  { monthly_rent_cents: 200_000, screening_result: "approved", first_name: "Ada" },
  { monthly_rent_cents: 310_000, screening_result: "denied", first_name: "Bea" },
  { monthly_rent_cents: 145_000, screening_result: "conditional", first_name: "Cy" },
]

/** Rounds of racing POSTs per test: enough for the interleavings to vary, bounded by the test's timeout. */
const ROUNDS = 10

interface StoredDecision {
  readonly version: number
  readonly decided_version: number | null
  readonly status: string
  readonly monthly_rent_cents: string
  readonly screening_result: string
  readonly effective_coverage_amount_cents: string | null
  readonly sdi_ineligibility_reasons: Array<string> | null
  readonly cd_ineligibility_reasons: Array<string> | null
  readonly eligible: boolean | null
}

const storedDecision = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql<Array<StoredDecision>>`
      select version, decided_version, status, monthly_rent_cents, screening_result,
             effective_coverage_amount_cents, sdi_ineligibility_reasons, cd_ineligibility_reasons, eligible
      from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  ).pipe(Effect.map(([row]) => row!))

/** What deciding the data `prospect` shows must give: computed from the final GET body only. */
const expectedFor = (prospect: ProspectBody["prospect"]) => {
  const rent = prospect.monthly_rent_cents as number
  const denied = prospect.screening_result === "denied"
  return {
    effective_coverage_amount_cents: Math.round(rent * MULTIPLIER),
    sdi_ineligibility_reasons: denied ? [DENIED] : [],
  }
}

/** Asserts the ready prospect carries the decision of the data stored last, on the API and in the row. */
const assertDecidedOnLastData = (ready: ProspectBody["prospect"], stored: StoredDecision, label: string) => {
  const expected = expectedFor(ready)
  assert.strictEqual(stored.status, "ready", label)
  assert.strictEqual(stored.decided_version, stored.version, `${label}: decided_version is not the version`)
  assert.strictEqual(Number(stored.monthly_rent_cents), ready.monthly_rent_cents, label)
  assert.strictEqual(stored.screening_result, ready.screening_result, label)
  assert.strictEqual(
    Number(stored.effective_coverage_amount_cents),
    expected.effective_coverage_amount_cents,
    `${label}: stored coverage is not the final rent × ${MULTIPLIER}`,
  )
  assert.deepStrictEqual(stored.sdi_ineligibility_reasons, expected.sdi_ineligibility_reasons, label)
  assert.deepStrictEqual(stored.cd_ineligibility_reasons, [], label)
  assert.strictEqual(stored.eligible, true, label)
  // The API shows the same decision.
  assert.strictEqual(
    ready.effective_coverage_amount_cents,
    expected.effective_coverage_amount_cents,
    `${label}: GET shows a coverage that is not the final rent × ${MULTIPLIER}`,
  )
  if (expected.sdi_ineligibility_reasons.length === 0) {
    assert.notProperty(ready, "sdi_ineligibility_reasons", label)
  } else {
    assert.deepStrictEqual(ready.sdi_ineligibility_reasons, expected.sdi_ineligibility_reasons, label)
  }
  assert.notProperty(ready, "cd_ineligibility_reasons", label)
  assert.isString(ready.enrollment_url, label)
}

/** The prospect's `eligibility.decided` messages, once the last one is for `version`. */
const decidedUpTo = (slug: string, prospectId: number, version: number) =>
  eventually(
    readStream("ELIGIBILITY").pipe(
      Effect.map((messages) =>
        messages
          .filter((m) => m.subject === `eligibility.decided.${slug}`)
          .map((m) => m.json as Record<string, unknown>)
          .filter((payload) => payload.prospect_id === String(prospectId)),
      ),
    ),
    (decided) => decided.some((payload) => payload.version === version),
  )

/** `events.<slug>.prospect.*` messages about one prospect, once its `prospect.ready` is out. */
const prospectEventsOnceReady = (slug: string, sourceProspectId: string) =>
  eventually(
    readStream("EVENTS").pipe(
      Effect.map((messages) =>
        messages
          .filter((m) => m.subject.startsWith(`events.${slug}.prospect.`))
          .map((m) => m.json as { event: string; data: { third_party_prospect: Record<string, unknown> } })
          .filter((envelope) => {
            const payload = envelope.data.third_party_prospect
            return envelope.event === "prospect.created"
              ? payload.id === sourceProspectId
              : payload.source_prospect_id === sourceProspectId
          }),
      ),
    ),
    (events) => events.some((e) => e.event === "prospect.ready"),
  )

/** The same prospect POSTed with each variant at once; the answers in variant order. */
const racePosts = (
  partner: RosterPartner,
  slug: string,
  source: string,
  sourceProspectId: string,
  round: number,
) =>
  Effect.all(
    VARIANTS.map((variant, index) =>
      postProspect(
        partner,
        slug,
        completeProspect(source, sourceProspectId, {
          ...variant,
          // Distinct rents in every round, so a decision of another round's data cannot pass for this one's.
          monthly_rent_cents: (variant.monthly_rent_cents as number) + round * 1_000 + index,
        }),
      ),
    ),
    { concurrency: "unbounded" },
  )

/** A partner, a source of its own and a provisioned owner whose unit carries MULTIPLIER. */
const setUp = (org: string, source: string) =>
  Effect.gen(function* () {
    const { partner, slug } = yield* prospectSetUp(org, source)
    yield* postBatch(partner, slug, "units", [
      { ...UNIT, default_coverage: { type: "multiplier", value: MULTIPLIER } },
    ])
    return { partner, slug }
  })

describe("racing prospect POSTs", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "creating one prospect from concurrent first POSTs: one 201, one prospect.created, the last data decided",
      () =>
        Effect.gen(function* () {
          const source = "vero-create"
          const { partner, slug } = yield* setUp("org-race-create", source)
          for (let round = 0; round < ROUNDS; round++) {
            const id = `race-new-${round}`
            const label = `round ${round}`
            const answers = yield* racePosts(partner, slug, source, id, round)
            for (const answer of answers) assert.strictEqual(answer.status, 200, answer.text)
            assert.deepStrictEqual(
              answers.map((a) => a.body.status_code).sort(),
              [200, 200, 201],
              `${label}: exactly one first POST creates`,
            )
            const ids = new Set(answers.map((a) => a.body.prospect.id))
            assert.strictEqual(ids.size, 1, `${label}: every POST wrote the same prospect`)

            const ready = yield* awaitProspect(partner, slug, source, id)
            const stored = yield* storedDecision(source, id)
            assert.strictEqual(stored.version, VARIANTS.length, `${label}: one version per POST`)
            assertDecidedOnLastData(ready, stored, label)
            // The data stored last is one of the racing POSTs' data, whole (no field from another one).
            const winner = VARIANTS.findIndex((v) => v.first_name === ready.first_name)
            assert.strictEqual(
              ready.monthly_rent_cents,
              (VARIANTS[winner]!.monthly_rent_cents as number) + round * 1_000 + winner,
              `${label}: the stored data mixes POSTs`,
            )
            assert.strictEqual(ready.screening_result, VARIANTS[winner]!.screening_result, label)

            const decided = yield* decidedUpTo(slug, ready.id, stored.version)
            const last = decided.at(-1)!
            assert.deepInclude(
              last,
              {
                version: stored.version,
                status: "ready",
                effective_coverage_amount_cents: expectedFor(ready).effective_coverage_amount_cents,
                sdi_ineligibility_reasons: expectedFor(ready).sdi_ineligibility_reasons,
              },
              `${label}: the last eligibility.decided is not the final data's decision`,
            )

            const events = yield* prospectEventsOnceReady(slug, id)
            assert.strictEqual(
              events.filter((e) => e.event === "prospect.created").length,
              1,
              `${label}: exactly one prospect.created`,
            )
          }
        }),
      120_000,
    )

    it.effect(
      "updating one prospect with concurrent POSTs never leaves an older data's decision on top",
      () =>
        Effect.gen(function* () {
          const source = "vero-update"
          const { partner, slug } = yield* setUp("org-race-update", source)
          const id = "race-existing"
          const first = yield* postProspect(partner, slug, completeProspect(source, id))
          assert.strictEqual(first.body.status_code, 201, first.text)
          yield* awaitProspect(partner, slug, source, id)

          let versions = 1
          for (let round = 0; round < ROUNDS; round++) {
            const label = `round ${round}`
            const answers = yield* racePosts(partner, slug, source, id, round)
            for (const answer of answers) {
              assert.strictEqual(answer.status, 200, answer.text)
              assert.strictEqual(answer.body.status_code, 200, `${label}: an update never creates`)
            }
            versions += VARIANTS.length

            const ready = yield* awaitProspect(partner, slug, source, id)
            const stored = yield* storedDecision(source, id)
            assert.strictEqual(stored.version, versions, `${label}: one version per POST`)
            assertDecidedOnLastData(ready, stored, label)
            const winner = VARIANTS.findIndex((v) => v.first_name === ready.first_name)
            assert.strictEqual(
              ready.monthly_rent_cents,
              (VARIANTS[winner]!.monthly_rent_cents as number) + round * 1_000 + winner,
              `${label}: the stored data mixes POSTs`,
            )
          }

          const prospectId = first.body.prospect.id
          const decided = yield* decidedUpTo(slug, prospectId, versions)
          assert.strictEqual(
            decided.at(-1)!.version,
            versions,
            "the last eligibility.decided is the last version",
          )
          const decidedVersions = decided.map((d) => d.version as number)
          assert.deepStrictEqual(
            decidedVersions,
            [...decidedVersions].sort((a, b) => a - b),
            "decisions are published in version order",
          )
          const events = yield* prospectEventsOnceReady(slug, id)
          assert.strictEqual(events.filter((e) => e.event === "prospect.created").length, 1)
        }),
      120_000,
    )
  })
})
