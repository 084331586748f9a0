import { Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"

/** The SQL of bulk retries: jobs, their snapshot of delivery ids, and the lease a worker holds a job under. */

export type BulkRetryStatus = "previewed" | "running" | "completed" | "canceled"

export interface BulkRetryRow {
  readonly id: string
  readonly filter: Readonly<Record<string, unknown>>
  readonly rate_per_second: number
  readonly status: BulkRetryStatus
  readonly total: number
  readonly done: number
  readonly snapshot_complete: boolean
  readonly snapshot_after: string | null
  readonly created_by: string
  readonly created_at: Date
  readonly finished_at: Date | null
  readonly lease_owner: string | null
  /** A recovery's endpoint and time (a portal's "send again since"); null for the console's bulk retries. */
  readonly recovery_endpoint_id: string | null
  readonly recovery_since: Date | null
  /** Given when the job starts (`bulk_retry_numbers`); null for a preview. */
  readonly number: string | null
}

const COLUMNS = [
  "id",
  "filter",
  "rate_per_second",
  "status",
  "total",
  "done",
  "snapshot_complete",
  "snapshot_after",
  "created_by",
  "created_at",
  "finished_at",
  "lease_owner",
  "recovery_endpoint_id",
  "recovery_since",
  "number",
] as const satisfies ReadonlyArray<keyof BulkRetryRow>

export class BulkRetriesRepo extends Context.Service<BulkRetriesRepo>()(
  "partner-service/webhooks/BulkRetriesRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const one = (rows: ReadonlyArray<BulkRetryRow>) => rows[0]

      /** A new job (running, or a preview), leased to `owner` (its creator, while it takes the snapshot). */
      const insert = (
        filter: Readonly<Record<string, unknown>>,
        rate: number,
        createdBy: string,
        owner: string,
        leaseSeconds: number,
        status: "running" | "previewed" = "running",
        recovery?: { readonly endpointId: number; readonly since: Date },
      ) =>
        db
          .query(
            (sql) => sql<Array<BulkRetryRow>>`
              insert into bulk_retries (filter, rate_per_second, created_by, lease_owner, lease_until, status,
                                        recovery_endpoint_id, recovery_since, number)
              values (${sql.json(filter as never)}, ${rate}, ${createdBy}, ${owner},
                      now() + ${leaseSeconds} * interval '1 second', ${status},
                      ${recovery?.endpointId ?? null}, ${recovery?.since ?? null},
                      ${status === "running" ? sql`nextval('bulk_retry_numbers')` : null})
              returning ${sql(COLUMNS)}`,
          )
          .pipe(Effect.map((rows) => rows[0]!))

      const get = (id: number) =>
        db
          .query((sql) => sql<Array<BulkRetryRow>>`select ${sql(COLUMNS)} from bulk_retries where id = ${id}`)
          .pipe(Effect.map(one))

      /** The job, locked until the transaction ends (a step and a cancel take turns). */
      const lock = (id: number) =>
        db
          .query(
            (sql) => sql<Array<BulkRetryRow>>`
              select ${sql(COLUMNS)} from bulk_retries where id = ${id} for update`,
          )
          .pipe(Effect.map(one))

      /** Jobs newest first, older than the job `before` when given (the list's cursor). */
      const list = (before: number | undefined, limit: number) =>
        db.query(
          (sql) => sql<Array<BulkRetryRow>>`
            select ${sql(COLUMNS)} from bulk_retries
            where status <> 'previewed' ${before === undefined ? sql`` : sql`and id < ${before}`}
            order by id desc limit ${limit}`,
        )

      /**
       * The running recovery of `endpointId`, if any, read after waiting for any other start of one of its
       * recoveries (a lock held to the end of the caller's transaction): one runs at a time per endpoint.
       */
      const runningRecovery = (endpointId: number) =>
        Effect.gen(function* () {
          yield* db.query(
            (sql) =>
              sql`select pg_advisory_xact_lock(hashtext('bulk_retries.recovery'), hashtext(${String(endpointId)}))`,
          )
          const rows = yield* db.query(
            (sql) => sql<Array<{ id: string }>>`
              select id from bulk_retries
              where recovery_endpoint_id = ${endpointId} and status = 'running'
              limit 1`,
          )
          return rows[0] === undefined ? undefined : Number(rows[0].id)
        })

      /** Snapshot items at positions `first`, `first + 1`, ... */
      const addItems = (id: number, first: number, deliveryIds: ReadonlyArray<number>) =>
        deliveryIds.length === 0
          ? Effect.void
          : db.query(
              (sql) => sql`
                insert into bulk_retry_items (bulk_retry_id, position, delivery_id)
                select ${id}, ${first} + n - 1, delivery_id
                from unnest(${deliveryIds as Array<number>}::bigint[]) with ordinality as i(delivery_id, n)`,
            )

      const saveSnapshot = (id: number, total: number, after: string | null, leaseSeconds: number) =>
        db.query(
          (sql) => sql`
            update bulk_retries set total = ${total}, snapshot_after = ${after},
              snapshot_complete = ${after === null}, lease_until = now() + ${leaseSeconds} * interval '1 second'
            where id = ${id}`,
        )

      /** The delivery ids after position `done`, in order. */
      const items = (id: number, done: number, limit: number) =>
        db
          .query(
            (sql) => sql<Array<{ delivery_id: string }>>`
              select delivery_id from bulk_retry_items
              where bulk_retry_id = ${id} and position > ${done}
              order by position limit ${limit}`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => Number(row.delivery_id))))

      /** Records progress; a job done is completed and leaves its lease. */
      const advance = (id: number, done: number, completed: boolean, leaseSeconds: number) =>
        db.query(
          (sql) => sql`
            update bulk_retries set done = ${done},
              status = case when ${completed} then 'completed' else status end,
              finished_at = case when ${completed} then now() else finished_at end,
              lease_owner = case when ${completed} then null else lease_owner end,
              lease_until = case when ${completed} then null
                                 else now() + ${leaseSeconds} * interval '1 second' end
            where id = ${id}`,
        )

      /** Starts a preview (locked by the caller) at `rate`, as created by `createdBy` now; workers take it from here. */
      const start = (id: number, rate: number, createdBy: string) =>
        db.query(
          (sql) => sql`
            update bulk_retries set status = 'running', rate_per_second = ${rate}, created_by = ${createdBy},
              created_at = now(), lease_owner = null, lease_until = null, number = nextval('bulk_retry_numbers')
            where id = ${id} and status = 'previewed'`,
        )

      /** Cancels a running job; a finished one is left as it is. */
      const cancel = (id: number) =>
        db.query(
          (sql) => sql`
            update bulk_retries set status = 'canceled', finished_at = now(), lease_owner = null,
              lease_until = null
            where id = ${id} and status = 'running'`,
        )

      /** Running jobs nobody holds (never taken, released, or whose holder stopped), now leased to `owner`. */
      const claim = (owner: string, leaseSeconds: number, limit: number) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              update bulk_retries set lease_owner = ${owner},
                lease_until = now() + ${leaseSeconds} * interval '1 second'
              where id in (
                select id from bulk_retries
                where status = 'running' and (lease_until is null or lease_until < now())
                order by id limit ${limit}
                for update skip locked)
              returning id`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => Number(row.id))))

      /** Leaves the leases of `owner` (of one job, or all), so another worker takes them at once. */
      const release = (owner: string, id?: number) =>
        db.query(
          (sql) => sql`
            update bulk_retries set lease_owner = null, lease_until = null
            where lease_owner = ${owner} ${id === undefined ? sql`` : sql`and id = ${id}`}`,
        )

      return {
        insert,
        get,
        lock,
        list,
        addItems,
        saveSnapshot,
        items,
        advance,
        start,
        cancel,
        claim,
        release,
        runningRecovery,
      }
    }),
  },
) {
  static readonly layer = Layer.effect(BulkRetriesRepo, BulkRetriesRepo.make)
}
