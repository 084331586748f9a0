import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import {
  createClient,
  FORBIDDEN,
  gatewayPort,
  httpRequest,
  obtainToken,
  OWNER_NOT_FOUND,
  UNAUTHORIZED,
} from "../support/Auth.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  prospectPartner,
  prospectService,
  provisionedOwner,
  prospectSetUp,
} from "../support/Prospects.ts"
import { query, type RosterPartner } from "../support/Roster.ts"
import { eventually, readStream } from "../support/Streams.ts"

const RESIDENT_NOT_FOUND = `{"status_code":404,"error":"Resident not found."}`
const ROUTE_NOT_FOUND = `{"status_code":404,"error":"Not found."}`

/** The exact body of a test resident reset; nothing but prospects exists to reset yet. */
const residentReset = (prospectId: number) =>
  `{"reset":{"insurance_policy_ids":[],"unlinked_yardi_resident_ids":[],"reprocessed_prospect_id":${prospectId}},"status_code":200}`

/** The exact body of a reset by email. */
const emailReset = (prospectIds: ReadonlyArray<number>) =>
  `{"reset":{"prospect_ids":[${prospectIds.join(",")}],"insurance_policy_ids":[]},"status_code":200}`

/** `DELETE /partners/{slug}/test/residents/{source}/{id}`, sent as the published reference shows it. */
const deleteTestResident = (
  token: string | undefined,
  slug: string,
  source: string,
  sourceProspectId: string,
) =>
  Effect.gen(function* () {
    return yield* httpRequest(
      yield* gatewayPort("partner-api"),
      `/partners/${slug}/test/residents/${encodeURIComponent(source)}/${encodeURIComponent(sourceProspectId)}`,
      {
        method: "DELETE",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
      },
    )
  })

/** `DELETE /residents/reset` with the given query parameters (absent ones left out). */
const deleteResidents = (token: string | undefined, params: Record<string, string>) =>
  Effect.gen(function* () {
    const search = new URLSearchParams(params).toString()
    return yield* httpRequest(
      yield* gatewayPort("partner-api"),
      `/residents/reset${search === "" ? "" : `?${search}`}`,
      {
        method: "DELETE",
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      },
    )
  })

/** The prospect's row count in the database (0 once reset). */
const rowsOf = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql<Array<{ id: string; version: number }>>`
      select id, version from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  )

/** `prospect.created` envelopes about one prospect on the EVENTS stream, once there are `count` of them. */
const createdEvents = (slug: string, sourceProspectId: string, count: number) =>
  eventually(
    readStream("EVENTS").pipe(
      Effect.map((messages) =>
        messages
          .filter((m) => m.subject === `events.${slug}.prospect.created`)
          .map((m) => m.json as { data: { third_party_prospect: { id: string } } })
          .filter((envelope) => envelope.data.third_party_prospect.id === sourceProspectId),
      ),
    ),
    (events) => events.length >= count,
  )

/** A partner with a source of its own and an active owner it was granted. */
const setUp = prospectSetUp

/** A token for a client granted `owners` with only `scopes`. */
const tokenWith = (scopes: ReadonlyArray<string>, owners: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "partner", scopes, owners })
    return yield* obtainToken("partner", client)
  })

const posted = (partner: RosterPartner, slug: string, prospect: Record<string, unknown>) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.body
  })

/**
 * Holds the prospect's row lock in a transaction of its own, so a reset and a POST can be lined up behind it;
 * `release` commits that transaction.
 */
const holdRowLock = (prospectId: number) =>
  Effect.gen(function* () {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    const holder = yield* Effect.forkChild(
      query((sql) =>
        sql.begin(async (tx) => {
          await tx`select id from prospects where id = ${prospectId} for update`
          locked()
          await released
        }),
      ),
    )
    yield* Effect.promise(() => isLocked)
    return Effect.sync(release).pipe(Effect.andThen(Fiber.join(holder)))
  })

/** Until at least `count` sessions of the test's database wait for a lock (row or advisory). */
const lockWaiters = (count: number) =>
  eventually(
    query(
      (sql) => sql<Array<{ n: number }>>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`,
    ).pipe(Effect.map(([row]) => row!.n)),
    (n) => n >= count,
  )

