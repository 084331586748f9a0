import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { EventName } from "../../backend/events/Catalog.ts"
import { Envelopes } from "../../backend/events/Envelope.ts"
import {
  awaitProspect,
  completeProspect,
  ENROLLMENT_HOST,
  getProspect,
  issueSource,
  postProspect,
  prospectPartner,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import { postBatch, type RosterPartner } from "../support/Roster.ts"
import { eventually, readStream, type StoredMessage } from "../support/Streams.ts"

const service = prospectService()

/** What `prospect.ready` and `prospect.incomplete` carry as `third_party_prospect`. */
type Payload = Record<string, unknown>

interface Body {
  readonly event: string
  readonly property_owner_slug: string
  readonly data: { readonly third_party_prospect: Payload }
}

/** A partner, a source issued to it and an owner provisioned as the spec orders it (prop-1 / unit-1). */
const setup = (
  org: string,
  options: {
    readonly flow?: "embedded" | "expedited"
    readonly optionalIngestFields?: boolean
    readonly active?: boolean
    readonly owner?: Record<string, unknown>
  } = {},
) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    const source = `src-${org}`
    yield* issueSource({
      code: source,
      clients: [partner.clientId],
      ...(options.flow ? { flow: options.flow } : {}),
      ...(options.optionalIngestFields ? { optionalIngestFields: true } : {}),
    })
    const slug = yield* provisionedOwner(partner, org, {
      ...(options.active === undefined ? {} : { active: options.active }),
      ...(options.owner ? { owner: options.owner } : {}),
    })
    return { partner, source, slug }
  })

/** The event name a message's subject carries after `events.<owner_slug>.`. */
const eventOf = (slug: string, message: StoredMessage) => message.subject.slice(`events.${slug}.`.length)

const payloadOf = (message: StoredMessage) => (message.json as Body).data.third_party_prospect

/** The owner's EVENTS messages about one prospect, in stream order. */
const prospectMessages = (slug: string, sourceProspectId: string) =>
  readStream("EVENTS").pipe(
    Effect.map((messages) =>
      messages.filter((m) => {
        if (!m.subject.startsWith(`events.${slug}.`)) return false
        const payload = payloadOf(m)
        return eventOf(slug, m) === "prospect.created"
          ? payload.id === sourceProspectId
          : payload.source_prospect_id === sourceProspectId
      }),
    ),
  )

/**
 * Waits until at least `count` messages about the prospect are on EVENTS; every one of them must be a body
 * that its event's envelope schema accepts, with nothing extra, and whose `event` matches its subject.
 */
const awaitEvents = (slug: string, sourceProspectId: string, count: number) =>
  Effect.gen(function* () {
    const messages = yield* eventually(
      prospectMessages(slug, sourceProspectId),
      (found) => found.length >= count,
    )
    for (const message of messages) {
      const event = eventOf(slug, message) as EventName
      assert.property(Envelopes, event, `${message.subject} names a catalog event`)
      assert.doesNotThrow(
        () => Schema.decodeUnknownSync(Envelopes[event])(message.json, { onExcessProperty: "error" }),
        undefined,
        undefined,
        `${message.subject} is a valid ${event} body`,
      )
      assert.strictEqual((message.json as Body).event, event)
      assert.deepStrictEqual(Object.keys(message.json as object).sort(), [
        "data",
        "event",
        "property_owner_slug",
      ])
    }
    return messages
  })

const subjects = (slug: string, ...events: ReadonlyArray<string>) => events.map((e) => `events.${slug}.${e}`)

const createdBody = (slug: string, sourceProspectId: string): Body => ({
  event: "prospect.created",
  property_owner_slug: slug,
  data: { third_party_prospect: { id: sourceProspectId } },
})

const body = (event: "prospect.ready" | "prospect.incomplete", slug: string, payload: Payload): Body => ({
  event,
  property_owner_slug: slug,
  data: { third_party_prospect: payload },
})

/** The PMS identifiers `completeProspect` sends, as the payload echoes them. */
const PMS = {
  pms_type: "yardi",
  pms_property_id: "pms-prop-1",
  pms_unit_id: "pms-unit-1",
  pms_prospect_id: "prospect-789",
}

