import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { assert, describe, it, layer } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, References } from "effect"
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
import { eventually } from "../support/Streams.ts"

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

/**
 * `POST /token` from `from` whose client goes away: the connection is closed once `gone` resolves, before any
 * answer came.
 */
const abandonedTokenRequest = (port: number, from: string, fields: Record<string, string>) => {
  const body = JSON.stringify(fields)
  const req = httpRequest({
    host: "127.0.0.1",
    port,
    path: "/token",
    method: "POST",
    localAddress: from,
    agent: false,
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  })
  const answered = { value: false }
  req.once("response", () => (answered.value = true)).once("error", () => undefined)
  req.end(body)
  return { abandon: () => req.destroy(), answered }
}

/** Partner gateway requests whose client went away before the answer, so far. */
const abandonedSoFar = () =>
  Effect.promise(() =>
    metrics.httpRequests
      .get()
      .then(
        (m) => m.values.find((v) => v.labels.role === "partner-api" && v.labels.status === "499")?.value ?? 0,
      ),
  )

/** Secret checks of the partner gateway under way right now. */
const hashesInProgress = () =>
  metrics.tokenHashes.get().then((m) => m.values.find((v) => v.labels.gateway === "partner")?.value ?? 0)

/** Partner secret checks waiting for a hash slot in `lane` right now. */
const waitingIn = (lane: "client" | "stranger") =>
  Effect.promise(() =>
    metrics.tokenChecksWaiting
      .get()
      .then(
        (m) => m.values.find((v) => v.labels.gateway === "partner" && v.labels.lane === lane)?.value ?? 0,
      ),
  )

/** Partner secret checks that got a hash slot in `lane` so far. */
const checkedIn = (lane: "client" | "stranger") =>
  Effect.promise(() =>
    metrics.tokenSecretChecks
      .get()
      .then(
        (m) => m.values.find((v) => v.labels.gateway === "partner" && v.labels.lane === lane)?.value ?? 0,
      ),
  )

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

// One hash slot and a hash slow enough that a queue of strangers takes seconds to drain.
const lanes = authService({ env: authEnv({ TOKEN_HASH_CONCURRENCY: "1", SECRET_HASH_COST: "14" }) })

describe("a client's own lane", () => {
  layer(lanes.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "checks a client's secret ahead of strangers' failures queued before it, even after a stranger failed with its id from elsewhere",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const client = yield* createClient({ gateway: "partner" })
          const audience = yield* audienceOf("partner")
          const fields = {
            grant_type: "client_credentials",
            client_id: client.clientId,
            client_secret: client.clientSecret,
            audience,
          }
          // A stranger's wrong secret for the client's id takes the lane from the stranger's address only.
          const guess = yield* tokenFrom(port, "127.0.2.1", { ...fields, client_secret: "guess" })
          assert.strictEqual(guess.status, 401, guess.text)

          // 64 wrong secrets for made-up ids, four from each of 16 addresses: more than the slot drains for a while.
          const strangersBefore = yield* checkedIn("stranger")
          const flood = yield* Effect.forEach(
            Array.from({ length: 64 }, (_, i) => i),
            (i) =>
              tokenFrom(port, `127.0.3.${10 + (i % 16)}`, {
                grant_type: "client_credentials",
                client_id: `cli_${randomBytes(9).toString("base64url")}`,
                client_secret: "guess",
                audience,
              }),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          // Every one of them is in the strangers' lane (checked, or waiting) before the client asks.
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 64,
          )

          const clientChecks = yield* checkedIn("client")
          const own = yield* tokenFrom(port, "127.0.2.2", fields)
          const strangersLeft = yield* waitingIn("stranger")
          assert.strictEqual(own.status, 200, own.text)
          assert.strictEqual(yield* checkedIn("client"), clientChecks + 1)
          // Its secret was checked while strangers who asked before it were still waiting for theirs.
          assert.isAtLeast(strangersLeft, 1)

          const floodAnswers = yield* Fiber.join(flood)
          assert.deepStrictEqual(
            floodAnswers.map((a) => a.status),
            floodAnswers.map(() => 401),
          )
          // From the address that failed with its id, the correct secret still counts, checked as a stranger's.
          const strangerChecks = yield* checkedIn("stranger")
          const there = yield* tokenFrom(port, "127.0.2.1", fields)
          assert.strictEqual(there.status, 200, there.text)
          assert.strictEqual(yield* checkedIn("stranger"), strangerChecks + 1)
          // Its success forgot the failure: that address is back in the client's lane.
          const again = yield* tokenFrom(port, "127.0.2.1", fields)
          assert.strictEqual(again.status, 200, again.text)
          assert.strictEqual(yield* checkedIn("client"), clientChecks + 2)
        }),
      120_000,
    )
  })
})

