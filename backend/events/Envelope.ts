import { Schema } from "effect"
import type { OutboxMessage } from "../platform/Outbox.ts"
import { type DataKey, EventCatalog, type EventName, EventNames, type Payload } from "./Catalog.ts"

/**
 * Header of an event on `EVENTS` naming the service id of the property the event is about (when it is about
 * one), so providers covering named properties receive it.
 */
export const EVENT_PROPERTY_HEADER = "Event-Property-Id"

/** `events.<owner_slug>.<event>`: where an event is published; the webhook router takes every one. */
export const eventSubject = (ownerSlug: string, event: EventName) => `events.${ownerSlug}.${event}`

/** The body of a delivery: exactly `event`, `property_owner_slug` and `data` with one key named for the subject. */
export interface Envelope<E extends EventName = EventName> {
  readonly event: E
  readonly property_owner_slug: string
  readonly data: { readonly [K in DataKey<E>]: Payload<E> }
}

const OwnerSlug = Schema.String.annotate({
  description: "The owner the event belongs to; on a multi-owner endpoint route on it.",
})

/** `prospect.created` -> `ProspectCreatedEvent`, a readable component name. */
const envelopeIdentifier = (name: string) =>
  `${name
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")}Event`

const envelopeSchema = <E extends EventName>(name: E): Schema.Codec<Envelope<E>> => {
  const { dataKey, payload, emittedWhen, example } = EventCatalog[name]
  return Schema.Struct({
    event: Schema.Literal(name).annotate({ description: "The event name, also sent as `X-Webhook-Event`." }),
    property_owner_slug: OwnerSlug,
    data: Schema.Struct({ [dataKey]: payload }).annotate({
      description: `One key, \`${dataKey}\`, holding the payload.`,
    }),
  }).annotate({
    identifier: envelopeIdentifier(name),
    title: name,
    description: `Body of \`${name}\`, emitted when ${emittedWhen}.`,
    examples: [{ event: name, property_owner_slug: "acme-properties", data: { [dataKey]: example } }],
  }) as unknown as Schema.Codec<Envelope<E>>
}

/** The envelope schema of each event, to encode bodies and to document them. */
export const Envelopes = Object.fromEntries(EventNames.map((name) => [name, envelopeSchema(name)])) as {
  readonly [E in EventName]: Schema.Codec<Envelope<E>>
}

/** The body of `event` for `ownerSlug`; the payload's type follows from the event name. */
export const makeEnvelope = <E extends EventName>(
  event: E,
  ownerSlug: string,
  payload: Payload<E>,
): Envelope<E> =>
  ({
    event,
    property_owner_slug: ownerSlug,
    data: { [EventCatalog[event].dataKey]: payload },
  }) as Envelope<E>

/** The JSON value sent for an envelope; fails if the payload breaks its event's rules. */
export const encodeEnvelope = <E extends EventName>(envelope: Envelope<E>) =>
  Schema.encodeEffect(Envelopes[envelope.event] as Schema.Codec<Envelope<E>>)(envelope)

/**
 * The outbox message announcing `event` for `ownerSlug`: on `events.<owner_slug>.<event>`, under the producer's
 * `key` (its messages are published in commit order), with the property the event is about in
 * `Event-Property-Id` when there is one, and the envelope schema the outbox encodes the body through.
 */
export const eventMessage = <E extends EventName>(
  event: E,
  ownerSlug: string,
  key: string,
  payload: Payload<E>,
  propertyId: string | null = null,
): OutboxMessage => ({
  subject: eventSubject(ownerSlug, event),
  key,
  ...(propertyId === null ? {} : { headers: { [EVENT_PROPERTY_HEADER]: propertyId } }),
  payload: makeEnvelope(event, ownerSlug, payload),
  schema: Envelopes[event],
})
