import { randomBytes } from "node:crypto"
import { Effect, Layer } from "effect"
import postgres from "postgres"
import { Deliveries, encodeCursor } from "../../backend/operator/DeliveryQueries.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { databaseUrl as parseDatabaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"
import { Db, ensureDatabase } from "../../backend/platform/Db.ts"
import { EventNames } from "../../backend/events/Catalog.ts"
import { Endpoints } from "../../backend/webhooks/endpoints/Endpoints.ts"
import { baseDatabaseUrl } from "../support/TestPlatform.ts"
import { percentile } from "./Probes.ts"

/**
 * The operator console's delivery queries at volume: `BENCH_CONSOLE_DELIVERIES` deliveries (1,000,000) with five
 * attempts each on average (5,000,000), seeded with generate_series into a database of the benchmark's own
 * (`ps_bench_console`), kept between runs (reseeded when its counts differ, or with `BENCH_CONSOLE_RESEED=1`).
 * For each filter of the list: the first page and a deep page (a cursor 90% of the way down, at most 500,000
 * rows), through the `Deliveries` service, beside a bare query reading the same page from the same index; the
 * detail of a delivery beside reading its row and attempts; the count of each filter (the bulk retry's preview,
 * not in the 200 ms target). p50 and p95 of `BENCH_CONSOLE_RUNS` runs (5 for a count) after three warm-up runs.
 */
const DELIVERIES = Number(process.env.BENCH_CONSOLE_DELIVERIES ?? 1_000_000)
const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 30)
const COUNT_RUNS = 5
const RESEED = process.env.BENCH_CONSOLE_RESEED === "1"
const LIMIT = 50
const OWNERS = 200
const PROVIDERS = 10
const TARGET_MS = 200

const databaseUrl = withDatabase(parseDatabaseUrl(baseDatabaseUrl), "ps_bench_console")

interface Seeded {
  readonly masterKey: string
  readonly deliveries: number
}

/** The marker of a complete seed: its size and the master key its secrets are sealed with. */
const readMarker = async (): Promise<Seeded | undefined> => {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined })
  try {
    const [row] = await sql<Array<{ master_key: string; deliveries: number }>>`
      select master_key, deliveries from bench_console_seed where complete`.catch(() => [])
    return row === undefined ? undefined : { masterKey: row.master_key, deliveries: row.deliveries }
  } finally {
    await sql.end()
  }
}

const dropDatabase = async () => {
  const sql = postgres(withDatabase(parseDatabaseUrl(databaseUrl), "postgres"), {
    max: 1,
    onnotice: () => undefined,
  })
  await sql`drop database if exists ps_bench_console with (force)`
  await sql.end()
}

/** The services on the bench database (migrated on every run, so the indexes are the code's). */
const servicesLayer = (masterKey: string) =>
  Deliveries.layer.pipe(
    Layer.provideMerge(Endpoints.layer),
    Layer.provideMerge(Crypto.layer),
    Layer.provideMerge(Db.layer),
    Layer.provide(
      AppConfig.layerFrom({
        ...process.env,
        DATABASE_URL: databaseUrl,
        MASTER_KEY: masterKey,
        LOG_LEVEL: "warn",
      }),
    ),
  )

/**
 * Owners with an endpoint each, providers covering a tenth of the owners with two endpoints each, a sealed
 * secret per subscriber; then the deliveries (newest ids newest, spread over 30 days, statuses mostly delivered)
 * and their attempts, written with the table's secondary indexes dropped and built again afterwards.
 */
