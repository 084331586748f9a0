import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { IssuedPolicy } from "../../backend/enrollment/Domain.ts"
import {
  advanceClock,
  assertCatalogShapes,
  awaitDeliveries,
  dateFromToday,
  issuePolicy,
  lifecycleOwner,
  lifecycleService,
  showPolicy,
} from "../support/Lifecycle.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { readStream } from "../support/Streams.ts"
import { workerProcess } from "../support/WebhookEngine.ts"

/** The gateways in this process; every worker (relay, actors, the lifecycle job) in processes of their own. */
const service = lifecycleService({ ROLES: "partner-api,enrollment" })

const twoWorkers = Effect.all([workerProcess(service.env), workerProcess(service.env)], {
  concurrency: "unbounded",
})

layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
  describe("the expiry job in several worker processes", () => {
    it.effect(
      "emits each policy.expired once with two workers, catching up on what came due while none ran",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const first = yield* twoWorkers
          const owner = yield* lifecycleOwner(receiver, "expiry-org", "expiry", "/e")
          const walk = { product: "security_deposit_insurance", cadence: "upfront" } as const
          const ending: Array<IssuedPolicy> = []
          for (const id of ["e1", "e2", "e3", "e4", "e5"]) {
            ending.push(
              yield* issuePolicy(owner, id, walk, {
                lease_start_date: dateFromToday(-10),
                lease_end_date: dateFromToday(20),
              }),
            )
          }
          const later = yield* issuePolicy(owner, "later", walk, {
            lease_start_date: dateFromToday(5),
            lease_end_date: dateFromToday(45),
          })
          assert.strictEqual(later.status, "upcoming")
          yield* awaitDeliveries(
            receiver,
            "/e",
            (r) => r.filter((d) => d.event === "policy.created").length === 6,
          )

          // Downtime: no worker runs while the owner's clock passes the five policies' end.
          for (const worker of first) yield* worker.signal("SIGTERM")
          for (const worker of first) yield* worker.exited
          yield* advanceClock(owner, 25)

          // Two workers start together; both run a pass at once over the same due policies.
          yield* twoWorkers
          const expired = (r: ReadonlyArray<{ readonly event: string }>) =>
            r.filter((d) => d.event === "policy.expired")
          yield* awaitDeliveries(receiver, "/e", (r) => expired(r).length >= 5)
          const upcomingNow = yield* showPolicy(later.policyNumber)
          assert.strictEqual(upcomingNow.policy.status, "active")

          // While both run, the clock passes the last one's end: both are woken, one expires it.
          yield* advanceClock(owner, 21)
          const received = yield* awaitDeliveries(receiver, "/e", (r) => expired(r).length >= 6)

          const ids = [...ending, later].map((p) => p.id)
          const stream = yield* readStream("EVENTS")
          const onStream = stream
            .filter((m) => m.subject.endsWith(".policy.expired"))
            .map((m) => ((m.json as { data: { insurance_policy: Json } }).data.insurance_policy as Json).id)
          assert.sameMembers(onStream, ids)
          const delivered = expired(received) as typeof received
          assert.sameMembers(
            delivered.map((d) => d.payload.id),
            ids,
          )
          assert.strictEqual(new Set(delivered.map((d) => d.deliveryId)).size, ids.length)
          for (const d of delivered) assert.strictEqual(d.payload.status, "expired")
          assertCatalogShapes(received)
        }).pipe(Effect.scoped),
      300_000,
    )
  })
})
