import { randomBytes } from "node:crypto"
import type { Agent } from "node:http"
import { Context, Effect, Layer } from "effect"
import { appLayer } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { agentFrom, postFrom } from "./Loopback.ts"
import { percentile } from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"

const REQUESTS = Number(process.env.BENCH_TOKEN_REQUESTS ?? 30)
const ADDRESSES = Number(process.env.BENCH_TOKEN_FLOOD_ADDRESSES ?? 32)
/** Token requests each flooding address keeps in flight: as many as the service lets one source have. */
const IN_FLIGHT = 4
const WARMUP = 3

/**
 * A real client's token requests, one at a time from its own address: first alone, then while `ADDRESSES`
 * other addresses send wrong secrets for made-up client ids, `IN_FLIGHT` at a time each, as fast as answered.
 */
export const tokenUnderFlood = Effect.gen(function* () {
  const config = yield* AppConfig
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(appLayer(config))
      const auth = Context.get(context, Auth)
      const port = Context.get(context, ListeningPorts).get("partner-api")!
      const client = yield* auth.createClient({ gateway: "partner", name: "bench" })
      const fields = {
        grant_type: "client_credentials",
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: config.audiences.partner,
      }
      const own = agentFrom("127.0.0.1")
      const floodAgents = Array.from({ length: ADDRESSES }, (_, i) => agentFrom(`127.0.5.${i + 1}`))
      yield* Effect.addFinalizer(() => Effect.sync(() => [own, ...floodAgents].forEach((a) => a.destroy())))

      const measure = Effect.promise(async () => {
        const samples: Array<number> = []
        for (let i = 0; i < REQUESTS; i++) {
          const { ms, status } = await postFrom(port, "/token", own, fields)
          if (status !== 200) throw new Error(`the client's token request answered ${status}`)
          samples.push(ms)
        }
        return samples
      })
      for (let i = 0; i < WARMUP; i++) yield* Effect.promise(() => postFrom(port, "/token", own, fields))
      const alone = yield* measure

      const flood = { running: true, answers: new Map<number, number>() }
      const flooder = async (agent: Agent) => {
        while (flood.running) {
          const { status } = await postFrom(port, "/token", agent, {
            ...fields,
            client_id: `cli_${randomBytes(12).toString("base64url")}`,
            client_secret: "wrong",
          })
          flood.answers.set(status, (flood.answers.get(status) ?? 0) + 1)
        }
      }
      const flooding = Promise.all(
        floodAgents.flatMap((agent) => Array.from({ length: IN_FLIGHT }, () => flooder(agent))),
      )
      // Until the strangers' queue is full: the first wrong secrets have been answered.
      while ([...flood.answers.values()].reduce((a, b) => a + b, 0) < IN_FLIGHT) {
        yield* Effect.sleep("50 millis")
      }
      const floodStart = performance.now()
      const answeredBefore = new Map(flood.answers)
      const underFlood = yield* measure
      const floodSeconds = (performance.now() - floodStart) / 1000
      const answered = [...flood.answers].map(
        ([status, n]) => [status, n - (answeredBefore.get(status) ?? 0)] as const,
      )
      flood.running = false
      yield* Effect.promise(() => flooding)

      const row: LatencyRow = {
        name: `token: a client's POST /token while ${ADDRESSES} addresses send wrong secrets (${IN_FLIGHT} in flight each), ${REQUESTS} requests`,
        p50: percentile(underFlood, 50),
        p99: percentile(underFlood, 99),
        baselineP50: percentile(alone, 50),
        baselineP99: percentile(alone, 99),
        baselineName: "the same client's POST /token, no flood, just before",
      }
      const note =
        `token: the flood's wrong secrets answered while the client was measured (${floodSeconds.toFixed(1)} s): ` +
        answered.map(([status, n]) => `${n} x ${status}`).join(", ") +
        `; scrypt cost ${config.secretHashCost}, ${config.tokenHashConcurrency} hash slot(s) in the process`
      return { rows: [row], notes: [note] }
    }),
  )
})
