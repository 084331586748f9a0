import { assert, describe, it } from "@effect/vitest"
import {
  BACKOFF_CAP_UNITS,
  backoffUnits,
  RATE_LIMIT_DELAY_UNITS,
  RETRY_AFTER_CAP_MS,
  retryAfterMs,
} from "../../backend/webhooks/delivery/Backoff.ts"

const NOW = Date.parse("2026-03-02T12:00:00Z")

describe("the webhook backoff", () => {
  it("waits 2^attempt units, from 4 before the second attempt up to the hour's cap by the eleventh retry", () => {
    const schedule = Array.from({ length: 10 }, (_, i) => backoffUnits(i + 2))
    assert.deepStrictEqual(schedule, [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
    assert.strictEqual(backoffUnits(12), 3600)
    assert.strictEqual(backoffUnits(25), 3600)
    assert.strictEqual(BACKOFF_CAP_UNITS, 3600)
  })

  it("adds up to a retry window of roughly fifteen hours over the 25 attempts", () => {
    let total = 0
    for (let attempt = 2; attempt <= 25; attempt++) total += backoffUnits(attempt)
    assert.strictEqual(total, 4092 + 14 * 3600)
  })

  it("postpones a rate-limited attempt by 60 units", () => {
    assert.strictEqual(RATE_LIMIT_DELAY_UNITS, 60)
  })
})

describe("a receiver's Retry-After", () => {
  it("is absent or unreadable: no postponement", () => {
    for (const value of [undefined, "", "soon", "12 seconds", "Thu, 99 Foo 2026"])
      assert.isUndefined(retryAfterMs(value, NOW), String(value))
  })

  it("takes delay-seconds, surrounding spaces allowed", () => {
    assert.strictEqual(retryAfterMs("120", NOW), 120_000)
    assert.strictEqual(retryAfterMs("  30 ", NOW), 30_000)
    assert.strictEqual(retryAfterMs("0", NOW), 0)
  })

  it("takes an HTTP date, as the time from now until then", () => {
    assert.strictEqual(retryAfterMs("Mon, 02 Mar 2026 12:02:00 GMT", NOW), 120_000)
    assert.strictEqual(retryAfterMs(" Mon, 02 Mar 2026 12:00:30 GMT ", NOW), 30_000)
  })

  it("never asks for less than now", () => {
    assert.strictEqual(retryAfterMs("Mon, 02 Mar 2026 11:00:00 GMT", NOW), 0)
  })

  it("is honoured up to one hour", () => {
    assert.strictEqual(RETRY_AFTER_CAP_MS, 3_600_000)
    assert.strictEqual(retryAfterMs("3600", NOW), 3_600_000)
    assert.strictEqual(retryAfterMs("3601", NOW), 3_600_000)
    assert.strictEqual(retryAfterMs("86400", NOW), 3_600_000)
    assert.strictEqual(retryAfterMs("Tue, 03 Mar 2026 12:00:00 GMT", NOW), 3_600_000)
  })
})
