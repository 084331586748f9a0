import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { Crypto } from "../../backend/platform/Crypto.ts"
import {
  awaitProspect,
  completeProspect,
  postProspect,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { awaitDeliveries, endpoint, query, subscriber } from "../support/WebhookEngine.ts"

/** A span as OTLP/JSON carries it, with only what the assertions read. */
interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{
    readonly key: string
    readonly value: { readonly stringValue?: string; readonly intValue?: string | number }
  }>
}

const SERVER = 2
const CLIENT = 3

/** A local OTLP/HTTP collector: every span posted to `/v1/traces` as JSON, and each request's path. */
const startCollector = () =>
  new Promise<{ url: string; spans: Array<ExportedSpan>; paths: Array<string>; close: () => void }>(
    (resolve) => {
      const spans: Array<ExportedSpan> = []
      const paths: Array<string> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          paths.push(`${req.method} ${req.url} ${req.headers["content-type"]}`)
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
            resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<ExportedSpan> }> }>
          }
          for (const resource of body.resourceSpans) {
            for (const scope of resource.scopeSpans) spans.push(...scope.spans)
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          spans,
          paths,
          close: () => {
            server.closeAllConnections()
            server.close()
          },
        }),
      )
    },
  )

const attribute = (span: ExportedSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue))
}

const collector = await startCollector()
afterAll(collector.close)

const traced = prospectService({
  WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
  WEBHOOK_BACKOFF_UNIT_MS: "5",
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_SERVICE_NAME: "partner-service-test",
  OTEL_BSP_SCHEDULE_DELAY: "100",
})

describe("one trace from request to webhook", () => {
  layer(traced.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "exports the prospect POST's server span and every webhook.attempt span of its delivery in one trace",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const { partner, slug } = yield* prospectSetUp("org-traced", "trsrc")
          const [owner] = yield* query((sql) => sql`select id from owners where slug = ${slug}`)
          const sub = yield* subscriber({ ownerId: String(owner!.id) })
          const endpointId = yield* endpoint(sub.id, receiver.url("/traced"), ["prospect.ready"])
          // The first attempt fails: its retry, published by the scheduler, is in the same trace.
          receiver.respond("/traced", (_request, index) => ({ status: index === 0 ? 500 : 200 }))

          const posted = yield* postProspect(partner, slug, completeProspect("trsrc", "p-traced"))
          yield* awaitProspect(partner, slug, "trsrc", "p-traced")
          const [delivery] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "delivered")

          /** An attempt span and the names of its ancestors, once every one of them was exported. */
          const chainOf = (attempt: ExportedSpan) => {
            const byId = new Map(
              collector.spans.filter((s) => s.traceId === attempt.traceId).map((s) => [s.spanId, s]),
            )
            const ancestors: Array<string> = []
            for (let span = attempt; span.parentSpanId !== undefined && span.parentSpanId !== "";) {
              const parent = byId.get(span.parentSpanId)
              // A parent ends (and is exported) after its children: not here yet.
              if (parent === undefined) return undefined
              ancestors.push(parent.name)
              span = parent
            }
            return { attempt, ancestors }
          }
          const chains = yield* eventually(
            Effect.sync(() =>
              collector.spans
                .filter(
                  (s) => s.name === "webhook.attempt" && attribute(s, "webhook.delivery.id") === delivery!.id,
                )
                .map(chainOf),
            ),
            (found) => found.length === 2 && found.every((chain) => chain !== undefined),
          )
          const server = collector.spans.find(
            (s) =>
              s.name === "POST /partners/{owner_slug}/prospects" &&
              attribute(s, "url.path") === `/partners/${slug}/prospects`,
          )
          assert.isDefined(server, "the prospect POST's server span")
          assert.strictEqual(server!.kind, SERVER)
          assert.strictEqual(attribute(server!, "http.response.status_code"), posted.status)
          assert.sameMembers(
            chains.map((chain) => attribute(chain!.attempt, "http.response.status_code")),
            [500, 200],
          )
          for (const { attempt, ancestors } of chains.map((chain) => chain!)) {
            assert.strictEqual(attempt.kind, CLIENT)
            assert.strictEqual(attempt.traceId, server!.traceId)
            // Each attempt descends from the POST through the decision, the event's publish, routing and delivery.
            assert.strictEqual(ancestors.at(-1), server!.name)
            for (const step of [
              "Actor.webhook_delivery",
              "Actor.webhook_router",
              `publish events.${slug}.prospect.ready`,
              "EligibilityDecisions.decide",
              "Actor.eligibility",
            ]) {
              assert.include(ancestors, step)
            }
          }
          assert.isTrue(
            collector.paths.every((p) => p.startsWith("POST /v1/traces application/json")),
            collector.paths.join("; "),
          )

          const [row] = yield* query(
            (sql) => sql`select traceparent from outbox where subject = ${`events.${slug}.prospect.ready`}`,
          )
          assert.match(row!.traceparent as string, new RegExp(`^00-${server!.traceId}-[0-9a-f]{16}-01$`))
        }).pipe(Effect.scoped, Effect.provide(Crypto.layer)),
    )
  })
})

const untraced = prospectService({ WEBHOOK_EXTRA_CA_FILE: testCa().caFile, WEBHOOK_BACKOFF_UNIT_MS: "5" })

describe("without an OTLP endpoint", () => {
  layer(untraced.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("writes no trace context to the outbox", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* prospectSetUp("org-untraced", "unsrc")
        yield* postProspect(partner, slug, completeProspect("unsrc", "p-untraced"))
        yield* awaitProspect(partner, slug, "unsrc", "p-untraced")
        const rows = yield* query((sql) => sql`select subject, traceparent from outbox`)
        assert.isAbove(rows.length, 0)
        assert.deepStrictEqual(
          rows.filter((r) => r.traceparent !== null).map((r) => r.subject),
          [],
        )
      }),
    )
  })
})
