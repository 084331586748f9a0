import { Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"
import { type ClaimedAttempt, type ClaimKey, type ClaimTimes, makeClaimsRepo } from "./ClaimsRepo.ts"
import { makeOutcomesRepo, type OutcomeInput } from "./OutcomesRepo.ts"

export {
  type AttemptKey,
  type ClaimDecision,
  type ClaimedAttempt,
  type ClaimKey,
  type ClaimTimes,
  ENDPOINT_FAILURE_REASONS,
  UNKNOWN_OUTCOME_REASON,
} from "./ClaimsRepo.ts"
export { GONE_REASON, type OutcomeInput } from "./OutcomesRepo.ts"

/**
 * The delivery actor's SQL, in parts by use: one statement claims a batch of attempts (`ClaimsRepo.ts`), one
 * records their outcomes, and an endpoint ends on 410 Gone (`OutcomesRepo.ts`); here, the subscriber's signing
 * secrets and the claiming processes' presence.
 */

export interface SecretRow {
  readonly id: number
  readonly secret_sealed: Buffer
  readonly expires_at: Date | null
}

const int = (value: unknown) => Number(value)

export class DeliveryRepo extends Context.Service<
  DeliveryRepo,
  {
    /** Claims a batch of distinct attempts; one result per key, undefined where the attempt is not claimable. */
    readonly claim: (
      keys: ReadonlyArray<ClaimKey>,
      times: ClaimTimes,
    ) => Effect.Effect<ReadonlyArray<ClaimedAttempt | undefined>>
    /**
     * Records a batch of outcomes of distinct attempts; per outcome, false when the delivery no longer expected it
     * (a manual retry or a cancel came first). The attempt rows are recorded either way.
     */
    readonly recordOutcomes: (outcomes: ReadonlyArray<OutcomeInput>) => Effect.Effect<ReadonlyArray<boolean>>
    /** The endpoint answered 410: disable it and fail its other undelivered deliveries; their ids. */
    readonly disableGone: (endpointId: number, exceptDelivery: number) => Effect.Effect<ReadonlyArray<number>>
    readonly secrets: (subscriberId: number, now: Date) => Effect.Effect<ReadonlyArray<SecretRow>>
    /** The claiming process is alive until `until`; claimers not alive for an hour are forgotten. */
    readonly keepAlive: (claimer: string, until: Date) => Effect.Effect<void>
    /** The claiming process stops: its leases run out at once (it settled what it had in hand). */
    readonly leave: (claimer: string) => Effect.Effect<void>
  }
>()("partner-service/webhooks/DeliveryRepo") {
  static readonly layer = Layer.effect(
    DeliveryRepo,
    Effect.gen(function* () {
      const db = yield* Db
      const claims = yield* makeClaimsRepo
      const outcomes = yield* makeOutcomesRepo

      const secrets = Effect.fn("DeliveryRepo.secrets")(function* (subscriberId: number, now: Date) {
        const rows = yield* db.query(
          (sql) => sql`
            select id, secret_sealed, expires_at from webhook_secrets
            where subscriber_id = ${subscriberId} and (expires_at is null or expires_at > ${now})
            order by created_at desc, id desc`,
        )
        return rows.map((r): SecretRow => ({
          id: int(r.id),
          secret_sealed: r.secret_sealed as Buffer,
          expires_at: (r.expires_at as Date | null) ?? null,
        }))
      })

      const keepAlive = Effect.fn("DeliveryRepo.keepAlive")(function* (claimer: string, until: Date) {
        yield* db.query(
          (sql) => sql`
            with renewed as (
              insert into webhook_claimers (id, alive_until) values (${claimer}, ${until})
              on conflict (id) do update set alive_until = excluded.alive_until
            )
            delete from webhook_claimers where alive_until < now() - interval '1 hour'`,
        )
      })

      const leave = Effect.fn("DeliveryRepo.leave")(function* (claimer: string) {
        yield* db.query((sql) => sql`delete from webhook_claimers where id = ${claimer}`)
      })

      return DeliveryRepo.of({ ...claims, ...outcomes, secrets, keepAlive, leave })
    }),
  )
}
