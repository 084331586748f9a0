import { Context, Effect, Layer } from "effect"
import { integer, setting } from "../platform/Settings.ts"

/** The renter pages' settings (`docs/settings.md`: `ENROLLMENT_LINK_*`). */
export interface EnrollmentConfigShape {
  /** Wrong links a source may open in an hour before each further one blocks it. */
  readonly linkFreeFailures: number
  /** The longest a source is blocked after a wrong link; blocks double from one second up to it. */
  readonly linkMaxBlockSeconds: number
}

export const loadEnrollmentConfig = Effect.gen(function* () {
  return {
    linkFreeFailures: yield* setting(
      "ENROLLMENT_LINK_FREE_FAILURES",
      "a whole number from 1 to 10000",
      integer(1, 10_000),
      () => 20,
    ),
    linkMaxBlockSeconds: yield* setting(
      "ENROLLMENT_LINK_MAX_BLOCK_SECONDS",
      // A block never outlasts the hour after which a source's failures are forgotten.
      "a whole number of seconds from 1 to 3600",
      integer(1, 3600),
      () => 600,
    ),
  } satisfies EnrollmentConfigShape
})

export class EnrollmentConfig extends Context.Service<EnrollmentConfig, EnrollmentConfigShape>()(
  "partner-service/enrollment/EnrollmentConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(EnrollmentConfig, loadEnrollmentConfig)
}
