import { Worker } from "node:worker_threads"
import { Context, Effect, Layer } from "effect"
import { appLayer } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import { Operators } from "../../backend/operator/Operators.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { agentFrom, postFrom } from "./Loopback.ts"
import { percentile } from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"

const REQUESTS = Number(process.env.BENCH_SIGN_IN_REQUESTS ?? 20)
/** Connections of the flood, all from one address, each sending the next sign-in as soon as one is answered. */
const CONNECTIONS = Number(process.env.BENCH_SIGN_IN_FLOOD_CONNECTIONS ?? 40)
const WARMUP = 3
const FLOOD_FROM = "127.0.0.2"
const OPERATOR_FROM = "127.0.0.3"
const PARTNER_FROM = "127.0.0.4"
const PASSWORD = "correct horse battery staple"

/**
 * The flood: `connections` keep-alive connections from `from`, each sending a sign-in of a new unknown email as
 * soon as the previous one is answered; answers by status, sent back when asked.
 */
const FLOOD_WORKER = `
const { randomBytes } = require("node:crypto")
const { Agent, request } = require("node:http")
const { parentPort, workerData } = require("node:worker_threads")
const { port, from, connections } = workerData
const agent = new Agent({ keepAlive: true, localAddress: from, maxSockets: connections })
const answers = {}
parentPort.on("message", () => parentPort.postMessage({ ...answers }))
const signIn = () => {
  const body = JSON.stringify({ email: randomBytes(8).toString("hex") + "@example.com", password: "wrong-password-guess" })
  const req = request(
    { host: "127.0.0.1", port, path: "/api/session", method: "POST", agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
    (res) => {
      res.resume()
      res.on("end", () => {
        answers[res.statusCode] = (answers[res.statusCode] ?? 0) + 1
        signIn()
      })
    },
  )
  req.once("error", () => setTimeout(signIn, 100))
  req.end(body)
}
for (let i = 0; i < connections; i++) signIn()
`

/**
 * A real operator's console sign-in and a real partner's `POST /token`, each one at a time from its own address,
 * in one process serving both (as `npm start` does): first alone, then while `CONNECTIONS` connections from one
 * other address send sign-ins of unknown emails, each as soon as the previous one is answered.
 */
export const signInUnderFlood = Effect.gen(function* () {
  const config = yield* AppConfig
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(appLayer(config))
      const ports = Context.get(context, ListeningPorts)
      const consolePort = ports.get("console")!
      const partnerPort = ports.get("partner-api")!
      const operator = { email: "bench-operator@example.com", password: PASSWORD }
      yield* Context.get(context, Operators).create({ ...operator, role: "operator" }, "bench")
      const client = yield* Context.get(context, Auth).createClient({ gateway: "partner", name: "bench" })
      const tokenFields = {
        grant_type: "client_credentials",
        client_id: client.clientId,
        client_secret: client.clientSecret,
        audience: config.audiences.partner,
      }
      const operatorAgent = agentFrom(OPERATOR_FROM)
      const partnerAgent = agentFrom(PARTNER_FROM)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => [operatorAgent, partnerAgent].forEach((a) => a.destroy())),
      )

      /** The operator's sign-ins and the partner's token requests, one after the other, `REQUESTS` of each. */
      const measure = Effect.promise(async () => {
        const signIns: Array<number> = []
        const tokens: Array<number> = []
        for (let i = 0; i < REQUESTS; i++) {
          const signedIn = await postFrom(consolePort, "/api/session", operatorAgent, operator)
          if (signedIn.status !== 200) throw new Error(`the operator's sign-in answered ${signedIn.status}`)
          signIns.push(signedIn.ms)
          const token = await postFrom(partnerPort, "/token", partnerAgent, tokenFields)
          if (token.status !== 200) throw new Error(`the partner's token request answered ${token.status}`)
          tokens.push(token.ms)
        }
        return { signIns, tokens }
      })
      for (let i = 0; i < WARMUP; i++) {
        yield* Effect.promise(() => postFrom(consolePort, "/api/session", operatorAgent, operator))
        yield* Effect.promise(() => postFrom(partnerPort, "/token", partnerAgent, tokenFields))
      }
      const alone = yield* measure

      // The flood runs in a thread of its own, as an attacker's client would run apart from the service: its
      // loop of requests must not take the service's event loop, only the machine's cores, as a real one does.
      const flood = new Worker(FLOOD_WORKER, {
        eval: true,
        workerData: { port: consolePort, from: FLOOD_FROM, connections: CONNECTIONS },
      })
      const counts = (): Promise<Record<string, number>> =>
        new Promise((resolve) => {
          flood.once("message", resolve)
          flood.postMessage("count")
        })
      yield* Effect.addFinalizer(() => Effect.promise(() => flood.terminate()))
      // Until the flood is under way: its first unknown emails have been checked and refused.
      while (((yield* Effect.promise(counts))["401"] ?? 0) < 1) yield* Effect.sleep("50 millis")
      const floodStart = performance.now()
      const answeredBefore = yield* Effect.promise(counts)
      const underFlood = yield* measure
      const floodSeconds = (performance.now() - floodStart) / 1000
      const answeredAfter = yield* Effect.promise(counts)
      const answered = Object.entries(answeredAfter).map(
        ([status, n]) => [status, n - (answeredBefore[status] ?? 0)] as const,
      )

      const during = `while ${CONNECTIONS} connections from ${FLOOD_FROM} send sign-ins of unknown emails, ${REQUESTS} requests`
      const rows: Array<LatencyRow> = [
        {
          name: `sign-in flood: an operator's POST /api/session from ${OPERATOR_FROM} ${during}`,
          p50: percentile(underFlood.signIns, 50),
          p99: percentile(underFlood.signIns, 99),
          baselineP50: percentile(alone.signIns, 50),
          baselineP99: percentile(alone.signIns, 99),
          baselineName: "the same operator's sign-in, no flood, just before",
        },
        {
          name: `sign-in flood: a partner's POST /token from ${PARTNER_FROM}, same process and flood, ${REQUESTS} requests`,
          p50: percentile(underFlood.tokens, 50),
          p99: percentile(underFlood.tokens, 99),
          baselineP50: percentile(alone.tokens, 50),
          baselineP99: percentile(alone.tokens, 99),
          baselineName: "the same partner's POST /token, no flood, just before",
        },
      ]
      const note =
        `sign-in flood: the flood's sign-ins answered while the operator and the partner were measured ` +
        `(${floodSeconds.toFixed(1)} s): ` +
        answered.map(([status, n]) => `${n} x ${status}`).join(", ") +
        `; scrypt cost ${config.secretHashCost}, ${config.tokenHashConcurrency} hash slot(s) in the process, ` +
        `${config.secretChecksPerSource} checks in progress per address`
      return { rows, notes: [note] }
    }),
  )
})