const link = (
  flow: "embedded" | "expedited",
  slug: string,
  source: string,
  sourceProspectId: string,
  encodedEmail = "renter%40example.com",
) => `${ENROLLMENT_HOST}/enrollment/${flow}/${slug}/${source}/${sourceProspectId}?email=${encodedEmail}`

const NO_URLS = { enrollment_url: null, hosted_enrollment_url: null }

/** `{host}/enrollment/embedded/...` and its hosted `/enrollment/expedited/` twin. */
const embeddedUrls = (slug: string, source: string, sourceProspectId: string, encodedEmail?: string) => ({
  enrollment_url: link("embedded", slug, source, sourceProspectId, encodedEmail),
  hosted_enrollment_url: link("expedited", slug, source, sourceProspectId, encodedEmail),
})

const post = (partner: RosterPartner, slug: string, prospect: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.body
  })

describe("prospect status", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    describe("none -> processing -> ready", () => {
      it.effect(
        "a first POST with all required fields answers processing (status_code 201), emits prospect.created, then eligibility moves it to ready and emits prospect.ready",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-first")
            const posted = yield* post(partner, slug, completeProspect(source, "p-first"))
            assert.strictEqual(posted.status_code, 201)
            assert.strictEqual(posted.prospect.status, "processing")
            assert.strictEqual(posted.prospect.enrollment_url, null)
            assert.strictEqual(posted.prospect.hosted_enrollment_url, null)
            const id = posted.prospect.id

            const ready = yield* awaitProspect(partner, slug, source, "p-first")
            assert.strictEqual(ready.id, id, "eligibility decides the same record")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-first"))
            assert.notProperty(ready, "sdi_ineligibility_reasons", "omitted when nothing to report")
            assert.notProperty(ready, "cd_ineligibility_reasons", "omitted when nothing to report")

            const messages = yield* awaitEvents(slug, "p-first", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
              "prospect.created comes before prospect.ready",
            )
            assert.isBelow(messages[0]!.seq, messages[1]!.seq)
            assert.deepStrictEqual(messages[0]!.json, createdBody(slug, "p-first"))
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${id}`,
                source_prospect_id: "p-first",
                status: "ready",
                ...embeddedUrls(slug, source, "p-first"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect("any outcome, including ineligible, ends in ready with prospect.ready", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-denied")
          const posted = yield* post(
            partner,
            slug,
            completeProspect(source, "p-denied", {
              lease_start_date: "2019-01-01",
              lease_end_date: "2020-01-01",
            }),
          )
          assert.strictEqual(posted.prospect.status, "processing")
          const ready = yield* awaitProspect(partner, slug, source, "p-denied")
          assert.deepInclude(ready, NO_URLS)
          assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Lease has already ended")
          const messages = yield* awaitEvents(slug, "p-denied", 2)
          assert.deepStrictEqual(
            messages.map((m) => m.subject),
            subjects(slug, "prospect.created", "prospect.ready"),
          )
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-denied",
              status: "ready",
              ...NO_URLS,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
      )

      it.effect(
        "every complete POST of a ready prospect decides it again: processing, then another prospect.ready, never a second prospect.created",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-again")
            const first = yield* post(partner, slug, completeProspect(source, "p-again"))
            yield* awaitEvents(slug, "p-again", 2)
            const again = yield* post(partner, slug, completeProspect(source, "p-again"))
            assert.strictEqual(again.status_code, 200, "an update, not a create")
            assert.strictEqual(again.prospect.id, first.prospect.id, "the same record")
            assert.strictEqual(again.prospect.status, "processing")
            const messages = yield* awaitEvents(slug, "p-again", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.ready"),
            )
            assert.deepStrictEqual(messages[2]!.json, messages[1]!.json)
            assert.strictEqual((yield* awaitProspect(partner, slug, source, "p-again")).status, "ready")

            // A changed email is decided again too, and the new links carry it.
            const changed = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-again",
              email: "new.renter@example.com",
            })
            assert.strictEqual(changed.prospect.status, "processing")
            const redecided = yield* awaitEvents(slug, "p-again", 4)
            assert.deepStrictEqual(
              redecided.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.ready", "prospect.ready"),
            )
            assert.deepInclude(
              payloadOf(redecided[3]!),
              embeddedUrls(slug, source, "p-again", "new.renter%40example.com"),
            )
          }),
      )

      it.effect(
        "on a source configured for optional ingest fields, a prospect without screening_result, employment_status and yearly_income is complete",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-optional", { optionalIngestFields: true })
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-optional", {
                screening_result: undefined,
                employment_status: undefined,
                yearly_income: undefined,
              }),
            )
            assert.strictEqual(posted.prospect.status, "processing")
            const ready = yield* awaitProspect(partner, slug, source, "p-optional")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-optional"))
            const messages = yield* awaitEvents(slug, "p-optional", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
            )
          }),
      )
    })

    describe("-> incomplete", () => {
      it.effect(
        "a first POST missing required fields is stored incomplete (status_code 201) and emits prospect.created then prospect.incomplete with both URLs null",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-incomplete")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-incomplete", { birthdate: undefined, screening_result: undefined }),
            )
            assert.strictEqual(posted.status_code, 201)
            assert.strictEqual(posted.prospect.status, "incomplete")
            assert.deepInclude(posted.prospect, NO_URLS)
            assert.sameMembers(posted.prospect.missing_fields as Array<string>, [
              "birthdate",
              "screening_result",
            ])

            const messages = yield* awaitEvents(slug, "p-incomplete", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.incomplete"),
            )
            assert.deepStrictEqual(messages[0]!.json, createdBody(slug, "p-incomplete"))
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-incomplete",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: false,
              }),
              "the prospect.ready shape, status incomplete, missing fields not listed",
            )
            const fetched = yield* getProspect(partner, slug, source, "p-incomplete")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )

      it.effect(
        "incomplete -> incomplete: a POST that still lacks values upserts the same record and emits nothing; the POST that supplies them moves it to processing and then ready without a second prospect.created",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-complete-later")
            const first = yield* post(
              partner,
              slug,
              completeProspect(source, "p-later", { birthdate: undefined, phone: undefined }),
            )
            assert.strictEqual(first.prospect.status, "incomplete")
            yield* awaitEvents(slug, "p-later", 2)

            const still = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-later",
              phone: "5551234567",
            })
            assert.strictEqual(still.status_code, 200)
            assert.strictEqual(still.prospect.id, first.prospect.id)
            assert.strictEqual(still.prospect.status, "incomplete")
            assert.deepStrictEqual(still.prospect.missing_fields, ["birthdate"])

            const completed = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-later",
              birthdate: "1990-05-15",
            })
            assert.strictEqual(completed.status_code, 200)
            assert.strictEqual(completed.prospect.id, first.prospect.id)
            assert.strictEqual(completed.prospect.status, "processing")
            assert.strictEqual(completed.prospect.phone, "5551234567", "an omitted field keeps its value")

            const ready = yield* awaitProspect(partner, slug, source, "p-later")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-later"))
            // The ready message follows every earlier message of the prospect, so its arrival shows that the
            // still-incomplete POST emitted nothing.
            const messages = yield* awaitEvents(slug, "p-later", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.incomplete", "prospect.ready"),
            )
            assert.deepStrictEqual(
              messages[2]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${first.prospect.id}`,
                source_prospect_id: "p-later",
                status: "ready",
                ...embeddedUrls(slug, source, "p-later"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect(
        "ready -> incomplete: a ready prospect whose required field is cleared with null emits prospect.incomplete with both URLs null",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-lost")
            const first = yield* post(partner, slug, completeProspect(source, "p-lost"))
            yield* awaitProspect(partner, slug, source, "p-lost")
            yield* awaitEvents(slug, "p-lost", 2)

            const cleared = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-lost",
              birthdate: null,
            })
            assert.strictEqual(cleared.status_code, 200)
            assert.strictEqual(cleared.prospect.status, "incomplete")
            assert.deepInclude(cleared.prospect, NO_URLS)
            assert.deepStrictEqual(cleared.prospect.missing_fields, ["birthdate"])

            const messages = yield* awaitEvents(slug, "p-lost", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.incomplete"),
            )
            assert.deepStrictEqual(
              messages[2]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${first.prospect.id}`,
                source_prospect_id: "p-lost",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: false,
              }),
            )
            const fetched = yield* getProspect(partner, slug, source, "p-lost")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )

      it.effect(
        "processing -> incomplete: a required field cleared before or after the decision still emits prospect.incomplete once, last",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-race")
            yield* post(partner, slug, completeProspect(source, "p-race"))
            const cleared = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-race",
              email: null,
            })
            assert.strictEqual(cleared.prospect.status, "incomplete")
            const messages = yield* eventually(prospectMessages(slug, "p-race"), (found) =>
              found.some((m) => eventOf(slug, m) === "prospect.incomplete"),
            )
            yield* awaitEvents(slug, "p-race", messages.length)
            const events = messages.map((m) => eventOf(slug, m))
            assert.deepStrictEqual(
              events.filter((e) => e !== "prospect.ready"),
              ["prospect.created", "prospect.incomplete"],
            )
            assert.strictEqual(events.at(-1), "prospect.incomplete")
            assert.isAtMost(events.filter((e) => e === "prospect.ready").length, 1)
            const fetched = yield* getProspect(partner, slug, source, "p-race")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )
    })

    it.effect(
      "a POST refused with 422 ('Phone is not valid') creates no record, changes no state and emits nothing",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-refused")
          const refused = yield* postProspect(
            partner,
            slug,
            completeProspect(source, "p-refused", { phone: "+1 555-987-6543" }),
          )
          assert.strictEqual(refused.status, 422)
          assert.include(refused.text, "Phone is not valid")
          assert.strictEqual((yield* getProspect(partner, slug, source, "p-refused")).status, 404)

          const first = yield* post(partner, slug, completeProspect(source, "p-kept"))
          yield* awaitProspect(partner, slug, source, "p-kept")
          const again = yield* postProspect(partner, slug, {
            source,
            source_prospect_id: "p-kept",
            phone: "555987654",
            birthdate: null,
          })
          assert.strictEqual(again.status, 422)
          assert.include(again.text, "Phone is not valid")
          const kept = yield* getProspect(partner, slug, source, "p-kept")
          assert.strictEqual(kept.body.prospect.status, "ready", "the refused POST cleared nothing")
          assert.strictEqual(kept.body.prospect.birthdate, "1990-05-15")
          // A later accepted POST is published after anything the refused one could have emitted.
          yield* post(partner, slug, { source, source_prospect_id: "p-kept", first_name: null })
          const messages = yield* awaitEvents(slug, "p-kept", 3)
          assert.deepStrictEqual(
            messages.map((m) => m.subject),
            subjects(slug, "prospect.created", "prospect.ready", "prospect.incomplete"),
          )
          assert.strictEqual(payloadOf(messages[2]!).id, `tpp_${first.prospect.id}`)
          assert.deepStrictEqual(yield* prospectMessages(slug, "p-refused"), [])
        }),
    )

    describe("ready without enrollment URLs", () => {
      it.effect(
        "an unresolved property gives ready with both URLs null and 'Property must be present' on GET, never on the webhook",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-noprop")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-noprop", {
                pms_property_id: "pms-prop-unknown",
                pms_unit_id: "pms-unit-unknown",
              }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-noprop")
            assert.strictEqual(ready.status, "ready")
            assert.deepInclude(ready, NO_URLS)
            assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Property must be present")
            assert.include(ready.cd_ineligibility_reasons as Array<string>, "Property must be present")

            const messages = yield* awaitEvents(slug, "p-noprop", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
            )
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-noprop",
                status: "ready",
                ...NO_URLS,
                ...PMS,
                pms_property_id: "pms-prop-unknown",
                pms_unit_id: "pms-unit-unknown",
                guarantor_coverage: false,
              }),
            )
            for (const message of messages) {
              assert.notInclude(JSON.stringify(message.json), "Property must be present")
              assert.notInclude(JSON.stringify(message.json), "ineligibility")
            }
          }),
      )

      it.effect("an owner not yet active gives ready with null URLs and says why on GET", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-inactive", { active: false })
          const posted = yield* post(partner, slug, completeProspect(source, "p-inactive"))
          const ready = yield* awaitProspect(partner, slug, source, "p-inactive")
          assert.deepInclude(ready, NO_URLS)
          assert.include(
            ready.sdi_ineligibility_reasons as Array<string>,
            "Property owner is not accepting enrollments yet",
          )
          assert.include(
            ready.cd_ineligibility_reasons as Array<string>,
            "Property owner is not accepting enrollments yet",
          )
          const messages = yield* awaitEvents(slug, "p-inactive", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-inactive",
              status: "ready",
              ...NO_URLS,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
      )
    })

    it.effect(
      "a building removed from the roster (active false) issues no enrollment URLs to a new prospect",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-offroster")
          const removed = yield* postBatch(partner, slug, "properties", [
            {
              external_system_id: "prop-1",
              building_name: "Main Tower",
              address: { line_one: "123 Main St", city: "Springfield", state: "IL", zip: "62701" },
              active: false,
            },
          ])
          assert.deepStrictEqual(removed.meta, { created: 0, updated: 1, failed: 0 })
          const posted = yield* post(partner, slug, completeProspect(source, "p-offroster"))
          const ready = yield* awaitProspect(partner, slug, source, "p-offroster")
          assert.deepInclude(ready, NO_URLS)
          assert.isNotEmpty(ready.sdi_ineligibility_reasons as Array<string>)
          const messages = yield* awaitEvents(slug, "p-offroster", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-offroster",
              status: "ready",
              ...NO_URLS,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
    )

    describe("enrollment URLs", () => {
      it.effect(
        "are {enrollment_host}/enrollment/embedded/<owner_slug>/<source>/<source_prospect_id>?email=<url_encoded_email>, hosted on /enrollment/expedited/",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-url")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-url", { email: "jane+test@example.com" }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-url")
            const expected = {
              enrollment_url: `https://enroll.test/enrollment/embedded/${slug}/${source}/p-url?email=jane%2Btest%40example.com`,
              hosted_enrollment_url: `https://enroll.test/enrollment/expedited/${slug}/${source}/p-url?email=jane%2Btest%40example.com`,
            }
            assert.deepInclude(ready, expected)
            assert.strictEqual(
              new URL(ready.enrollment_url as string).searchParams.get("email"),
              "jane+test@example.com",
              "the + survives query decoding",
            )
            const messages = yield* awaitEvents(slug, "p-url", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-url",
                status: "ready",
                ...expected,
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect("on a source configured for the expedited flow both URLs use /enrollment/expedited/", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-expedited", { flow: "expedited" })
          const posted = yield* post(partner, slug, completeProspect(source, "p-exp"))
          const ready = yield* awaitProspect(partner, slug, source, "p-exp")
          const expected = {
            enrollment_url: link("expedited", slug, source, "p-exp"),
            hosted_enrollment_url: link("expedited", slug, source, "p-exp"),
          }
          assert.deepInclude(ready, expected)
          const messages = yield* awaitEvents(slug, "p-exp", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-exp",
              status: "ready",
              ...expected,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
      )
    })

    describe("nested property and unit", () => {
      it.effect(
        "are created on the fly by the roster's rules, reported per item in the response and published on ROSTER; the unit defaults to the nested property",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested", {
                pms_property_id: "pms-prop-2",
                pms_unit_id: "pms-unit-2",
                property: {
                  external_system_id: "prop-2",
                  building_name: "Annex",
                  address: { line_one: "9 Elm Ave", city: "Springfield", state: "IL", zip: "62702" },
                  pms_type: "yardi",
                  pms_property_id: "pms-prop-2",
                  default_coverage: { type: "multiplier", value: 1.25 },
                },
                unit: { external_system_id: "unit-2", name: "7A", pms_unit_id: "pms-unit-2" },
              }),
            )
            assert.strictEqual(posted.status_code, 201)
            assert.deepInclude(posted.property!, { external_system_id: "prop-2", action: "created" })
            assert.deepInclude(posted.unit!, {
              external_system_id: "unit-2",
              action: "created",
              property_external_id: "prop-2",
            })
            assert.notProperty(posted.property!, "errors")
            assert.notProperty(posted.unit!, "errors")

            const ready = yield* awaitProspect(partner, slug, source, "p-nested")
            assert.deepInclude(ready, {
              property_external_id: "prop-2",
              unit_external_id: "unit-2",
              effective_coverage_amount_cents: 250_000,
              ...embeddedUrls(slug, source, "p-nested"),
            })

            const roster = yield* eventually(
              readStream("ROSTER").pipe(
                Effect.map((all) =>
                  all.filter(
                    (m) =>
                      m.subject.startsWith(`roster.${slug}.property.`) ||
                      m.subject.startsWith(`roster.${slug}.unit.`),
                  ),
                ),
              ),
              (found) => found.length >= 4,
            )
            assert.deepStrictEqual(
              roster.map((m) => m.subject),
              [
                `roster.${slug}.property.created`,
                `roster.${slug}.unit.created`,
                `roster.${slug}.property.created`,
                `roster.${slug}.unit.created`,
              ],
              "prop-1 and unit-1 from provisioning, then the nested items",
            )
            assert.deepStrictEqual(roster[2]!.json, posted.property)
            assert.deepStrictEqual(roster[3]!.json, posted.unit)

            // The unit nested under a referenced (not nested) property defaults to that property.
            const referenced = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-unit", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property_external_id: "prop-1",
                unit: { external_system_id: "unit-9", name: "9C" },
              }),
            )
            assert.notProperty(referenced, "property")
            assert.deepInclude(referenced.unit!, {
              external_system_id: "unit-9",
              action: "created",
              property_external_id: "prop-1",
            })
            const readyToo = yield* awaitProspect(partner, slug, source, "p-nested-unit")
            assert.deepInclude(readyToo, {
              property_external_id: "prop-1",
              unit_external_id: "unit-9",
              effective_coverage_amount_cents: 200_000,
              ...embeddedUrls(slug, source, "p-nested-unit"),
            })
            const messages = yield* awaitEvents(slug, "p-nested-unit", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${referenced.prospect.id}`,
                source_prospect_id: "p-nested-unit",
                status: "ready",
                ...embeddedUrls(slug, source, "p-nested-unit"),
                pms_type: "yardi",
                pms_prospect_id: "prospect-789",
                guarantor_coverage: false,
              }),
              "PMS identifiers not supplied are omitted, never null",
            )
          }),
      )

      it.effect(
        "a nested unit without property_external_id belongs to the property the prospect references by pms_property_id",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-pms")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-pms", {
                pms_unit_id: "pms-unit-7",
                unit: { external_system_id: "unit-7", name: "7D", pms_unit_id: "pms-unit-7" },
              }),
            )
            assert.deepInclude(
              posted.unit!,
              { external_system_id: "unit-7", action: "created", property_external_id: "prop-1" },
              JSON.stringify(posted.unit),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-nested-pms")
            assert.deepInclude(ready, {
              unit_external_id: "unit-7",
              ...embeddedUrls(slug, source, "p-nested-pms"),
            })
          }),
      )

      it.effect(
        "a nested unit that fails is reported with its errors while the prospect is still stored, ready without URLs",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-fail")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-fail", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property: {
                  external_system_id: "prop-3",
                  building_name: "Third Tower",
                  address: { line_one: "3 Oak St", city: "Springfield", state: "IL", zip: "62703" },
                },
                unit: { external_system_id: "unit-x" },
              }),
            )
            assert.strictEqual(posted.status_code, 201, "the prospect is stored")
            assert.deepInclude(posted.property!, { external_system_id: "prop-3", action: "created" })
            assert.deepInclude(posted.unit!, { external_system_id: "unit-x", action: "failed" })
            assert.deepStrictEqual(posted.unit!.errors, { name: ["unit name required and not derivable"] })
            assert.strictEqual(posted.prospect.status, "processing")

            const ready = yield* awaitProspect(partner, slug, source, "p-nested-fail")
            assert.strictEqual(ready.id, posted.prospect.id)
            assert.deepInclude(ready, { property_external_id: "prop-3", ...NO_URLS })
            assert.include(ready.cd_ineligibility_reasons as Array<string>, "Unit must be present")
            const messages = yield* awaitEvents(slug, "p-nested-fail", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
            )
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-nested-fail",
                status: "ready",
                ...NO_URLS,
                pms_type: "yardi",
                pms_prospect_id: "prospect-789",
                guarantor_coverage: false,
              }),
            )
          }),
      )
      it.effect(
        "a nested property that fails is reported with its errors, its nested unit fails too, and the prospect is still stored, ready with 'Property must be present'",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-badprop")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-badprop", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property: {
                  external_system_id: "prop-bad",
                  building_name: "Castle",
                  address: { line_one: "1 Moat Rd", city: "Springfield", state: "IL", zip: "62705" },
                  type: "castle",
                },
                unit: { external_system_id: "unit-bad", name: "1" },
              }),
            )
            assert.strictEqual(posted.status_code, 201, "the prospect is stored")
            assert.deepInclude(posted.property!, { external_system_id: "prop-bad", action: "failed" })
            assert.property(posted.property!.errors as object, "type")
            assert.deepInclude(posted.unit!, { external_system_id: "unit-bad", action: "failed" })
            assert.property(posted.unit!.errors as object, "property_external_id")
            const ready = yield* awaitProspect(partner, slug, source, "p-badprop")
            assert.deepInclude(ready, NO_URLS)
            assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Property must be present")
            const roster = yield* readStream("ROSTER")
            assert.isFalse(
              roster.some(
                (m) =>
                  JSON.stringify(m.json).includes("prop-bad") || JSON.stringify(m.json).includes("unit-bad"),
              ),
              "a failed item publishes nothing",
            )
          }),
      )
    })

    describe("renter guarantee fields", () => {
      it.effect(
        "guarantor_coverage false (the default) is always present and neither rg field is sent, on GET or on webhooks",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-false", {
              owner: { guarantor_coverage_capable: true },
            })
            const posted = yield* post(partner, slug, completeProspect(source, "p-rg-false"))
            assert.strictEqual(posted.prospect.guarantor_coverage, false)
            assert.notProperty(posted.prospect, "rg_eligibility_status")
            assert.notProperty(posted.prospect, "rg_ineligibility_reasons")
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-false")
            assert.strictEqual(ready.guarantor_coverage, false)
            assert.notProperty(ready, "rg_eligibility_status")
            assert.notProperty(ready, "rg_ineligibility_reasons")
            const messages = yield* awaitEvents(slug, "p-rg-false", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-false",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-false"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect(
        "guarantor_coverage true while pending: rg_ineligibility_reasons is an empty array and rg_eligibility_status is omitted",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-pending", {
              owner: { guarantor_coverage_capable: true },
            })
            const processing = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-pending", { guarantor_coverage: true }),
            )
            assert.strictEqual(processing.prospect.status, "processing")
            assert.strictEqual(processing.prospect.guarantor_coverage, true)
            assert.deepStrictEqual(processing.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(processing.prospect, "rg_eligibility_status")

            const incomplete = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-incomplete", { guarantor_coverage: true, birthdate: undefined }),
            )
            assert.strictEqual(incomplete.prospect.status, "incomplete")
            assert.deepStrictEqual(incomplete.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(incomplete.prospect, "rg_eligibility_status")
            const messages = yield* awaitEvents(slug, "p-rg-incomplete", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${incomplete.prospect.id}`,
                source_prospect_id: "p-rg-incomplete",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: true,
                rg_ineligibility_reasons: [],
              }),
            )
            const fetched = yield* getProspect(partner, slug, source, "p-rg-incomplete")
            assert.deepStrictEqual(fetched.body.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(fetched.body.prospect, "rg_eligibility_status")
          }),
      )

      it.effect(
        "guarantor_coverage true, decided eligible at a property with the renter guarantee enabled: status eligible and no reason",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-eligible", {
              owner: { guarantor_coverage_capable: true },
            })
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-eligible", { guarantor_coverage: true }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-eligible")
            assert.deepInclude(ready, {
              guarantor_coverage: true,
              rg_eligibility_status: "eligible",
              rg_ineligibility_reasons: [],
            })
            const messages = yield* awaitEvents(slug, "p-rg-eligible", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-eligible",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-eligible"),
                ...PMS,
                guarantor_coverage: true,
                rg_eligibility_status: "eligible",
                rg_ineligibility_reasons: [],
              }),
            )
          }),
      )

      it.effect(
        "guarantor_coverage true, decided ineligible: status ineligible with its reasons, on GET and on prospect.ready",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-ineligible")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-ineligible", { guarantor_coverage: true }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-ineligible")
            assert.deepInclude(ready, {
              guarantor_coverage: true,
              rg_eligibility_status: "ineligible",
              rg_ineligibility_reasons: ["Renter guarantee is not offered at this property"],
              ...embeddedUrls(slug, source, "p-rg-ineligible"),
            })
            const messages = yield* awaitEvents(slug, "p-rg-ineligible", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-ineligible",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-ineligible"),
                ...PMS,
                guarantor_coverage: true,
                rg_eligibility_status: "ineligible",
                rg_ineligibility_reasons: ["Renter guarantee is not offered at this property"],
              }),
            )
          }),
      )
    })

    it.effect(
      "effective_coverage_amount_cents is the unit's multiplier, else the property's (default 1x), times monthly rent, capped by the owner's max_coverage_amount_cents",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-coverage", {
            owner: { max_coverage_amount_cents: 250_000 },
          })
          const properties = yield* postBatch(partner, slug, "properties", [
            {
              external_system_id: "prop-2x",
              building_name: "Double Tower",
              address: { line_one: "2 Pine St", city: "Springfield", state: "IL", zip: "62704" },
              default_coverage: { type: "multiplier", value: 2 },
            },
          ])
          assert.deepStrictEqual(properties.meta, { created: 1, updated: 0, failed: 0 })
          const units = yield* postBatch(partner, slug, "units", [
            { external_system_id: "unit-inherit", property_external_id: "prop-2x", name: "1A" },
            {
              external_system_id: "unit-1-5x",
              property_external_id: "prop-2x",
              name: "1B",
              default_coverage: { type: "multiplier", value: 1.5 },
            },
          ])
          assert.deepStrictEqual(units.meta, { created: 2, updated: 0, failed: 0 })

          const cases = [
            { id: "c-default", property: "prop-1", unit: "unit-1", rent: 200_000, expected: 200_000 },
            { id: "c-property", property: "prop-2x", unit: "unit-inherit", rent: 100_000, expected: 200_000 },
            { id: "c-unit", property: "prop-2x", unit: "unit-1-5x", rent: 100_000, expected: 150_000 },
            {
              id: "c-cap-property",
              property: "prop-2x",
              unit: "unit-inherit",
              rent: 200_000,
              expected: 250_000,
            },
            { id: "c-cap-unit", property: "prop-2x", unit: "unit-1-5x", rent: 200_000, expected: 250_000 },
          ]
          for (const c of cases) {
            yield* post(
              partner,
              slug,
              completeProspect(source, c.id, {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property_external_id: c.property,
                unit_external_id: c.unit,
                monthly_rent_cents: c.rent,
                yearly_income: 200_000,
              }),
            )
          }
          for (const c of cases) {
            const ready = yield* awaitProspect(partner, slug, source, c.id)
            assert.strictEqual(ready.effective_coverage_amount_cents, c.expected, c.id)
            assert.deepInclude(ready, embeddedUrls(slug, source, c.id), c.id)
          }
        }),
    )
  })
})
