import { assert, describe, it } from "@effect/vitest"
import { deliveryTimeline } from "../../backend/operator/DeliveryTimeline.ts"

const at = (seconds: number) => new Date(Date.UTC(2026, 2, 1, 14, 30, seconds))
const times = {
  accepted: at(0),
  committed: at(1),
  published: at(2),
  routed: at(3),
  firstAttempt: at(4),
  lastAttempt: at(9),
}

describe("a delivery's timeline ends in its final state", () => {
  it("failed for good: the last step is failed, at its last attempt, and no delivered step", () => {
    const timeline = deliveryTimeline({ ...times, delivered: null, status: "failed" })
    assert.deepStrictEqual(
      timeline.map((s) => s.step),
      ["accepted", "committed", "published", "routed", "attempted", "failed"],
    )
    assert.deepStrictEqual(timeline.at(-1), { step: "failed", at: at(9).toISOString(), after_ms: 5000 })
  })

  it("delivered: the last step is delivered, and no failed step", () => {
    const timeline = deliveryTimeline({ ...times, delivered: at(10), status: "delivered" })
    assert.deepStrictEqual(timeline.at(-1), { step: "delivered", at: at(10).toISOString(), after_ms: 6000 })
    assert.notInclude(
      timeline.map((s) => s.step),
      "failed",
    )
  })

  it("still retrying: it ends in delivered, without a time yet", () => {
    const timeline = deliveryTimeline({ ...times, delivered: null, status: "retrying" })
    assert.deepStrictEqual(timeline.at(-1), { step: "delivered", at: null, after_ms: null })
  })
})
