import { assert, describe, it } from "@effect/vitest"
import { OUTBOX_PARTITIONS, partitionedSubject, partitionOf } from "../../backend/platform/Partition.ts"

describe("partitionOf", () => {
  it("is FNV-1a over 32 bits (the published test vectors, read whole with 2^32 partitions)", () => {
    assert.deepStrictEqual(
      ["", "a", "foobar"].map((key) => partitionOf(key, 2 ** 32)),
      [0x811c9dc5, 0xe40c292c, 0xbf9cf968],
    )
  })

  // Computed once from the released function and written down: a deployment's messages already sit on these
  // partitions, so another hash (or another reduction to a partition) would re-partition it and break per-key order.
  it("puts the keys of each kind on the partitions it always did", () => {
    const keys = ["prospect:1", "prospect:42", "policy:7", "acme/p-1", "two-workers/p-0", "owner:17"]
    assert.deepStrictEqual(
      keys.map((key) => partitionOf(key, OUTBOX_PARTITIONS)),
      [4, 11, 8, 2, 9, 2],
    )
    assert.deepStrictEqual(
      keys.map((key) => partitionOf(key, 2 ** 32)),
      [3749396948, 1057048459, 4294284920, 3911272642, 2001994393, 3703380738],
    )
    assert.strictEqual(
      partitionedSubject("eligibility.requested.acme", "prospect:42", 16),
      "eligibility.requested.acme.11",
    )
  })
})
