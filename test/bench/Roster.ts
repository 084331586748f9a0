import { Context, Effect, Layer } from "effect"
import { Pool } from "undici"
import { appLayer } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { cpuProfile, percentile } from "./Probes.ts"
import { statementCounter } from "./Statements.ts"

export interface LatencyRow {
  readonly name: string
  readonly p50: number
  readonly p99: number
  readonly baselineP50: number
  readonly baselineP99: number
  readonly baselineName: string
}

const RUNS = Number(process.env.BENCH_BATCH_RUNS ?? 30)
/** A file to write a V8 CPU profile of the measured batches to (this thread: the service and the load alike). */
const CPU_PROFILE = process.env.BENCH_ROSTER_CPU_PROFILE
const BUILDINGS = 50

/** 500 buildings at distinct addresses. */
const propertyBatch = (round: number) =>
  Array.from({ length: 500 }, (_, i) => ({
    external_system_id: `bench-p-${i}`,
    building_name: `Building ${i}`,
    address: {
      line_one: `${100 + i} North Main Street Apt 1`,
      city: "Springfield",
      state: "Illinois",
      zip: "62704-1234",
    },
    pms_type: "yardi",
    pms_property_id: `pms-${i}`,
    default_coverage: { type: "multiplier", value: 1 + (round % 2) },
  }))

/** 500 units, ten in each of 50 buildings, named by the designators in their addresses. */
const unitBatch = () =>
  Array.from({ length: 500 }, (_, i) => ({
    external_system_id: `bench-u-${i}`,
    property_external_id: `bench-p-${i % BUILDINGS}`,
    address: {
      line_one: `${100 + (i % BUILDINGS)} N Main St Apt ${Math.floor(i / BUILDINGS) + 1}`,
      city: "Springfield",
      state: "IL",
      zip: "62704",
    },
    pms_unit_id: `pms-u-${i}`,
  }))

const timedPost = (pool: Pool, path: string, token: string, body: unknown) =>
  Effect.promise(async () => {
    const payload = JSON.stringify(body)
    const start = performance.now()
    const response = await pool.request({
      method: "POST",
      path,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: payload,
    })
    const answer = (await response.body.json()) as { meta?: { failed: number } }
    const elapsed = performance.now() - start
    if (response.statusCode !== 200 || (answer.meta !== undefined && answer.meta.failed !== 0)) {
      throw new Error(`${path} answered ${response.statusCode}: ${JSON.stringify(answer).slice(0, 300)}`)
    }
    return elapsed
  })

/** The raw baseline: one multi-row postgres.js upsert of 500 rows of the same width. */
const rawUpsert = (round: number, query: Db["Service"]["query"]) =>
  Effect.gen(function* () {
    const rows = Array.from({ length: 500 }, (_, i) => ({
      id: i,
      name: `Unit ${i}`,
      line_one: `${100 + (i % BUILDINGS)} N Main St Apt ${Math.floor(i / BUILDINGS) + 1}`,
      city: "Springfield",
      state: "IL",
      zip: "62704",
      pms_unit_id: `pms-u-${i}-${round}`,
    }))
    const start = performance.now()
    yield* query(
      (sql) => sql`
        insert into bench_raw ${sql(rows, "id", "name", "line_one", "city", "state", "zip", "pms_unit_id")}
        on conflict (id) do update set name = excluded.name, line_one = excluded.line_one, city = excluded.city,
          state = excluded.state, zip = excluded.zip, pms_unit_id = excluded.pms_unit_id, updated_at = now()`,
    )
    return performance.now() - start
  })

/** p50/p99 of 500-item property and unit batches through the partner gateway, next to the raw upsert. */
export const rosterBatches = Effect.gen(function* () {
  const db = yield* Db
  const config = yield* AppConfig
  yield* db.query(
    (sql) => sql`
      create table bench_raw (id int primary key, name text, line_one text, city text, state text, zip text,
                              pms_unit_id text, updated_at timestamptz not null default now())`,
  )
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(appLayer(config))
      const auth = Context.get(context, Auth)
      const port = Context.get(context, ListeningPorts).get("partner-api")!
      const client = yield* auth.createClient({ gateway: "partner", name: "bench" })
      const { access_token: token } = yield* auth.issueToken("partner", {
        grant_type: "client_credentials",
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: config.audiences.partner,
      })
      const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1 })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.close()))
      yield* timedPost(pool, "/partners/property_owners", token, { external_org_id: "bench", name: "Bench" })

      const properties: Array<number> = []
      const units: Array<number> = []
      const raw: Array<number> = []
      // The service's statements of each kind of batch: the counter's totals before and after each of them.
      const rawQuery = db.query
      const statements = statementCounter(db)
      const sql = { properties: { statements: 0, roundTrips: 0 }, units: { statements: 0, roundTrips: 0 } }
      const counted = <A>(kind: keyof typeof sql, post: Effect.Effect<A>) =>
        Effect.gen(function* () {
          const before = statements.totals()
          const result = yield* post
          const after = statements.totals()
          sql[kind].statements += after.statements - before.statements
          sql[kind].roundTrips += after.roundTrips - before.roundTrips
          return result
        })
      const stopProfile =
        CPU_PROFILE === undefined ? undefined : yield* Effect.promise(() => cpuProfile(CPU_PROFILE, 250))
      for (let round = 0; round < RUNS; round++) {
        properties.push(
          yield* counted(
            "properties",
            timedPost(pool, "/partners/bench/properties", token, propertyBatch(round)),
          ),
        )
        units.push(yield* counted("units", timedPost(pool, "/partners/bench/units", token, unitBatch())))
        raw.push(yield* rawUpsert(round, rawQuery))
      }
      statements.stop()
      if (stopProfile !== undefined) yield* Effect.promise(() => stopProfile())
      const perItem = (kind: keyof typeof sql) =>
        `${(sql[kind].statements / (RUNS * 500)).toFixed(3)} statements, ` +
        `${(sql[kind].roundTrips / (RUNS * 500)).toFixed(3)} round trips`
      const baseline = { baselineP50: percentile(raw, 50), baselineP99: percentile(raw, 99) }
      const baselineName = "one postgres.js upsert of 500 rows"
      const notes = [
        `roster: SQL per item: units ${perItem("units")}; properties ${perItem("properties")} ` +
          `(BEGIN and COMMIT counted); by statement, both kinds:`,
        ...statements.notes(RUNS * 1000, "item").slice(1),
      ]
      const latencies = [
        {
          name: `roster: 500-unit batch with addresses (matching, derivation), ${RUNS} runs`,
          p50: percentile(units, 50),
          p99: percentile(units, 99),
          ...baseline,
          baselineName,
        },
        {
          name: `roster: 500-property batch (normalization, matching), ${RUNS} runs`,
          p50: percentile(properties, 50),
          p99: percentile(properties, 99),
          ...baseline,
          baselineName,
        },
      ] satisfies Array<LatencyRow>
      return { latencies, notes }
    }),
  )
})