describe("staging reset routes (SERVICE_ENV=staging)", () => {
  layer(prospectService({ SERVICE_ENV: "staging" }).layer, { excludeTestServices: true, timeout: 60_000 })(
    (it) => {
      it.effect(
        "DELETE /partners/{owner_slug}/test/residents/{source}/{id} removes the prospect; the next POST creates it",
        () =>
          Effect.gen(function* () {
            const source = "stg-one"
            const { partner, slug } = yield* setUp("org-stg-one", source)
            const first = yield* posted(partner, slug, completeProspect(source, "res-1"))
            assert.strictEqual(first.status_code, 201)
            yield* awaitProspect(partner, slug, source, "res-1")

            const reset = yield* deleteTestResident(partner.token, slug, source, "res-1")
            assert.strictEqual(reset.status, 200, reset.text)
            assert.strictEqual(reset.text, residentReset(first.prospect.id))
            assert.match(reset.headers.get("content-type") ?? "", /^application\/json/)
            assert.lengthOf(yield* rowsOf(source, "res-1"), 0)
            const gone = yield* getProspect(partner, slug, source, "res-1")
            assert.strictEqual(gone.status, 404, gone.text)

            const again = yield* deleteTestResident(partner.token, slug, source, "res-1")
            assert.strictEqual(again.status, 404)
            assert.strictEqual(again.text, RESIDENT_NOT_FOUND)

            // The identifiers are free again: the next POST creates the prospect, announced again.
            const recreated = yield* posted(
              partner,
              slug,
              completeProspect(source, "res-1", { monthly_rent_cents: 180_000 }),
            )
            assert.strictEqual(recreated.status_code, 201)
            assert.strictEqual(recreated.prospect.status, "processing")
            const [row] = yield* rowsOf(source, "res-1")
            assert.strictEqual(row!.version, 1, "a fresh record, not the old one's next version")
            const ready = yield* awaitProspect(partner, slug, source, "res-1")
            assert.strictEqual(ready.effective_coverage_amount_cents, 180_000)
            assert.isString(ready.enrollment_url)
            const created = yield* createdEvents(slug, "res-1", 2)
            assert.lengthOf(created, 2, "one prospect.created per creation")
          }),
      )

      it.effect(
        "resetting a prospect while its eligibility is pending, then reusing it, decides the new one",
        () =>
          Effect.gen(function* () {
            const source = "stg-pending"
            const { partner, slug } = yield* setUp("org-stg-pending", source)
            const first = yield* posted(partner, slug, completeProspect(source, "res-p"))
            const reset = yield* deleteTestResident(partner.token, slug, source, "res-p")
            assert.strictEqual(reset.text, residentReset(first.prospect.id))

            const recreated = yield* posted(
              partner,
              slug,
              completeProspect(source, "res-p", { screening_result: "denied" }),
            )
            assert.strictEqual(recreated.status_code, 201)
            const ready = yield* awaitProspect(partner, slug, source, "res-p")
            assert.deepStrictEqual(ready.sdi_ineligibility_reasons, ["Screening result is denied"])
            const [row] = yield* rowsOf(source, "res-p")
            assert.strictEqual(row!.version, 1)
          }),
      )

      it.effect(
        "the test resident route answers 404 for an unknown or another owner's prospect, and checks the owner",
        () =>
          Effect.gen(function* () {
            const source = "stg-guard"
            const { partner, slug } = yield* setUp("org-stg-guard", source)
            const otherSlug = yield* provisionedOwner(partner, "org-stg-guard-other")
            yield* posted(partner, slug, completeProspect(source, "mine"))

            const unknown = yield* deleteTestResident(partner.token, slug, source, "nobody")
            assert.strictEqual(unknown.status, 404)
            assert.strictEqual(unknown.text, RESIDENT_NOT_FOUND)
            const unknownSource = yield* deleteTestResident(partner.token, slug, "no-such-source", "mine")
            assert.strictEqual(unknownSource.text, RESIDENT_NOT_FOUND)

            // Under another owner of the same partner, the prospect is not found and stays.
            const elsewhere = yield* deleteTestResident(partner.token, otherSlug, source, "mine")
            assert.strictEqual(elsewhere.status, 404)
            assert.strictEqual(elsewhere.text, RESIDENT_NOT_FOUND)
            assert.lengthOf(yield* rowsOf(source, "mine"), 1)

            const unknownOwner = yield* deleteTestResident(partner.token, "no-such-owner", source, "mine")
            assert.strictEqual(unknownOwner.status, 404)
            assert.strictEqual(unknownOwner.text, OWNER_NOT_FOUND)

            const stranger = yield* prospectPartner()
            const ungranted = yield* deleteTestResident(stranger.token, slug, source, "mine")
            assert.strictEqual(ungranted.status, 403)
            assert.strictEqual(ungranted.text, FORBIDDEN)

            const readOnly = yield* tokenWith(["prospects:read"], [slug])
            const noScope = yield* deleteTestResident(readOnly, slug, source, "mine")
            assert.strictEqual(noScope.status, 403)
            assert.strictEqual(noScope.text, FORBIDDEN)

            const anonymous = yield* deleteTestResident(undefined, slug, source, "mine")
            assert.strictEqual(anonymous.status, 401)
            assert.strictEqual(anonymous.text, UNAUTHORIZED)

            assert.lengthOf(yield* rowsOf(source, "mine"), 1, "no refused call removed anything")
          }),
      )

      it.effect(
        "DELETE /residents/reset removes the owner's prospects with the email (any case), and only those",
        () =>
          Effect.gen(function* () {
            const source = "stg-email"
            const { partner, slug } = yield* setUp("org-stg-email", source)
            const otherSlug = yield* provisionedOwner(partner, "org-stg-email-other")
            const email = "renter+reset@example.com"
            const one = yield* posted(partner, slug, completeProspect(source, "e-1", { email }))
            const two = yield* posted(
              partner,
              slug,
              completeProspect(source, "e-2", { email: "Renter+Reset@Example.COM" }),
            )
            yield* posted(partner, slug, completeProspect(source, "e-3", { email: "someone@example.com" }))
            yield* posted(partner, otherSlug, completeProspect(source, "e-other", { email }))

            const reset = yield* deleteResidents(partner.token, { email, owner_slug: slug })
            assert.strictEqual(reset.status, 200, reset.text)
            assert.strictEqual(
              reset.text,
              emailReset([one.prospect.id, two.prospect.id].sort((a, b) => a - b)),
            )
            assert.lengthOf(yield* rowsOf(source, "e-1"), 0)
            assert.lengthOf(yield* rowsOf(source, "e-2"), 0)
            assert.lengthOf(yield* rowsOf(source, "e-3"), 1, "another email stays")
            assert.lengthOf(yield* rowsOf(source, "e-other"), 1, "another owner's prospect stays")

            const nothingLeft = yield* deleteResidents(partner.token, { email, owner_slug: slug })
            assert.strictEqual(nothingLeft.status, 200)
            assert.strictEqual(nothingLeft.text, emailReset([]))

            const recreated = yield* posted(partner, slug, completeProspect(source, "e-1", { email }))
            assert.strictEqual(recreated.status_code, 201)
            yield* awaitProspect(partner, slug, source, "e-1")
            assert.lengthOf(yield* createdEvents(slug, "e-1", 2), 2)
          }),
      )

      it.effect(
        "DELETE /residents/reset checks the owner of the query: unknown 404, ungranted 403; 422 without email or owner",
        () =>
          Effect.gen(function* () {
            const source = "stg-email-guard"
            const { partner, slug } = yield* setUp("org-stg-email-guard", source)
            const email = "guarded@example.com"
            yield* posted(partner, slug, completeProspect(source, "g-1", { email }))

            const unknownOwner = yield* deleteResidents(partner.token, { email, owner_slug: "no-such-owner" })
            assert.strictEqual(unknownOwner.status, 404)
            assert.strictEqual(unknownOwner.text, OWNER_NOT_FOUND)

            const stranger = yield* prospectPartner()
            const ungranted = yield* deleteResidents(stranger.token, { email, owner_slug: slug })
            assert.strictEqual(ungranted.status, 403)
            assert.strictEqual(ungranted.text, FORBIDDEN)

            const readOnly = yield* tokenWith(["prospects:read"], [slug])
            const noScope = yield* deleteResidents(readOnly, { email, owner_slug: slug })
            assert.strictEqual(noScope.status, 403)
            assert.strictEqual(noScope.text, FORBIDDEN)

            const anonymous = yield* deleteResidents(undefined, { email, owner_slug: slug })
            assert.strictEqual(anonymous.status, 401)
            assert.strictEqual(anonymous.text, UNAUTHORIZED)

            const cases: ReadonlyArray<[Record<string, string>, ReadonlyArray<string>]> = [
              [{ owner_slug: slug }, ["email"]],
              [{ email: "", owner_slug: slug }, ["email"]],
              [{ email: "   ", owner_slug: slug }, ["email"]],
              [{ email }, ["owner_slug"]],
              [{ email, owner_slug: "" }, ["owner_slug"]],
              [{}, ["email", "owner_slug"]],
            ]
            for (const [params, fields] of cases) {
              const refused = yield* deleteResidents(partner.token, params)
              const label = JSON.stringify(params)
              assert.strictEqual(refused.status, 422, `${label}: ${refused.text}`)
              const body = JSON.parse(refused.text) as Record<string, unknown>
              assert.strictEqual(body.status_code, 422, label)
              assert.isString(body.error, label)
              assert.deepStrictEqual(Object.keys(body.reset as object).sort(), [...fields].sort(), label)
            }

            assert.lengthOf(yield* rowsOf(source, "g-1"), 1, "no refused call removed anything")
          }),
      )

      it.effect(
        "a test resident reset racing a POST of the same prospect: either order, never a lost write",
        () =>
          Effect.gen(function* () {
            const source = "stg-race-one"
            const { partner, slug } = yield* setUp("org-stg-race-one", source)
            const first = yield* posted(partner, slug, completeProspect(source, "race-1"))
            yield* awaitProspect(partner, slug, source, "race-1")

            const release = yield* holdRowLock(first.prospect.id)
            const reset = yield* Effect.forkChild(deleteTestResident(partner.token, slug, source, "race-1"))
            yield* lockWaiters(1)
            const post = yield* Effect.forkChild(
              postProspect(
                partner,
                slug,
                completeProspect(source, "race-1", { monthly_rent_cents: 123_000 }),
              ),
            )
            yield* lockWaiters(2)
            yield* release
            const resetAnswer = yield* Fiber.join(reset)
            const postAnswer = yield* Fiber.join(post)

            assert.strictEqual(resetAnswer.text, residentReset(first.prospect.id))
            assert.strictEqual(postAnswer.status, 200, postAnswer.text)
            const rows = yield* rowsOf(source, "race-1")
            if (postAnswer.body.status_code === 201) {
              // The reset went first: the POST created the prospect again.
              assert.lengthOf(rows, 1)
              const ready = yield* awaitProspect(partner, slug, source, "race-1")
              assert.strictEqual(ready.monthly_rent_cents, 123_000)
            } else {
              // The POST went first: the reset removed its write.
              assert.strictEqual(postAnswer.body.status_code, 200)
              assert.lengthOf(rows, 0)
            }
          }),
      )

      it.effect(
        "a reset by email racing a POST that changes the email: the POST's prospect survives in either order",
        () =>
          Effect.gen(function* () {
            const source = "stg-race-email"
            const { partner, slug } = yield* setUp("org-stg-race-email", source)
            const email = "before@example.com"
            const first = yield* posted(partner, slug, completeProspect(source, "race-e", { email }))
            yield* awaitProspect(partner, slug, source, "race-e")

            const release = yield* holdRowLock(first.prospect.id)
            const reset = yield* Effect.forkChild(deleteResidents(partner.token, { email, owner_slug: slug }))
            yield* lockWaiters(1)
            const post = yield* Effect.forkChild(
              postProspect(partner, slug, completeProspect(source, "race-e", { email: "after@example.com" })),
            )
            yield* lockWaiters(2)
            yield* release
            const resetAnswer = yield* Fiber.join(reset)
            const postAnswer = yield* Fiber.join(post)

            assert.strictEqual(resetAnswer.status, 200, resetAnswer.text)
            assert.strictEqual(postAnswer.status, 200, postAnswer.text)
            const resetIds = (JSON.parse(resetAnswer.text) as { reset: { prospect_ids: Array<number> } })
              .reset.prospect_ids
            // Reset first: it removed the old prospect and the POST created it again (201). POST first: the
            // prospect no longer has the reset's email, so the reset leaves it (200). Either way it exists,
            // with the POSTed email.
            const after = yield* getProspect(partner, slug, source, "race-e")
            const outcome =
              `POST answered status_code ${postAnswer.body.status_code}, the reset removed ` +
              `${JSON.stringify(resetIds)} (prospect ${first.prospect.id}), GET answers ${after.status}`
            assert.strictEqual(after.status, 200, `the POSTed prospect is gone: ${outcome}`)
            assert.strictEqual(
              postAnswer.body.status_code === 201,
              resetIds.includes(first.prospect.id),
              outcome,
            )
            assert.strictEqual(after.body.prospect.email, "after@example.com")
          }),
      )

      it.effect("the reference documents both reset routes", () =>
        Effect.gen(function* () {
          const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
          const paths = Object.keys((JSON.parse(answer.text) as { paths: Record<string, unknown> }).paths)
          assert.include(paths, "/partners/{owner_slug}/test/residents/{source}/{source_prospect_id}")
          assert.include(paths, "/residents/reset")
        }),
      )
    },
  )
})

describe("reset routes outside staging", () => {
  layer(prospectService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("both routes answer 404 and remove nothing", () =>
      Effect.gen(function* () {
        const source = "prod-like"
        const { partner, slug } = yield* setUp("org-prod-like", source)
        const email = "kept@example.com"
        yield* posted(partner, slug, completeProspect(source, "kept", { email }))

        const resident = yield* deleteTestResident(partner.token, slug, source, "kept")
        assert.strictEqual(resident.status, 404)
        assert.strictEqual(resident.text, ROUTE_NOT_FOUND)
        const residents = yield* deleteResidents(partner.token, { email, owner_slug: slug })
        assert.strictEqual(residents.status, 404)
        assert.strictEqual(residents.text, ROUTE_NOT_FOUND)

        assert.lengthOf(yield* rowsOf(source, "kept"), 1)
        const fetched = yield* getProspect(partner, slug, source, "kept")
        assert.strictEqual(fetched.status, 200)

        const reference = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const paths = Object.keys((JSON.parse(reference.text) as { paths: Record<string, unknown> }).paths)
        assert.notInclude(paths, "/partners/{owner_slug}/test/residents/{source}/{source_prospect_id}")
        assert.notInclude(paths, "/residents/reset")
      }),
    )
  })
})
