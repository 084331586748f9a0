/**
 * Stable partition of a key (FNV-1a, 32 bit): the same key always lands in the same partition, in every
 * process and every release, so per-key order survives restarts and scale-out.
 */
export const partitionOf = (key: string, partitions: number): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % partitions
}

/** A subject (`docs/architecture.md`) with the key's partition token appended as the last token. */
export const partitionedSubject = (subject: string, key: string, partitions: number) =>
  `${subject}.${partitionOf(key, partitions)}`

/** Number of outbox partitions; fixed by migration 0001 (`outbox_partitions`). */
export const OUTBOX_PARTITIONS = 16