describe("an abandoned token request", () => {
  layer(lanes.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "refuses a fifth token request in progress from one address with 429, saying attempts are in progress, not failed",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const audience = yield* audienceOf("partner")
          const madeUp = () => ({
            grant_type: "client_credentials",
            client_id: `cli_${randomBytes(9).toString("base64url")}`,
            client_secret: "guess",
            audience,
          })
          const strangersBefore = yield* checkedIn("stranger")
          const queued = yield* Effect.forEach(
            Array.from({ length: 36 }, (_, i) => i),
            (i) => tokenFrom(port, i < 32 ? `127.0.6.${10 + (i % 8)}` : "127.0.6.1", madeUp()),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 36,
          )

          const fifth = yield* tokenFrom(port, "127.0.6.1", madeUp())
          assert.strictEqual(fifth.status, 429, fifth.text)
          assert.strictEqual(
            fifth.text,
            `{"error":"slow_down","error_description":"Too many attempts in progress from your address; retry later."}`,
          )
          assert.strictEqual(fifth.retryAfter, "1")
          const answers = yield* Fiber.join(queued)
          assert.deepStrictEqual(
            answers.map((a) => a.status),
            answers.map(() => 401),
          )
        }),
      120_000,
    )

    it.effect(
      "gives up its place at once and counts as nothing: after four abandoned requests, the next correct one from that address is answered 200",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const client = yield* createClient({ gateway: "partner" })
          const audience = yield* audienceOf("partner")
          const madeUp = () => ({
            grant_type: "client_credentials",
            client_id: `cli_${randomBytes(9).toString("base64url")}`,
            client_secret: "guess",
            audience,
          })
          // A queue of strangers in front, so the abandoned requests are still waiting for the slot when they go.
          const strangersBefore = yield* checkedIn("stranger")
          const flood = yield* Effect.forEach(
            Array.from({ length: 32 }, (_, i) => i),
            (i) => tokenFrom(port, `127.0.5.${10 + (i % 8)}`, madeUp()),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 32,
          )

          const abandonedBefore = yield* abandonedSoFar()
          const dropped = Array.from({ length: 4 }, () => abandonedTokenRequest(port, "127.0.5.1", madeUp()))
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 36,
          )
          for (const request of dropped) request.abandon()
          // Each was interrupted when its client went, and counted as abandoned (status 499), not answered.
          yield* eventually(abandonedSoFar(), (n) => n - abandonedBefore === 4)

          const own = yield* tokenFrom(port, "127.0.5.1", {
            grant_type: "client_credentials",
            client_id: client.clientId,
            client_secret: client.clientSecret,
            audience,
          })
          assert.strictEqual(own.status, 200, own.text)

          const floodAnswers = yield* Fiber.join(flood)
          assert.deepStrictEqual(
            floodAnswers.map((a) => a.status),
            floodAnswers.map(() => 401),
          )
          // The four left the strangers' queue without their secrets being checked, and were never answered.
          yield* eventually(waitingIn("stranger"), (waiting) => waiting === 0)
          assert.strictEqual((yield* checkedIn("stranger")) - strangersBefore, 32)
          assert.deepStrictEqual(
            dropped.map((request) => request.answered.value),
            [false, false, false, false],
          )
        }),
      120_000,
    )
  })
})
