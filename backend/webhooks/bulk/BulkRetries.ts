import { randomUUID } from "node:crypto"
import { Context, Effect, FiberMap, Layer, Schedule, Schema } from "effect"
import { Db } from "../../platform/Db.ts"
import { logFailedPass } from "../../platform/Unavailable.ts"
import { isJsonObject } from "../../platform/Validation.ts"
import { FilterKeys, readFilter } from "../endpoints/DeliveryFilters.ts"
import { DeliveryFilterInvalid, DeliverySets } from "../endpoints/DeliverySets.ts"
import { Endpoints } from "../endpoints/Endpoints.ts"
import { type BulkRetryRow, BulkRetriesRepo, type BulkRetryStatus } from "./BulkRetriesRepo.ts"

/**
 * Bulk retries: every delivery a filter matched when the job was created (a snapshot of ids, taken in batches of
 * their own transactions) retried as the partner API's retry does, at a capped rate, by a background job that a
 * worker holds under a lease. The job's row is the truth: a worker that stops leaves it to another (at once when
 * it stops cleanly, after the lease otherwise), and a cancel takes effect at the next step.
 */

/** A job as the console's API shows it (`operator/Api.ts` declares the same shape as a schema). */
export interface BulkRetry {
  readonly id: number
  /** The number the console shows, given when the job starts; null for a preview. */
  readonly number: number | null
  readonly filter: Readonly<Record<string, unknown>>
  readonly status: BulkRetryStatus
  readonly total: number
  readonly done: number
  readonly created_by: string
  readonly created_at: string
  readonly finished_at: string | null
}

/** A recovery (a portal's "send again every failed delivery of this endpoint since"), as the portal shows it. */
export interface RecoveryShown {
  readonly id: number
  readonly endpoint_id: number
  readonly since: string
  readonly status: BulkRetryStatus
  readonly total: number
  readonly done: number
  readonly created_at: string
  readonly finished_at: string | null
}

/** A recovery of the endpoint is already running: one at a time per endpoint. */
export class RecoveryRunning extends Schema.TaggedError<RecoveryRunning>()("RecoveryRunning", {
  id: Schema.Number,
}) {}

