import { BACKOFF_CAP_UNITS } from "../delivery/Backoff.ts"
import type { WebhookConfigShape } from "../Config.ts"
import { DeliveryHeaders } from "../Domain.ts"

const plural = (count: number, unit: string) => `${count} ${unit}${count === 1 ? "" : "s"}`

/** `3600000` -> `1 hour`, `10000` -> `10 seconds`, `250` -> `250 milliseconds`: the largest unit that divides it. */
export const durationText = (ms: number) => {
  for (const [unit, size] of [
    ["hour", 3_600_000],
    ["minute", 60_000],
    ["second", 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return plural(ms / size, unit)
  }
  return plural(ms, "millisecond")
}

/** The wait before attempt k, as the reference writes it: `2^attempt seconds` with the production unit. */
const backoffText = (unitMs: number) =>
  unitMs === 1000 ? "2^attempt seconds" : `2^attempt × ${durationText(unitMs)}`

/**
 * What the reference says of webhooks that depends on the settings in force (`WEBHOOK_TIMEOUT_MS`,
 * `WEBHOOK_MAX_ATTEMPTS`, `WEBHOOK_BACKOFF_UNIT_MS` and the backoff of `delivery/Backoff.ts`): the headers of
 * every delivery, what each answer means, and the one-line policy of the introduction.
 */
export const webhookReference = (config: WebhookConfigShape) => {
  const timeout = durationText(config.timeoutMs)
  const attempts = plural(config.maxAttempts, "attempt")
  return {
    headers: DeliveryHeaders,
    answers: {
      delivered: "Delivered: any 2xx answer marks the delivery delivered.",
      notDelivered:
        `Not delivered: any other answer (401 when the signature does not verify), or none within ${timeout}, ` +
        `is retried with backoff (${backoffText(config.backoffUnitMs)}, capped at ` +
        `${durationText(BACKOFF_CAP_UNITS * config.backoffUnitMs)}) up to ${attempts}.`,
    },
    policy: `Answer 2xx within ${timeout}; anything else is retried with backoff up to ${attempts}.`,
  }
}
