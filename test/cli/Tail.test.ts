import { fileURLToPath } from "node:url"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { parseSince } from "../../backend/cli/Tail.ts"
import { type StreamBase, Streams } from "../../backend/contract/Streams.ts"
import { NatsLayer } from "../../backend/Infrastructure.ts"
import { Nats, subjectsOverlap } from "../../backend/platform/Nats.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { startCli } from "../support/Cli.ts"
import { eventually } from "../support/Streams.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const env = isolatedEnv()

/** This file's streams, provisioned as `migrate` does, and deleted when the file is done. */
const streams = Layer.effectDiscard(Effect.flatMap(Effect.service(Nats), (nats) => nats.ensureStreams)).pipe(
  Layer.provideMerge(NatsLayer),
  Layer.provideMerge(isolationLayer(env)),
)

/** `npm run cli -- tail ...`, in this process through the CLI's entry function; stopped when the test ends. */
const tailCli = (...args: ReadonlyArray<string>) => startCli(env, "tail", ...args)

const publishJson = (subject: string, body: unknown, msgID: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    return yield* nats.publish(nats.subject(subject), new TextEncoder().encode(JSON.stringify(body)), {
      msgID,
    })
  })

const streamName = (base: StreamBase) => Effect.map(Effect.service(Nats), (nats) => nats.streamName(base))

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The first line `tail` prints for a message: `#<seq> <subject> <stream time> [<stream>]`. */
const headline = (seq: number, subject: string, stream: string) =>
  new RegExp(`^#${seq} ${literal(subject)} \\S+ \\[${literal(stream)}\\]$`, "m")

describe("npm run cli -- tail", () => {
  layer(streams, { excludeTestServices: true })((it) => {
    it.effect("prints a new message with its stream sequence, subject, Nats-Msg-Id and pretty JSON", () =>
      Effect.gen(function* () {
        const tail = yield* tailCli("events.>")
        yield* tail.waitFor("stderr", /tailing events\.> on /)
        const body = { prospect_id: "p-1", status: "ready", units: [1, 2] }
        const ack = yield* publishJson("events.acme.prospect.ready.1", body, "tail-msg-1")
        assert.strictEqual(ack.seq, 1)
        yield* tail.waitFor("stdout", /"units"/)

        const output = tail.stdout()
        assert.match(output, headline(1, "events.acme.prospect.ready.1", yield* streamName("EVENTS")))
        assert.include(output, "\n  Nats-Msg-Id: tail-msg-1\n")
        assert.include(output, JSON.stringify(body, null, 2))
        assert.strictEqual(yield* tail.stop, 0)
      }),
    )

    it.effect(
      "run as on-call runs it (npm run -s cli), stops on ctrl-C with status 0 and leaves nothing running",
      () =>
        Effect.gen(function* () {
          const tail = yield* spawnProcess("npm", ["run", "--silent", "cli", "--", "tail", "events.>"], {
            cwd: root,
            env,
          })
          yield* tail.waitFor("stderr", /tailing events\.> on /)
          yield* publishJson("events.spawned.prospect.ready.1", { spawned: true }, "tail-spawned-1")
          yield* tail.waitFor("stdout", /"spawned": true/)
          assert.notInclude(tail.stdout(), "postgres:", "the bootstrap's lines go to stderr")
          yield* tail.signal("SIGINT")
          assert.deepStrictEqual(yield* tail.exited, { code: 0, signal: null }, tail.stderr())
          yield* eventually(tail.groupRunning, (running) => !running)
        }),
    )

    it.effect(
      "exits 0 when copies of ctrl-C keep coming while it exits, as npm and the bootstrap pass them on",
      () =>
        Effect.gen(function* () {
          const tail = yield* spawnProcess(process.execPath, ["backend/cli/Cli.ts", "tail", "events.>"], {
            cwd: root,
            env,
          })
          yield* tail.waitFor("stderr", /tailing events\.> on /)
          const copies = setInterval(() => {
            try {
              process.kill(tail.pid, "SIGINT")
            } catch {
              // Gone: the interval is cleared below.
            }
          }, 1)
          const exited = yield* tail.exited.pipe(Effect.ensuring(Effect.sync(() => clearInterval(copies))))
          assert.deepStrictEqual(exited, { code: 0, signal: null }, tail.stderr())
        }),
    )

    it.effect("with --since 10m prints a message published before it started", () =>
      Effect.gen(function* () {
        yield* publishJson("events.other.prospect.created.1", { owner: "other" }, "since-other")
        const ack = yield* publishJson("events.acme.prospect.created.7", { prospect_id: "p-7" }, "since-acme")
        const tail = yield* tailCli("events.acme.>", "--since", "10m")
        yield* tail.waitFor("stdout", /"p-7"/)
        assert.match(
          tail.stdout(),
          headline(ack.seq, "events.acme.prospect.created.7", yield* streamName("EVENTS")),
        )
        assert.include(tail.stdout(), "Nats-Msg-Id: since-acme")
        // Published first, so it would have been printed by now had the pattern let it through.
        assert.notInclude(tail.stdout(), "events.other.")
      }),
    )

    it.effect("with --stream WEBHOOKS follows webhooks.> on that stream", () =>
      Effect.gen(function* () {
        const webhooks = yield* streamName("WEBHOOKS")
        const tail = yield* tailCli("webhooks.>", "--stream", "WEBHOOKS")
        yield* tail.waitFor("stderr", new RegExp(`tailing webhooks\\.> on ${webhooks};`))
        const ack = yield* publishJson("webhooks.attempt.ep-1", { delivery_id: "d-1" }, "webhook-1")
        yield* tail.waitFor("stdout", /"d-1"/)
        assert.match(tail.stdout(), headline(ack.seq, "webhooks.attempt.ep-1", webhooks))
      }),
    )

    it.effect("exits non-zero listing the streams when no stream holds the pattern", () =>
      Effect.gen(function* () {
        const nats = yield* Nats
        for (const args of [
          ["nope.>"],
          ["events.>", "--stream", "WEBHOOKS"],
          ["events.>", "--stream", "NOPE"],
        ]) {
          const tail = yield* tailCli(...args)
          assert.strictEqual(yield* tail.exited, 2, args.join(" "))
          assert.include(tail.stderr(), `matching ${args[0]}`)
          for (const base of Object.keys(Streams) as Array<StreamBase>) {
            assert.include(
              tail.stderr(),
              `${nats.streamName(base)} (${Streams[base].subjects}.>)`,
              args.join(" "),
            )
          }
        }
      }),
    )
  })
})

