import type { LiveDelivery } from "../schemas"

/** What a delivery list's row shows that a live status change moves. */
interface LiveRow<S extends string> {
  readonly status: S
  readonly attempt_number: number
  readonly attempt_count: number
  readonly next_retry_at: string | null
  readonly last_status_code: number | null
  readonly last_failure_reason: string | null
}

/**
 * A listed delivery after a live status change, or undefined when the list must be read again instead: a status
 * the list does not know, or one its status filter leaves out.
 */
export const patchedDelivery = <S extends string, R extends LiveRow<S>>(
  row: R,
  event: LiveDelivery,
  statuses: ReadonlyArray<S>,
  statusFilter: string,
): R | undefined => {
  const status = statuses.find((s) => s === event.status)
  if (status === undefined) return undefined
  if (statusFilter !== "" && statusFilter !== status) return undefined
  return {
    ...row,
    status,
    attempt_number: event.attempt_number,
    // A status change with an answer is one more attempt; a failure without one may be none.
    attempt_count: event.status_code === undefined ? row.attempt_count : row.attempt_count + 1,
    next_retry_at: event.next_retry_at ?? null,
    last_status_code: event.status_code ?? row.last_status_code,
    last_failure_reason: event.failure_reason ?? row.last_failure_reason,
  }
}
