import type postgres from "postgres"
import type { Db } from "../../backend/platform/Db.ts"

interface StatementStat {
  count: number
  ms: number
}

/** A connection reserved for a transaction (`Db.transaction`) rather than the pool. */
const isReserved = (sql: postgres.Sql) => "release" in sql

/**
 * Counts the service's SQL statements and round trips while it runs, by wrapping `Db.query` (repositories call it
 * on the shared service object; each call is one statement). A transaction adds its BEGIN and COMMIT, counted once
 * per reserved connection seen. A round trip is a statement sent while nothing else was in flight on its
 * connection (statements pipelined on a transaction's connection share one), a statement on the pool, or a BEGIN
 * or COMMIT. By statement: its text (the first template chunk) with how often it ran and its mean time, waiting
 * for a pooled connection included.
 */
export const statementCounter = (db: Db["Service"]) => {
  const target = db as { query: Db["Service"]["query"] }
  const original = target.query
  const stats = new Map<string, StatementStat>()
  const inFlight = new WeakMap<postgres.Sql, number>()
  const transactions = new WeakSet<postgres.Sql>()
  let transactionCount = 0
  let roundTrips = 0
  target.query = ((run: (sql: postgres.Sql) => Promise<unknown>) =>
    original((sql) => {
      let label = "(helper call)"
      const traced = new Proxy(sql, {
        apply: (fn, self, args: Array<unknown>) => {
          const strings = args[0]
          if (Array.isArray(strings) && "raw" in strings && label === "(helper call)") {
            label = (strings as ReadonlyArray<string>).join("$").replace(/\s+/g, " ").trim().slice(0, 90)
          }
          return Reflect.apply(fn, self, args) as unknown
        },
      })
      const reserved = isReserved(sql)
      if (reserved && !transactions.has(sql)) {
        transactions.add(sql)
        transactionCount++
      }
      const pending = reserved ? (inFlight.get(sql) ?? 0) : 0
      if (pending === 0) roundTrips++
      if (reserved) inFlight.set(sql, pending + 1)
      const start = performance.now()
      const record = () => {
        if (reserved) inFlight.set(sql, (inFlight.get(sql) ?? 1) - 1)
        const stat = stats.get(label) ?? { count: 0, ms: 0 }
        stat.count++
        stat.ms += performance.now() - start
        stats.set(label, stat)
      }
      return Promise.resolve(run(traced)).finally(record)
    })) as Db["Service"]["query"]
  const totals = () => {
    const queries = [...stats.values()].reduce((sum, stat) => sum + stat.count, 0)
    return {
      statements: queries + 2 * transactionCount,
      roundTrips: roundTrips + 2 * transactionCount,
      transactions: transactionCount,
    }
  }
  return {
    stop: () => {
      target.query = original
    },
    totals,
    /** How many statements ran whose text (its first 90 characters) holds `text`. */
    countOf: (text: string) =>
      [...stats.entries()].reduce((sum, [label, stat]) => sum + (label.includes(text) ? stat.count : 0), 0),
    /** The figures per unit of work (`units` of them, named `unit`), then each statement's share. */
    notes: (units: number, unit: string) => {
      const all = [...stats.entries()].sort((a, b) => b[1].count - a[1].count)
      const { statements, roundTrips, transactions } = totals()
      const per = (n: number) => (n / units).toFixed(3)
      return [
        `SQL per ${unit}: ${per(statements)} statements, ${per(roundTrips)} round trips, ${per(transactions)} ` +
          `transactions (BEGIN and COMMIT counted); by statement (per ${unit} x mean ms):`,
        ...all.map(
          ([label, stat]) =>
            `    ${(stat.count / units).toFixed(3)} x ${(stat.ms / stat.count).toFixed(2)} ms  ${label}`,
        ),
      ]
    },
  }
}
