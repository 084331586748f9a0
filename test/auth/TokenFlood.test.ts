import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { assert, describe, it, layer } from "@effect/vitest"
import { Clock, Effect, Layer, References } from "effect"
import { throttleSource } from "../../backend/platform/ClientAddress.ts"
import { metrics } from "../../backend/platform/Observability.ts"
import {
  ACCESS_DENIED,
  audienceOf,
  authEnv,
  authService,
  bearer,
  createClient,
  createOwner,
  fixturePort,
  gatewayPort,
  httpRequest as get,
  obtainToken,
} from "../support/Auth.ts"
import { heldClock, holdClock } from "../support/HeldClock.ts"

interface Answer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly text: string
}

/** `POST /token` with JSON `fields`, sent from the loopback address `from` (any of 127.0.0.0/8 is this machine). */
const tokenFrom = (port: number, from: string, fields: Record<string, string>) =>
  Effect.promise(
    () =>
      new Promise<Answer>((resolve, reject) => {
        const body = JSON.stringify(fields)
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path: "/token",
            method: "POST",
            localAddress: from,
            agent: false,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          },
          (res) => {
            let text = ""
            res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
            res.on("end", () => {
              const retryAfter = res.headers["retry-after"]
              resolve({ status: res.statusCode ?? 0, retryAfter, text })
            })
          },
        )
        req.once("error", reject)
        req.end(body)
      }),
  )

/** Secret checks of the partner gateway under way right now. */
const hashesInProgress = () =>
  metrics.tokenHashes.get().then((m) => m.values.find((v) => v.labels.gateway === "partner")?.value ?? 0)

describe("throttle sources", () => {
  it("are IPv4 addresses and IPv6 /64 networks", () => {
    assert.strictEqual(throttleSource("203.0.113.7"), "203.0.113.7")
    assert.strictEqual(throttleSource("::ffff:203.0.113.7"), "203.0.113.7")
    assert.strictEqual(throttleSource("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64")
    assert.strictEqual(throttleSource("2001:db8:1:2::ff"), "2001:db8:1:2::/64")
  })
})

const flood = authService({
  env: authEnv({ TOKEN_HASH_CONCURRENCY: "1" }),
  references: Layer.merge(
    Layer.succeed(References.MinimumLogLevel, "Warn"),
    Layer.succeed(Clock.Clock, heldClock),
  ),
})

describe("token requests from strangers", () => {
  layer(flood.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "never refuse the correct secret sent from another address, and slow down their own address for at most a minute",
      () =>
        Effect.gen(function* () {
          yield* holdClock
          const port = yield* gatewayPort("partner-api")
          const client = yield* createClient({ gateway: "partner" })
          const fields = {
            grant_type: "client_credentials",
            client_id: client.clientId,
            client_secret: client.clientSecret,
            audience: yield* audienceOf("partner"),
          }
          const wrong = { ...fields, client_secret: "guess" }
          const answers: Array<Answer> = []
          for (let attempt = 1; attempt <= 12; attempt++)
            answers.push(yield* tokenFrom(port, "127.0.0.2", wrong))
          assert.deepStrictEqual(
            answers.slice(0, 5).map((a) => [a.status, a.text]),
            answers.slice(0, 5).map(() => [401, ACCESS_DENIED]),
          )
          for (const answer of answers.slice(5)) {
            assert.strictEqual(answer.status, 429, answer.text)
            assert.isAtMost(Number(answer.retryAfter), 60)
            assert.isAtLeast(Number(answer.retryAfter), 1)
          }

          const elsewhere = yield* tokenFrom(port, "127.0.0.3", fields)
          assert.strictEqual(elsewhere.status, 200, elsewhere.text)
          const there = yield* tokenFrom(port, "127.0.0.2", fields)
          assert.strictEqual(there.status, 429, there.text)
        }).pipe(Effect.scoped),
      120_000,
    )

    it.effect(
      "while flooding /token, leave authenticated requests served: one secret checked at a time, off the event loop",
      () =>
        Effect.gen(function* () {
          const tokenPort = yield* gatewayPort("partner-api")
          const owner = yield* createOwner("flooded")
          const partner = yield* createClient({ gateway: "partner", owners: [owner] })
          const token = yield* obtainToken("partner", partner)
          const getPort = yield* fixturePort
          const audience = yield* audienceOf("partner")

          // 16 token requests at once with made-up client ids, four from each of four addresses.
          const floodDone = { value: false }
          const sampled: Array<number> = []
          const sampler = setInterval(() => void hashesInProgress().then((n) => sampled.push(n)), 2)
          const flooding = Effect.forEach(
            Array.from({ length: 16 }, (_, i) => i),
            (i) =>
              tokenFrom(tokenPort, `127.0.1.${10 + (i % 4)}`, {
                grant_type: "client_credentials",
                client_id: `cli_${randomBytes(9).toString("base64url")}`,
                client_secret: "guess",
                audience,
              }),
            { concurrency: "unbounded" },
          ).pipe(Effect.ensuring(Effect.sync(() => (floodDone.value = true))))
          const serving = Effect.gen(function* () {
            const served: Array<{ readonly status: number; readonly duringHash: boolean }> = []
            while (!floodDone.value) {
              const answer = yield* get(getPort, `/partners/${owner}/fixture`, bearer(token))
              served.push({
                status: answer.status,
                duringHash: (yield* Effect.promise(hashesInProgress)) > 0,
              })
            }
            return served
          })
          const [floodAnswers, served] = yield* Effect.all([flooding, serving], { concurrency: 2 }).pipe(
            Effect.ensuring(Effect.sync(() => clearInterval(sampler))),
          )

          assert.deepStrictEqual(
            floodAnswers.map((a) => a.status),
            floodAnswers.map(() => 401),
          )
          assert.deepStrictEqual(
            served.map((s) => s.status),
            served.map(() => 200),
          )
          // Requests were answered while a secret was being hashed: the hashing does not hold the event loop.
          assert.isAtLeast(served.filter((s) => s.duringHash).length, 1)
          // The cap held all along, and the flood did hash.
          assert.strictEqual(Math.max(...sampled), 1)
        }),
      120_000,
    )
  })
})
