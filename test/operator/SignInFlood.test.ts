import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { metrics } from "../../backend/platform/Observability.ts"
import { consolePort, consoleService, createOperator } from "../support/Operator.ts"
import { eventually } from "../support/Streams.ts"

interface Answer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly text: string
}

/** `POST /api/session` with JSON `body`, sent from the loopback address `from`. */
const signInFrom = (from: string, body: { readonly email: string; readonly password: string }) =>
  Effect.flatMap(consolePort, (port) =>
    Effect.promise(
      () =>
        new Promise<Answer>((resolve, reject) => {
          const text = JSON.stringify(body)
          const req = httpRequest(
            {
              host: "127.0.0.1",
              port,
              path: "/api/session",
              method: "POST",
              localAddress: from,
              agent: false,
              headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
            },
            (res) => {
              let answer = ""
              res.setEncoding("utf8").on("data", (chunk: string) => (answer += chunk))
              res.on("end", () =>
                resolve({
                  status: res.statusCode ?? 0,
                  retryAfter: res.headers["retry-after"],
                  text: answer,
                }),
              )
            },
          )
          req.once("error", reject)
          req.end(text)
        }),
    ),
  )

const stranger = () => ({
  email: `${randomBytes(6).toString("hex")}@example.com`,
  password: "guess-guess-guess",
})

/** Sign-in passwords waiting for a hash slot in `lane` right now. */
const waitingIn = (lane: "address" | "stranger") =>
  Effect.promise(() =>
    metrics.signInChecksWaiting.get().then((m) => m.values.find((v) => v.labels.lane === lane)?.value ?? 0),
  )

/** Sign-in passwords that got a hash slot in `lane` so far. */
const checkedIn = (lane: "address" | "stranger") =>
  Effect.promise(() =>
    metrics.signInChecks.get().then((m) => m.values.find((v) => v.labels.lane === lane)?.value ?? 0),
  )

/** Five failed sign-ins (unknown emails) from each of `addresses`, one after another. */
const failFiveTimes = (addresses: ReadonlyArray<string>) =>
  Effect.forEach(addresses, (from) =>
    Effect.repeat(
      Effect.flatMap(signInFrom(from, stranger()), (failed) =>
        failed.status === 401 ? Effect.void : Effect.die(new Error(`${failed.status} ${failed.text}`)),
      ),
      { times: 4 },
    ),
  )

const IN_PROGRESS = `{"message":"Too many sign-in attempts in progress from your address; try again in a moment."}`
const REFUSED = `{"message":"Email or password is incorrect."}`

// One hash slot and a hash slow enough that a queue of sign-ins takes seconds to drain; eight sign-ins at once
// from one address.
const service = consoleService({
  TOKEN_HASH_CONCURRENCY: "1",
  SECRET_HASH_COST: "14",
  SECRET_CHECKS_PER_SOURCE: "8",
})

describe("console sign-ins from one address", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "are refused with 429 once as many as allowed are in progress, saying so, and counted as nothing",
      () =>
        Effect.gen(function* () {
          // Five addresses fail five times each: from then on their sign-ins are strangers', in one lane.
          const addresses = ["127.0.6.1", "127.0.6.2", "127.0.6.3", "127.0.6.4", "127.0.6.5"]
          yield* failFiveTimes(addresses)
          // Four of them queue 32 sign-ins in that lane, so the first address's are still waiting behind them.
          const strangersBefore = yield* checkedIn("stranger")
          const busy = yield* Effect.forEach(
            Array.from({ length: 32 }, (_, i) => addresses[1 + (i % 4)]!),
            (from) => signInFrom(from, stranger()),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 32,
          )
          const admitted = yield* Effect.forEach(
            Array.from({ length: 8 }, () => stranger()),
            (body) => signInFrom("127.0.6.1", body),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 40,
          )

          const refused = yield* signInFrom("127.0.6.1", stranger())
          assert.strictEqual(refused.status, 429, refused.text)
          assert.strictEqual(refused.text, IN_PROGRESS)
          assert.strictEqual(refused.retryAfter, "1")

          const answers = [...(yield* Fiber.join(admitted)), ...(yield* Fiber.join(busy))]
          assert.deepStrictEqual(
            answers.map((a) => [a.status, a.text]),
            answers.map(() => [401, REFUSED]),
          )
          // Once they are answered, that address signs in again.
          const after = yield* signInFrom("127.0.6.1", stranger())
          assert.strictEqual(after.status, 401, after.text)
        }),
      120_000,
    )

    it.effect(
      "check a known operator's password in its address's own lane, ahead of strangers' failures queued before it",
      () =>
        Effect.gen(function* () {
          const operator = yield* createOperator("dana@example.com", "operator")
          // Two addresses fail five times each: from then on their sign-ins are strangers'.
          yield* failFiveTimes(["127.0.7.1", "127.0.7.2"])
          const strangersBefore = yield* checkedIn("stranger")
          const flood = yield* Effect.forEach(
            Array.from({ length: 16 }, (_, i) => i),
            (i) => signInFrom(`127.0.7.${1 + (i % 2)}`, stranger()),
            { concurrency: "unbounded" },
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.all([checkedIn("stranger"), waitingIn("stranger")]),
            ([checked, waiting]) => checked - strangersBefore + waiting === 16,
          )

          const ownChecks = yield* checkedIn("address")
          const own = yield* signInFrom("127.0.7.3", operator)
          const strangersLeft = yield* waitingIn("stranger")
          assert.strictEqual(own.status, 200, own.text)
          assert.strictEqual(yield* checkedIn("address"), ownChecks + 1)
          // Its password was checked while strangers who asked before it were still waiting for theirs.
          assert.isAtLeast(strangersLeft, 1)

          const floodAnswers = yield* Fiber.join(flood)
          assert.deepStrictEqual(
            floodAnswers.map((a) => a.status),
            floodAnswers.map(() => 401),
          )
        }),
      120_000,
    )
  })
})