/** A bulk retry request that cannot run: each field with its message (a 422). */
export class BulkRetryInvalid extends Schema.TaggedError<BulkRetryInvalid>()("BulkRetryInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

export class BulkRetryNotFound extends Schema.TaggedError<BulkRetryNotFound>()("BulkRetryNotFound", {}) {}

export const DEFAULT_RATE = 20
export const MAX_RATE = 100
/** Ids taken into the snapshot per transaction. */
const SNAPSHOT_BATCH = 5000
/** How long a lease lasts without renewal; every step (about a second apart) renews it. */
const LEASE_SECONDS = 30
/** How often a worker looks for running jobs nobody holds. */
const POLL = "1 second"
const JOBS_PER_CLAIM = 10
const LISTED = 50

const ID = /^[1-9]\d{0,14}$/

const toRecovery = (row: BulkRetryRow): RecoveryShown => ({
  id: Number(row.id),
  endpoint_id: Number(row.recovery_endpoint_id),
  since: row.recovery_since!.toISOString(),
  status: row.status,
  total: row.total,
  done: row.done,
  created_at: row.created_at.toISOString(),
  finished_at: row.finished_at === null ? null : row.finished_at.toISOString(),
})

const toBulkRetry = (row: BulkRetryRow): BulkRetry => ({
  id: Number(row.id),
  number: row.number === null ? null : Number(row.number),
  filter: row.filter,
  status: row.status,
  total: row.total,
  done: row.done,
  created_by: row.created_by,
  created_at: row.created_at.toISOString(),
  finished_at: row.finished_at === null ? null : row.finished_at.toISOString(),
})

/** What a step of a job did: there is more to do, or the job no longer runs here. */
type Step = "continue" | "stop"

export class BulkRetries extends Context.Service<BulkRetries>()("partner-service/webhooks/BulkRetries", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* BulkRetriesRepo
    const deliveries = yield* DeliverySets
    const endpoints = yield* Endpoints

    const byId = (id: string | number) =>
      Effect.gen(function* () {
        const key = typeof id === "number" ? String(id) : id
        const row = ID.test(key) ? yield* repo.get(Number(key)) : undefined
        if (row === undefined) return yield* new BulkRetryNotFound()
        return row
      })

    /**
     * One batch of the snapshot, if `owner` still holds the running job; whether the snapshot is now complete
     * (or the job no longer runs here).
     */
    const snapshotBatch = (id: number, owner: string) =>
      db.transaction(
        Effect.gen(function* () {
          const job = yield* repo.lock(id)
          if (
            job === undefined ||
            !["running", "previewed"].includes(job.status) ||
            job.lease_owner !== owner
          )
            return true
          if (job.snapshot_complete) return true
          const read = readFilter(job.filter)
          if ("fields" in read) return yield* Effect.die(new Error(`bulk retry ${id} has an invalid filter`))
          const batch = yield* deliveries.matchingIds(read.filter, job.snapshot_after, SNAPSHOT_BATCH)
          yield* repo.addItems(id, job.total + 1, batch.ids)
          yield* repo.saveSnapshot(id, job.total + batch.ids.length, batch.after, LEASE_SECONDS)
          return batch.after === null
        }),
      )

    const readRate = (rateInput: unknown, fields: Record<string, string>) => {
      const rate = rateInput === undefined || rateInput === null ? DEFAULT_RATE : rateInput
      if (typeof rate !== "number" || !Number.isInteger(rate) || rate < 1 || rate > MAX_RATE) {
        fields.rate_per_second = `must be an integer from 1 to ${MAX_RATE}`
      }
      return rate as number
    }

    /**
     * A job over what `filterInput` matches now, its snapshot taken before it answers: running, or (`preview`) a
     * preview whose `total` says how many a start will retry, which no worker takes until it is started.
     */
    const create = Effect.fn("BulkRetries.create")(function* (
      filterInput: unknown,
      rateInput: unknown,
      createdBy: string,
      preview = false,
      recovery?: { readonly endpointId: number; readonly since: Date },
    ) {
      const fields: Record<string, string> = {}
      if (!isJsonObject(filterInput)) fields.filter = "must be an object of filters"
      else {
        const unknown = Object.keys(filterInput).filter(
          (key) => !(FilterKeys as ReadonlyArray<string>).includes(key),
        )
        if (unknown.length > 0) fields.filter = `has unknown keys: ${unknown.slice(0, 5).join(", ")}`
        else if (!FilterKeys.some((key) => ![undefined, null, ""].includes(filterInput[key] as never))) {
          fields.filter = "must name at least one filter"
        }
      }
      const rate = readRate(rateInput, fields)
      if (Object.keys(fields).length > 0) return yield* new BulkRetryInvalid({ fields })
      const read = readFilter(filterInput as Readonly<Record<string, unknown>>)
      if ("fields" in read) return yield* new DeliveryFilterInvalid({ fields: read.fields })
      const stored: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(read.filter)) {
        stored[key] = value instanceof Date ? value.toISOString() : value
      }

      // The creator holds the job while it takes the snapshot; should it stop half-way, a worker finishes it.
      const owner = `create-${randomUUID()}`
      const job = yield* repo.insert(
        stored,
        rate,
        createdBy,
        owner,
        LEASE_SECONDS,
        preview ? "previewed" : "running",
        recovery,
      )
      const id = Number(job.id)
      while (!(yield* snapshotBatch(id, owner))) {
        // Each batch commits on its own, so a large match holds no long transaction.
      }
      const taken = (yield* repo.get(id))!
      if (taken.status === "running" && taken.snapshot_complete && taken.total === 0) {
        yield* repo.advance(id, 0, true, LEASE_SECONDS)
      }
      yield* repo.release(owner, id)
      return toBulkRetry((yield* repo.get(id))!)
    })

    /** A page of jobs newest first, with the id of the last one (the next page's cursor) when the page is full. */
    const list = Effect.fn("BulkRetries.list")(function* (
      page: { readonly before?: string | undefined; readonly limit: number } = { limit: LISTED },
    ) {
      const rows = yield* repo.list(page.before === undefined ? undefined : Number(page.before), page.limit)
      return {
        bulk_retries: rows.map(toBulkRetry),
        lastId: rows.length === page.limit ? rows.at(-1)?.id : undefined,
      }
    })

    const get = Effect.fn("BulkRetries.get")(function* (id: string | number) {
      return toBulkRetry(yield* byId(id))
    })

    /**
     * Starts a preview at `rateInput`: the workers retry exactly the deliveries its snapshot holds (its `total`);
     * nothing matched completes at once. Anything but a preview is refused.
     */
    const start = Effect.fn("BulkRetries.start")(function* (
      id: string | number,
      rateInput: unknown,
      createdBy: string,
    ) {
      const row = yield* byId(id)
      const fields: Record<string, string> = {}
      const rate = readRate(rateInput, fields)
      if (Object.keys(fields).length > 0) return yield* new BulkRetryInvalid({ fields })
      const jobId = Number(row.id)
      yield* db.transaction(
        Effect.gen(function* () {
          const job = (yield* repo.lock(jobId))!
          if (job.status !== "previewed") {
            return yield* new BulkRetryInvalid({
              fields: { status: `is ${job.status}: only a preview starts` },
            })
          }
          if (job.recovery_endpoint_id !== null) {
            const running = yield* repo.runningRecovery(Number(job.recovery_endpoint_id))
            if (running !== undefined) return yield* new RecoveryRunning({ id: running })
          }
          yield* repo.start(jobId, rate, createdBy)
          if (job.snapshot_complete && job.total === 0) yield* repo.advance(jobId, 0, true, LEASE_SECONDS)
        }),
      )
      return toBulkRetry((yield* repo.get(jobId))!)
    })

    /** Stops a running job before its next step; a finished one is answered as it is. */
    const cancel = Effect.fn("BulkRetries.cancel")(function* (id: string | number) {
      const row = yield* byId(id)
      yield* repo.cancel(Number(row.id))
      return toBulkRetry((yield* repo.get(Number(row.id)))!)
    })

    /**
     * One step of a job `owner` holds: a batch of the snapshot if it is not complete yet, otherwise the next
     * `rate_per_second` deliveries retried with the progress recorded, in one transaction under the job's lock.
     */
    const step = Effect.fn("BulkRetries.step")(function* (id: number, owner: string) {
      const snapshotDone = yield* snapshotBatch(id, owner)
      return yield* db.transaction(
        Effect.gen(function* () {
          const job = yield* repo.lock(id)
          if (job === undefined || job.status !== "running" || job.lease_owner !== owner)
            return "stop" as Step
          if (!snapshotDone || !job.snapshot_complete) return "continue" as Step
          const batch = yield* repo.items(id, job.done, job.rate_per_second)
          if (batch.length > 0) yield* endpoints.retryDeliveries(batch)
          const done = job.done + batch.length
          const completed = done >= job.total
          yield* repo.advance(id, done, completed, LEASE_SECONDS)
          return (completed ? "stop" : "continue") as Step
        }),
      )
    })

    /** Running jobs nobody holds, now held by `owner`. */
    const claim = (owner: string) => repo.claim(owner, LEASE_SECONDS, JOBS_PER_CLAIM)
    /** Leaves the leases `owner` holds (of one job, or all). */
    const release = (owner: string, id?: number) => repo.release(owner, id)

    /**
     * A recovery's preview: a snapshot of `endpointId`'s failed deliveries created at or after `since`, at the
     * default rate, held until it is started like any preview (whose `total` is then exactly what it sends).
     */
    const previewRecovery = Effect.fn("BulkRetries.previewRecovery")(function* (
      endpointId: number,
      since: Date,
      createdBy: string,
    ) {
      const job = yield* create(
        { endpoint: String(endpointId), status: "failed", since: since.toISOString() },
        DEFAULT_RATE,
        createdBy,
        true,
        { endpointId, since },
      )
      return toRecovery((yield* repo.get(job.id))!)
    })

    /** A recovery with the endpoint it is of (a console bulk retry is no recovery: not found). */
    const recovery = Effect.fn("BulkRetries.recovery")(function* (id: string | number) {
      const row = yield* byId(id)
      if (row.recovery_endpoint_id === null) return yield* new BulkRetryNotFound()
      return toRecovery(row)
    })

    return { create, start, list, get, cancel, step, claim, release, previewRecovery, recovery }
  }),
}) {
  static readonly layer = Layer.effect(BulkRetries, BulkRetries.make).pipe(
    Layer.provide(Layer.mergeAll(BulkRetriesRepo.layer, DeliverySets.layer)),
  )

  /**
   * The worker side (the `workers` role): every second it takes running jobs nobody holds and runs each in a
   * fiber of its own, one step a second, until the job completes, is canceled or is taken over. Stopping the
   * layer stops the fibers and then leaves their leases, so another process (or this one, started again) resumes
   * the jobs where their progress says.
   */
  static readonly runnerLayer = Layer.effectDiscard(
    Effect.gen(function* () {
      const bulk = yield* BulkRetries
      const owner = `worker-${randomUUID()}`
      // Registered before the fibers' map, so it runs after they are interrupted. A stop while Postgres is
      // away (a failover) leaves the leases to expire: another process then claims the jobs all the same.
      yield* Effect.addFinalizer(() =>
        bulk
          .release(owner)
          .pipe(Effect.catchCause((cause) => logFailedPass("bulk retry leases not released at stop", cause))),
      )
      const running = yield* FiberMap.make<number>()

      const run = (id: number) =>
        bulk.step(id, owner).pipe(
          Effect.repeat({ schedule: Schedule.fixed("1 second"), while: (step) => step === "continue" }),
          Effect.catchCause((cause) =>
            Effect.logWarning("bulk retry step failed; job left to the next claim").pipe(
              Effect.annotateLogs({ bulk_retry_id: id, cause: String(cause) }),
              Effect.andThen(bulk.release(owner, id)),
            ),
          ),
        )

      const poll = Effect.gen(function* () {
        for (const id of yield* bulk.claim(owner)) {
          yield* FiberMap.run(running, id, { onlyIfMissing: true })(run(id))
        }
      }).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("bulk retry claim failed; trying again").pipe(
            Effect.annotateLogs({ cause: String(cause) }),
          ),
        ),
      )
      yield* Effect.forkScoped(poll.pipe(Effect.repeat(Schedule.spaced(POLL))))
    }),
  )
}