describe("subjectsOverlap", () => {
  const cases: ReadonlyArray<readonly [string, string, boolean]> = [
    ["events.>", "events.acme.prospect.ready", true],
    ["events.>", "events.acme.>", true],
    ["events.*.prospect.ready", "events.acme.>", true],
    ["*.acme.>", "events.*.prospect.ready", true],
    [">", "webhooks.attempt.ep-1", true],
    ["events.acme", "events.acme", true],
    ["events.>", "events", false],
    ["events.>", "webhooks.>", false],
    ["events.acme.>", "events.other.>", false],
    ["events.*", "events.acme.prospect", false],
    ["events.acme", "events.acme.prospect", false],
  ]
  for (const [a, b, overlap] of cases) {
    it(`finds ${overlap ? "a" : "no"} subject matching both ${a} and ${b}`, () => {
      assert.strictEqual(subjectsOverlap(a, b), overlap)
      assert.strictEqual(subjectsOverlap(b, a), overlap)
    })
  }
})

describe("parseSince", () => {
  const now = Date.parse("2026-03-04T05:06:07.000Z")
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["90s", "2026-03-04T05:04:37.000Z"],
    ["10m", "2026-03-04T04:56:07.000Z"],
    ["2h", "2026-03-04T03:06:07.000Z"],
    ["1d", "2026-03-03T05:06:07.000Z"],
    ["2026-03-01T12:00:00Z", "2026-03-01T12:00:00.000Z"],
    ["2026-03-01", "2026-03-01T00:00:00.000Z"],
    ["10", undefined],
    ["10x", undefined],
    ["-5m", undefined],
    ["m", undefined],
    ["yesterday", undefined],
    ["2026-13-45", undefined],
    ["2026-02-30", undefined],
    ["2026-02-30T00:00:00Z", undefined],
    ["2026-03-01T24:00:00Z", undefined],
  ]
  for (const [value, expected] of cases) {
    it(`reads ${JSON.stringify(value)} as ${expected ?? "not a time"}`, () => {
      assert.strictEqual(parseSince(value, now)?.toISOString(), expected)
    })
  }
})