const seed = Effect.gen(function* () {
  const db = yield* Db
  const crypto = yield* Crypto
  yield* db.query(
    (sql) => sql`
      insert into owners (slug, name)
      select 'bench-owner-' || i, 'Bench Owner ' || i from generate_series(0, ${OWNERS - 1}) i`,
  )
  yield* db.query(
    (sql) =>
      sql`insert into providers (name) select 'bench-provider-' || i from generate_series(0, ${PROVIDERS - 1}) i`,
  )
  yield* db.query(
    (sql) => sql`
      insert into provider_owners (provider_id, owner_id)
      select p.id, o.id from providers p join owners o
        on split_part(o.slug, '-', 3)::int % ${PROVIDERS} = split_part(p.name, '-', 3)::int`,
  )
  yield* db.query((sql) =>
    sql`
      insert into webhook_subscribers (owner_id) select id from owners;
      insert into webhook_subscribers (provider_id) select id from providers`.simple(),
  )
  // Rank 0..OWNERS-1: owner n's endpoint; OWNERS + 2p, OWNERS + 2p + 1: provider p's two endpoints.
  yield* db.query(
    (sql) => sql`
      insert into webhook_endpoints (subscriber_id, name, destination_url, events)
      select s.id, 'bench ' || o.slug, 'https://' || o.slug || '.example/hooks', ${sql.array([...EventNames])}::text[]
      from webhook_subscribers s join owners o on o.id = s.owner_id
      order by split_part(o.slug, '-', 3)::int`,
  )
  yield* db.query(
    (sql) => sql`
      insert into webhook_endpoints (subscriber_id, name, destination_url, events)
      select s.id, 'bench ' || p.name || ' ' || k, 'https://' || p.name || '.example/hooks/' || k,
             ${sql.array([...EventNames])}::text[]
      from webhook_subscribers s join providers p on p.id = s.provider_id cross join generate_series(1, 2) k
      order by split_part(p.name, '-', 3)::int, k`,
  )
  const subscribers = yield* db.query((sql) => sql<Array<{ id: string }>>`select id from webhook_subscribers`)
  for (const s of subscribers) {
    const sealed = yield* crypto.seal(randomBytes(32))
    yield* db.query(
      (sql) => sql`insert into webhook_secrets (subscriber_id, secret_sealed) values (${s.id}, ${sealed})`,
    )
  }

  const indexes = yield* db.query(
    (sql) => sql<Array<{ name: string; definition: string }>>`
      select i.indexname as name, i.indexdef as definition from pg_indexes i
      where i.tablename = 'webhook_deliveries'
        and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
  )
  yield* db.query((sql) => sql.unsafe(indexes.map((i) => `drop index ${i.name};`).join("\n")))
  yield* db.query((sql) =>
    sql`
      create temporary table bench_ranks as
      select row_number() over (order by e.id) - 1 as rank, e.id as endpoint_id from webhook_endpoints e;
      set maintenance_work_mem = '256MB';`.simple(),
  )
  const events = [...EventNames]
  yield* db.query(
    (sql) => sql`
      insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, series,
        attempt_number, last_attempted_at, next_retry_at, duration_ms, last_attempt_failure_reason, delivered_at,
        created_at, updated_at, dispatched_at, held_since)
      select r.endpoint_id, 'bench-' || i, e.event,
             'bench-owner-' || (case when i % ${OWNERS + 2 * PROVIDERS} < ${OWNERS} then i % ${OWNERS + 2 * PROVIDERS}
                                     else ((i / ${OWNERS + 2 * PROVIDERS}) % ${OWNERS / PROVIDERS}) * ${PROVIDERS}
                                          + (i % ${OWNERS + 2 * PROVIDERS} - ${OWNERS}) / 2 end),
             convert_to('{"event":"' || e.event || '","property_owner_slug":"bench","data":{"external_id":"ext-'
                        || i || '","amount_cents":' || (i % 100000) || ',"note":"' || repeat('x', 120) || '"}}',
                        'UTF8'),
             s.status, 1, 1 + i % 9, t.created + (i % 9) * interval '1 minute',
             case when s.status in ('retrying', 'rate_limited') then t.created + interval '2 hours' end,
             20 + i % 400,
             case when s.status in ('failed', 'retrying') then 'Destination answered 500' end,
             case when s.status = 'delivered' then t.created + (i % 9) * interval '1 minute' end,
             t.created, t.created, t.created,
             case when h.roll = 98 and i % 10 = 0 then t.created end
      from generate_series(1, ${DELIVERIES}) i
      join bench_ranks r on r.rank = i % ${OWNERS + 2 * PROVIDERS}
      cross join lateral (select (${events}::text[])[1 + (i / 7) % ${events.length}] as event) e
      cross join lateral (select abs(hashint4(i)) % 100 as roll) h
      cross join lateral (select case when h.roll < 90 then 'delivered' when h.roll < 95 then 'failed'
                                      when h.roll < 98 then 'retrying' when h.roll = 98 then 'pending'
                                      else 'rate_limited' end as status) s
      cross join lateral (select timestamptz '2026-10-01T00:00:00Z'
                                 + (i::float8 / ${DELIVERIES}) * interval '30 days' as created) t
      order by i`,
  )
  yield* db.query(
    (sql) => sql`
      insert into webhook_attempts (delivery_id, series, attempt_number, started_at, status_code, duration_ms,
                                    failure_reason, response_body)
      select d.id, 1, k, d.created_at + (k - 1) * interval '1 minute',
             case when k = d.attempt_number and d.status = 'delivered' then 200 else 500 end,
             20 + (d.id + k) % 400,
             case when k = d.attempt_number and d.status = 'delivered' then null
                  else 'Destination answered 500' end,
             case when k = d.attempt_number and d.status = 'delivered' then 'ok' else 'internal error' end
      from webhook_deliveries d cross join lateral generate_series(1, d.attempt_number) k
      order by d.id, k`,
  )
  for (const index of indexes) yield* db.query((sql) => sql.unsafe(index.definition))
  yield* db.query((sql) => sql`analyze`)
  const [counts] = yield* db.query(
    (sql) => sql<Array<{ deliveries: number; attempts: number }>>`
      select (select count(*) from webhook_deliveries)::int as deliveries,
             (select count(*) from webhook_attempts)::int as attempts`,
  )
  return counts!
})

interface Position {
  readonly us: string
  readonly id: string
}
type Fragment = postgres.PendingQuery<postgres.Row[]>

interface Case {
  readonly name: string
  readonly filter: Record<string, string>
  /** The filter's rows in SQL (to find a deep position with an offset, once). */
  readonly where: Fragment
  /** The same page read bare: the filter's rows, newest first, from the index that serves it. */
  readonly bare: (after: Position | undefined) => Fragment
}

const timeIt = async (run: () => Promise<unknown>, runs = RUNS) => {
  for (let i = 0; i < 3; i++) await run()
  const samples: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await run()
    samples.push(performance.now() - start)
  }
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) }
}

export interface ConsoleRow {
  readonly name: string
  readonly ours: { readonly p50: number; readonly p95: number }
  readonly bare: { readonly p50: number; readonly p95: number }
  readonly count?: { readonly p50: number; readonly p95: number }
}

const measure = (sql: postgres.Sql) =>
  Effect.gen(function* () {
    const deliveries = yield* Deliveries
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.orDie(effect))
    const query = <A>(q: () => Promise<A>) => Effect.promise(q)
    const [ep] = yield* query(
      () => sql<Array<{ id: string }>>`select id from webhook_endpoints order by id offset 7 limit 1`,
    )
    const providerEndpoints = (yield* query(
      () => sql<Array<{ id: string }>>`
        select e.id from webhook_endpoints e join webhook_subscribers s on s.id = e.subscriber_id
        join providers p on p.id = s.provider_id where p.name = 'bench-provider-3' order by e.id`,
    )).map((r) => r.id)
    const [middle] = yield* query(
      () => sql<Array<{ id: string }>>`
        select id from webhook_deliveries order by id offset ${Math.floor(DELIVERIES / 2)} limit 1`,
    )
    // A running scheduler leaves no retry overdue: those the seed scheduled (now in the past) are moved into the
    // next hour, as a live system's waiting retries are.
    yield* query(
      () => sql`
        update webhook_deliveries set next_retry_at = now() + (id % 3600) * interval '1 second'
        where status in ('retrying', 'rate_limited') and next_retry_at < now() + interval '1 minute'`,
    )
    const endpointId = ep!.id
    const since = "2026-10-15T00:00:00Z"
    const until = "2026-10-16T00:00:00Z"
    const older = (after: Position | undefined) =>
      after === undefined
        ? sql``
        : sql`and (created_at, id) < (timestamptz 'epoch' + ${after.us}::bigint * interval '1 microsecond',
                                      ${after.id}::bigint)`
    const simple = (name: string, filter: Record<string, string>, where: Fragment): Case => ({
      name,
      filter,
      where,
      bare: (after) => sql`
        select * from webhook_deliveries where ${where} ${older(after)}
        order by created_at desc, id desc limit ${LIMIT + 1}`,
    })
    const cases: ReadonlyArray<Case> = [
      simple("no filter", {}, sql`true`),
      simple("owner", { owner: "bench-owner-7" }, sql`owner_slug = 'bench-owner-7'`),
      {
        name: "provider (2 endpoints)",
        filter: { provider: "bench-provider-3" },
        where: sql`endpoint_id = any(${providerEndpoints}::bigint[])`,
        bare: (after) => sql`
          select d.* from unnest(${providerEndpoints}::bigint[]) x(endpoint_id)
          cross join lateral (select * from webhook_deliveries
                              where endpoint_id = x.endpoint_id ${older(after)}
                              order by created_at desc, id desc limit ${LIMIT + 1}) d
          order by d.created_at desc, d.id desc limit ${LIMIT + 1}`,
      },
      simple("endpoint", { endpoint: endpointId }, sql`endpoint_id = ${endpointId}`),
      simple("event type", { event_type: "policy.created" }, sql`event = 'policy.created'`),
      simple("status failed", { status: "failed" }, sql`status = 'failed'`),
      simple("status held", { status: "held" }, sql`held_since is not null`),
      {
        name: "status delivering (none in flight: the 10,000 first attempts waiting are read)",
        filter: { status: "delivering" },
        where: sql`status in ('pending', 'retrying', 'rate_limited') and held_since is null and lease_until > now()`,
        bare: (after) => sql`
          select * from webhook_deliveries
          where status = 'pending' and next_retry_at is null and held_since is null and lease_until > now()
            ${older(after)}
          order by created_at desc, id desc limit ${LIMIT + 1}`,
      },
      simple(
        "since/until (one day)",
        { since, until },
        sql`created_at >= ${since} and created_at < ${until}`,
      ),
      simple("delivery id", { id: middle!.id }, sql`id = ${middle!.id}`),
      simple(
        "endpoint + status failed + since",
        { endpoint: endpointId, status: "failed", since },
        sql`endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${since}`,
      ),
    ]
    const rows: Array<ConsoleRow> = []
    for (const c of cases) {
      const count = yield* deliveries.count(c.filter).pipe(Effect.orDie)
      rows.push({
        name: `${c.name} (${count.toLocaleString("en-US")} rows): first page`,
        ours: yield* query(() => timeIt(() => run(deliveries.list({ ...c.filter, limit: String(LIMIT) })))),
        bare: yield* query(() => timeIt(() => c.bare(undefined))),
        // A count reads every matching entry: fewer runs.
        count: yield* query(() => timeIt(() => run(deliveries.count(c.filter)), COUNT_RUNS)),
      })
      // A deep page: after the row 90% of the way down the filter's rows (at most 500,000 rows down).
      const depth = Math.min(500_000, Math.floor(count * 0.9))
      if (depth <= LIMIT) continue
      const [deep] = yield* query(
        () => sql<Array<Position>>`
          select (extract(epoch from created_at) * 1000000)::bigint as us, id from webhook_deliveries
          where ${c.where} order by created_at desc, id desc offset ${depth} limit 1`,
      )
      const cursor = encodeCursor({ created_us: deep!.us, id: deep!.id })
      rows.push({
        name: `${c.name}: the page ${depth.toLocaleString("en-US")} rows down`,
        ours: yield* query(() =>
          timeIt(() => run(deliveries.list({ ...c.filter, limit: String(LIMIT), cursor }))),
        ),
        bare: yield* query(() => timeIt(() => c.bare(deep))),
      })
    }
    const ids = (yield* query(
      () =>
        sql<
          Array<{ id: string }>
        >`select id from webhook_deliveries tablesample system (1) limit ${RUNS + 3}`,
    )).map((r) => r.id)
    let i = 0
    const detail = yield* query(() => timeIt(() => run(deliveries.detail(ids[i++ % ids.length]!))))
    let j = 0
    const bareDetail = yield* query(() =>
      timeIt(async () => {
        const id = ids[j++ % ids.length]!
        await sql`select * from webhook_deliveries where id = ${id}`
        await sql`select * from webhook_attempts where delivery_id = ${id} order by series, attempt_number`
      }),
    )
    rows.push({ name: "detail (payload, signed headers, attempts)", ours: detail, bare: bareDetail })
    return rows
  })

const ms = (t: { readonly p50: number; readonly p95: number }) =>
  `${t.p50.toFixed(1)} / ${t.p95.toFixed(1)} ms`

export const formatConsole = (rows: ReadonlyArray<ConsoleRow>) =>
  [
    `| delivery query (limit ${LIMIT}) | ours p50 / p95 | bare indexed query p50 / p95 | ours / bare (p95) | p95 < ${TARGET_MS} ms | count (preview, not in the target) p50 / p95 |`,
    "|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${ms(r.ours)} | ${ms(r.bare)} | ${(r.ours.p95 / r.bare.p95).toFixed(1)}x | ${r.ours.p95 < TARGET_MS ? "yes" : "**no**"} | ${r.count ? ms(r.count) : ""} |`,
    ),
  ].join("\n")

