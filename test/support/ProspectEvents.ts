import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { EventName } from "../../backend/events/Catalog.ts"
import { Envelopes } from "../../backend/events/Envelope.ts"
import { ENROLLMENT_HOST, issueSource, postProspect, prospectPartner, provisionedOwner } from "./Prospects.ts"
import { type RosterPartner } from "./Roster.ts"
import { eventually, readStream, type StoredMessage } from "./Streams.ts"

/** What `prospect.ready` and `prospect.incomplete` carry as `third_party_prospect`. */
export type Payload = Record<string, unknown>

export interface Body {
  readonly event: string
  readonly property_owner_slug: string
  readonly data: { readonly third_party_prospect: Payload }
}

/** A partner, a source issued to it and an owner provisioned as the spec orders it (prop-1 / unit-1). */
export const setup = (
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
export const eventOf = (slug: string, message: StoredMessage) =>
  message.subject.slice(`events.${slug}.`.length)

export const payloadOf = (message: StoredMessage) => (message.json as Body).data.third_party_prospect

/** The owner's EVENTS messages about one prospect, in stream order. */
export const prospectMessages = (slug: string, sourceProspectId: string) =>
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
export const awaitEvents = (slug: string, sourceProspectId: string, count: number) =>
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

export const subjects = (slug: string, ...events: ReadonlyArray<string>) =>
  events.map((e) => `events.${slug}.${e}`)

export const createdBody = (slug: string, sourceProspectId: string): Body => ({
  event: "prospect.created",
  property_owner_slug: slug,
  data: { third_party_prospect: { id: sourceProspectId } },
})

export const body = (
  event: "prospect.ready" | "prospect.incomplete",
  slug: string,
  payload: Payload,
): Body => ({
  event,
  property_owner_slug: slug,
  data: { third_party_prospect: payload },
})

/** The PMS identifiers `completeProspect` sends, as the payload echoes them. */
export const PMS = {
  pms_type: "yardi",
  pms_property_id: "pms-prop-1",
  pms_unit_id: "pms-unit-1",
  pms_prospect_id: "prospect-789",
}

export const link = (
  flow: "embedded" | "expedited",
  slug: string,
  source: string,
  sourceProspectId: string,
  encodedEmail = "renter%40example.com",
) => `${ENROLLMENT_HOST}/enrollment/${flow}/${slug}/${source}/${sourceProspectId}?email=${encodedEmail}`

export const NO_URLS = { enrollment_url: null, hosted_enrollment_url: null }

/** `{host}/enrollment/embedded/...` and its hosted `/enrollment/expedited/` twin. */
export const embeddedUrls = (
  slug: string,
  source: string,
  sourceProspectId: string,
  encodedEmail?: string,
) => ({
  enrollment_url: link("embedded", slug, source, sourceProspectId, encodedEmail),
  hosted_enrollment_url: link("expedited", slug, source, sourceProspectId, encodedEmail),
})

export const post = (partner: RosterPartner, slug: string, prospect: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.body
  })

/**
 * Waits for the prospect's `prospect.created` and `prospect.ready`, in that order, and checks the ready body: its
 * id, key and status, then `fields` exactly as the payload carries them.
 */
export const awaitCreatedThenReady = (
  slug: string,
  sourceProspectId: string,
  prospectId: number,
  fields: Payload,
) =>
  Effect.gen(function* () {
    const messages = yield* awaitEvents(slug, sourceProspectId, 2)
    assert.deepStrictEqual(
      messages.map((m) => m.subject),
      subjects(slug, "prospect.created", "prospect.ready"),
    )
    assert.deepStrictEqual(
      messages[1]!.json,
      body("prospect.ready", slug, {
        id: `tpp_${prospectId}`,
        source_prospect_id: sourceProspectId,
        status: "ready",
        ...fields,
      }),
    )
    return messages
  })
