import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  createClient,
  FORBIDDEN,
  gatewayPort,
  httpRequest,
  obtainToken,
  signToken,
  UNAUTHORIZED,
} from "../support/Auth.ts"
import {
  awaitLogged,
  envelope,
  expectedEventId,
  expectedSubject,
  ingestLog,
  ingestSetUp,
  ingestStream,
  postEvent,
  prospectRows,
  prospectUpdate,
  sourceMessages,
} from "../support/Ingest.ts"
import { awaitProspect, issueSource, prospectService } from "../support/Prospects.ts"
import { eventually } from "../support/Streams.ts"

const service = prospectService()

/** The gateway's 202 body. */
interface Accepted {
  readonly status_code: number
  readonly event_id: string
}

const accepted = (text: string) => JSON.parse(text) as Accepted

describe("ingestion gateway", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("answers 202 only once INGEST holds the event: subject, headers and the exact bytes", () =>
      Effect.gen(function* () {
        const source = "gw-stored"
        const { client } = yield* ingestSetUp("org-gw-stored", source)
        const payload = prospectUpdate("p-stored", "2026-01-10T10:00:00Z")
        // Odd spacing and key order: the stream must hold the bytes as sent, not a re-serialisation.
        const body = `{ "payload" : ${JSON.stringify(payload, null, 3)},\n  "event_type":"ProspectUpdate", "source": "${source}" }`
        const answer = yield* postEvent(client, body)
        // Read the stream right after the 202, without polling: the event must already be there.
        const messages = yield* sourceMessages(source)
        assert.strictEqual(answer.status, 202, answer.text)
        const eventId = expectedEventId(source, "ProspectUpdate", payload)
        assert.strictEqual(answer.text, `{"status_code":202,"event_id":"${eventId}"}`)
        assert.strictEqual(messages.length, 1, "INGEST does not hold the accepted event")
        const [message] = messages
        assert.strictEqual(message!.subject, expectedSubject(source, "ProspectUpdate", "p-stored"))
        assert.strictEqual(message!.headers["Nats-Msg-Id"], eventId)
        assert.strictEqual(message!.headers["Ingest-Client"], client.clientId)
        const receivedAt = message!.headers["Ingest-Received-At"]!
        assert.match(receivedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.isTrue(
          Buffer.from(body, "utf8").equals(message!.data),
          "the stored bytes differ from the body",
        )
      }),
    )

    it.effect(
      "gives one event one id however it is spaced or ordered, and different events different ids",
      () =>
        Effect.gen(function* () {
          const source = "gw-ids"
          const { client } = yield* ingestSetUp("org-gw-ids", source)
          const payload = prospectUpdate("p-ids", "2026-01-10T10:00:00Z")
          const first = yield* postEvent(client, envelope(source, payload))
          const reordered = {
            payload: Object.fromEntries(Object.entries(payload).reverse()),
            event_type: "ProspectUpdate",
            source,
          }
          const second = yield* postEvent(client, JSON.stringify(reordered, null, 2))
          const other = yield* postEvent(
            client,
            envelope(source, prospectUpdate("p-ids", "2026-01-10T10:00:01Z")),
          )
          for (const answer of [first, second, other]) assert.strictEqual(answer.status, 202, answer.text)
          assert.strictEqual(accepted(first.text).event_id, accepted(second.text).event_id)
          assert.notStrictEqual(accepted(first.text).event_id, accepted(other.text).event_id)
        }),
    )

    it.effect("stores an event once when it is POSTed twice, and applies it once", () =>
      Effect.gen(function* () {
        const source = "gw-twice"
        const { client } = yield* ingestSetUp("org-gw-twice", source)
        const event = envelope(source, prospectUpdate("p-twice", "2026-01-10T10:00:00Z"))
        const first = yield* postEvent(client, event)
        const second = yield* postEvent(client, event)
        assert.strictEqual(first.status, 202, first.text)
        assert.strictEqual(second.status, 202, second.text)
        assert.strictEqual(first.text, second.text)
        const eventId = accepted(first.text).event_id
        assert.strictEqual((yield* sourceMessages(source)).length, 1, "JetStream stored the repeat")

        // A later event of the same prospect lands in the same partition, so the actor handles it after
        // anything stored before it: once it is logged, a second copy of the first would have been too.
        const later = yield* postEvent(
          client,
          envelope(
            source,
            prospectUpdate("p-twice", "2026-01-10T11:00:00Z", { applicant: { phone: "5550000001" } }),
          ),
        )
        const laterId = accepted(later.text).event_id
        const log = yield* awaitLogged(source, [eventId, laterId])
        assert.deepStrictEqual(
          log.map((r) => [r.event_id, r.outcome]),
          [
            [eventId, "applied"],
            [laterId, "applied"],
          ],
        )
        const [row] = yield* prospectRows(source, "p-twice")
        assert.strictEqual(row!.version, 2, "the prospect was written once per distinct event")
      }),
    )

    it.effect("refuses envelope errors with 422 and stores nothing", () =>
      Effect.gen(function* () {
        const source = "gw-envelope"
        const { client } = yield* ingestSetUp("org-gw-envelope", source)
        const cases: ReadonlyArray<{ readonly body: unknown; readonly fields: ReadonlyArray<string> }> = [
          { body: { event_type: "ProspectUpdate", payload: {} }, fields: ["source"] },
          { body: { source, payload: {} }, fields: ["event_type"] },
          { body: { source, event_type: "ProspectUpdate" }, fields: ["payload"] },
          { body: { source, event_type: "Prospect.Update", payload: {} }, fields: ["event_type"] },
          { body: { source, event_type: "9Update", payload: {} }, fields: ["event_type"] },
          { body: { source, event_type: "ProspectUpdate", payload: [1, 2] }, fields: ["payload"] },
          { body: { source, event_type: "ProspectUpdate", payload: "x" }, fields: ["payload"] },
          { body: { source: 7, event_type: "ProspectUpdate", payload: {} }, fields: ["source"] },
          { body: [], fields: ["base"] },
        ]
        for (const { body, fields } of cases) {
          const answer = yield* postEvent(client, body)
          const label = JSON.stringify(body)
          assert.strictEqual(answer.status, 422, `${label}: ${answer.text}`)
          const parsed = JSON.parse(answer.text) as Record<string, unknown>
          assert.deepStrictEqual(Object.keys(parsed), ["status_code", "error", "event", "errors"], label)
          assert.strictEqual(parsed.status_code, 422, label)
          assert.strictEqual(parsed.error, "Event invalid.", label)
          const errors = parsed.errors as Record<string, Array<string>>
          const event = parsed.event as Record<string, string>
          assert.includeMembers(Object.keys(errors), [...fields], label)
          for (const [field, messages] of Object.entries(errors)) {
            assert.isAbove(messages.length, 0, label)
            assert.strictEqual(event[field], messages.join("; "), label)
          }
        }
        const notJson = yield* postEvent(client, "{not json")
        assert.strictEqual(notJson.status, 400, notJson.text)
        assert.deepStrictEqual(yield* sourceMessages(source), [])
      }),
    )

    it.effect("refuses a body over 256 KiB with 413 and takes one just under it", () =>
      Effect.gen(function* () {
        const source = "gw-size"
        const { client } = yield* ingestSetUp("org-gw-size", source)
        const sized = (bytes: number, id: string) => {
          const base = JSON.stringify(
            envelope(source, { ...prospectUpdate(id, "2026-01-10T10:00:00Z"), pad: "" }),
          )
          const body = base.replace(`"pad":""`, `"pad":"${"x".repeat(bytes - base.length)}"`)
          assert.strictEqual(Buffer.byteLength(body), bytes)
          return body
        }
        const over = yield* postEvent(client, sized(256 * 1024 + 1, "p-over"))
        assert.strictEqual(over.status, 413, over.text)
        assert.deepStrictEqual(yield* sourceMessages(source), [], "an oversized event was stored")
        const limit = yield* postEvent(client, sized(256 * 1024, "p-limit"))
        assert.strictEqual(limit.status, 202, limit.text)
        const messages = yield* sourceMessages(source)
        assert.strictEqual(messages.length, 1)
        assert.strictEqual(messages[0]!.data.byteLength, 256 * 1024)
      }),
    )

    it.effect("accepts events of the client's own source only (403 otherwise, nothing stored)", () =>
      Effect.gen(function* () {
        const source = "gw-own"
        const { partner, client } = yield* ingestSetUp("org-gw-own", source)
        yield* issueSource({ code: "gw-other", clients: [partner.clientId] })
        const other = yield* postEvent(
          client,
          envelope("gw-other", prospectUpdate("p-other", "2026-01-10T10:00:00Z")),
        )
        assert.strictEqual(other.status, 403, other.text)
        assert.strictEqual(other.text, FORBIDDEN)
        const unknown = yield* postEvent(
          client,
          envelope("never-issued", prospectUpdate("p-other", "2026-01-10T10:00:00Z")),
        )
        assert.strictEqual(unknown.status, 403, unknown.text)
        assert.strictEqual(unknown.text, FORBIDDEN)

        // An ingestion client with no source may send for none.
        const sourceless = yield* createClient({ gateway: "ingest" })
        const token = yield* obtainToken("ingest", sourceless)
        const none = yield* postEvent(
          { clientId: sourceless.clientId, token },
          envelope(source, prospectUpdate("p-other", "2026-01-10T10:00:00Z")),
        )
        assert.strictEqual(none.status, 403, none.text)
        assert.strictEqual(none.text, FORBIDDEN)

        const messages = yield* ingestStream
        assert.isFalse(
          messages.some(
            (m) => m.subject.startsWith("ingest.gw-other.") || m.subject.startsWith("ingest.never-issued."),
          ),
          "a refused event was stored",
        )
        assert.deepStrictEqual(yield* sourceMessages(source), [])
      }),
    )

    it.effect(
      "rejects a partner-gateway token on the ingestion gateway, and an ingest token on the partner one",
      () =>
        Effect.gen(function* () {
          const source = "gw-tokens"
          const { partner, slug, client } = yield* ingestSetUp("org-gw-tokens", source)
          const event = envelope(source, prospectUpdate("p-tokens", "2026-01-10T10:00:00Z"))

          const withPartnerToken = yield* postEvent(
            { clientId: partner.clientId, token: partner.token },
            event,
          )
          assert.strictEqual(withPartnerToken.status, 401, withPartnerToken.text)
          assert.strictEqual(withPartnerToken.text, UNAUTHORIZED)

          const ingestPort = yield* gatewayPort("ingest-api")
          const withoutToken = yield* httpRequest(ingestPort, "/events", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(event),
          })
          assert.strictEqual(withoutToken.status, 401, withoutToken.text)
          assert.strictEqual(withoutToken.text, UNAUTHORIZED)

          const partnerPort = yield* gatewayPort("partner-api")
          const onPartner = yield* httpRequest(
            partnerPort,
            `/partners/${slug}/prospects/${source}/p-tokens`,
            {
              headers: { authorization: `Bearer ${client.token}` },
            },
          )
          assert.strictEqual(onPartner.status, 401, onPartner.text)
          assert.strictEqual(onPartner.text, UNAUTHORIZED)
          const postOnPartner = yield* httpRequest(partnerPort, `/partners/${slug}/prospects`, {
            method: "POST",
            headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
            body: JSON.stringify({ prospect: { source, source_prospect_id: "p-tokens" } }),
          })
          assert.strictEqual(postOnPartner.status, 401, postOnPartner.text)
          assert.strictEqual(postOnPartner.text, UNAUTHORIZED)

          assert.deepStrictEqual(yield* sourceMessages(source), [])
          assert.deepStrictEqual(yield* prospectRows(source, "p-tokens"), [])
        }),
    )

    it.effect("serves neither /docs nor /openapi.json on the ingestion gateway", () =>
      Effect.gen(function* () {
        const ingestPort = yield* gatewayPort("ingest-api")
        for (const path of ["/docs", "/openapi.json", "/docs/"]) {
          const answer = yield* httpRequest(ingestPort, path)
          assert.strictEqual(answer.status, 404, `${path}: ${answer.text}`)
        }
        // The partner gateway serves both, so the 404 above is the ingestion gateway's own.
        const partnerPort = yield* gatewayPort("partner-api")
        for (const path of ["/docs", "/openapi.json"]) {
          const answer = yield* httpRequest(partnerPort, path)
          assert.strictEqual(answer.status, 200, `${path} on the partner gateway: ${answer.text}`)
        }
      }),
    )

    it.effect("turns an accepted event into the prospect the API returns", () =>
      Effect.gen(function* () {
        const source = "gw-visible"
        const { partner, slug, client } = yield* ingestSetUp("org-gw-visible", source)
        const answer = yield* postEvent(
          client,
          envelope(source, prospectUpdate("p-visible", "2026-01-10T10:00:00Z")),
        )
        assert.strictEqual(answer.status, 202, answer.text)
        const prospect = yield* awaitProspect(partner, slug, source, "p-visible", () => true)
        assert.deepInclude(prospect, {
          source,
          source_prospect_id: "p-visible",
          first_name: "Jane",
          last_name: "Roe",
          email: "jane@example.com",
          phone: "5551234567",
          lease_start_date: "2026-03-01",
          pms_property_id: "pms-prop-1",
          // Birthdate and the rest are not mapped: the prospect waits for them.
          status: "incomplete",
        })
        const log = yield* eventually(ingestLog(source), (rows) => rows.length > 0)
        assert.deepInclude(log[0]!, {
          event_id: accepted(answer.text).event_id,
          event_type: "ProspectUpdate",
          source_prospect_id: "p-visible",
          occurred_at: "2026-01-10T10:00:00.000Z",
          outcome: "applied",
          reason: null,
          prospect_id: String(prospect.id),
        })
      }),
    )

    it.effect("refuses with 403 an ingestion-gateway token that does not carry ingest:events", () =>
      Effect.gen(function* () {
        const source = "gw-scope"
        const { client } = yield* ingestSetUp("org-gw-scope", source)
        // Signed by the service's own key for this client and audience, but carrying a partner scope only.
        const token = yield* signToken({
          clientId: client.clientId,
          scope: "prospects:write",
          gateway: "ingest",
        })
        const answer = yield* postEvent(
          { clientId: client.clientId, token },
          envelope(source, prospectUpdate("p-scope", "2026-01-10T10:00:00Z")),
        )
        assert.strictEqual(answer.status, 403, answer.text)
        assert.strictEqual(answer.text, FORBIDDEN)
        assert.deepStrictEqual(yield* sourceMessages(source), [])
      }),
    )
  })
})