/** Seeds the bench database when it is missing or of another size, then measures; the rows and a note. */
export const consoleBench = Effect.gen(function* () {
  let marker = RESEED ? undefined : yield* Effect.promise(readMarker)
  const notes: Array<string> = []
  if (marker === undefined || marker.deliveries !== DELIVERIES) {
    yield* Effect.promise(dropDatabase)
    yield* ensureDatabase(databaseUrl)
    const masterKey = randomBytes(32).toString("base64")
    const started = performance.now()
    const counts = yield* Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(servicesLayer(masterKey))
        return yield* Effect.gen(function* () {
          yield* (yield* Db).migrate
          return yield* seed
        }).pipe(Effect.provide(context))
      }),
    )
    yield* Effect.promise(async () => {
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined })
      await sql`create table bench_console_seed (master_key text not null, deliveries integer not null,
                                                  complete boolean not null)`
      await sql`insert into bench_console_seed values (${masterKey}, ${counts.deliveries}, true)`
      await sql.end()
    })
    marker = { masterKey, deliveries: counts.deliveries }
    notes.push(
      `console: seeded ${counts.deliveries.toLocaleString("en-US")} deliveries and ${counts.attempts.toLocaleString("en-US")} attempts in ${((performance.now() - started) / 1000).toFixed(0)} s (kept in ps_bench_console for the next run)`,
    )
  } else {
    notes.push(
      `console: reused the ${marker.deliveries.toLocaleString("en-US")} deliveries seeded in ps_bench_console`,
    )
  }
  const rows = yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(servicesLayer(marker.masterKey))
      yield* Effect.provide(
        Effect.flatMap(Effect.service(Db), (db) => db.migrate),
        context,
      )
      const sql = yield* Effect.acquireRelease(
        Effect.sync(() => postgres(databaseUrl, { max: 1, onnotice: () => undefined })),
        (s) => Effect.promise(() => s.end()),
      )
      return yield* measure(sql).pipe(Effect.provide(context))
    }),
  )
  return { table: formatConsole(rows), notes }
})
