import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { envelope, ingestSetUp, postEvent, prospectUpdate, sourceMessages } from "../support/Ingest.ts"
import { prospectService } from "../support/Prospects.ts"

/** The gateways alone (nothing consumes INGEST) with INGEST at its smallest byte limit. */
const service = prospectService({ ROLES: "partner-api,ingest-api", NATS_MAX_BYTES_INGEST: "1MB" })

describe("a full INGEST stream (discard new)", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("answers 503 with Retry-After and stores nothing, then accepts once there is room", () =>
      Effect.gen(function* () {
        const source = "full-stream"
        const setUp = yield* ingestSetUp("org-full-stream", source)
        const nats = yield* Nats
        const { jsm } = yield* NatsClient
        let full = false
        for (let i = 0; i < 40 && !full; i++) {
          const result = yield* Effect.result(
            nats.tryPublish(nats.subject(`ingest.filler.Bulk.${i % 16}`), new Uint8Array(64 * 1024), {
              timeout: "5 seconds",
            }),
          )
          full = result._tag === "Failure"
        }
        assert.isTrue(full, "INGEST never filled up")

        // Larger than the room a refused 64 KB message left: JetStream refuses it whole.
        const event = envelope(
          source,
          prospectUpdate("p-full", "2026-01-10T10:00:00Z", { notes: "x".repeat(70_000) }),
        )
        const refused = yield* postEvent(setUp.client, event)
        assert.strictEqual(refused.status, 503, refused.text)
        assert.strictEqual(refused.headers.get("retry-after"), "1")
        const body = JSON.parse(refused.text) as { status_code: number; error: string }
        assert.deepStrictEqual(Object.keys(body), ["status_code", "error"])
        assert.strictEqual(body.status_code, 503)
        assert.lengthOf(yield* sourceMessages(source), 0)

        yield* Effect.promise(() =>
          jsm.streams.purge(nats.streamName("INGEST"), { filter: nats.subject("ingest.filler.>") }),
        )
        const accepted = yield* postEvent(setUp.client, event)
        assert.strictEqual(accepted.status, 202, accepted.text)
        assert.lengthOf(yield* sourceMessages(source), 1)
      }),
    )
  })
})
