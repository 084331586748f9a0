import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { printable } from "../../backend/cli/Printable.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { authService } from "../support/Auth.ts"
import { runCli, startCli } from "../support/Cli.ts"
import { query } from "../support/Roster.ts"

const service = authService()

/** Stored text written before the API refused control characters (or by a path that does not check them). */
const HOSTILE = "unknown pms_property_id \u001b[2J\u001b]0;owned\u0007\u009b31mX\r\nX-Injected: 1\u007f"

/** Whether `text` holds a control character other than newline: what must never reach the terminal. */
const holdsControl = (text: string) =>
  [...text].some((char) => {
    const code = char.charCodeAt(0)
    return (code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f)
  })

describe("the CLI prints stored text with its control characters escaped", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("escapes them in JSON output, which stays the JSON of the stored text", () =>
      Effect.gen(function* () {
        yield* query(
          (sql) => sql`
            insert into ingest_log (event_id, received_at, source, event_type, outcome, reason, stream_seq)
            values ('ctl-1', now(), 'ctl', 'ProspectUpdate', 'ignored', ${HOSTILE}, 1)`,
        )
        const run = yield* runCli(service.env, "ingest", "log", "--source", "ctl")
        assert.strictEqual(run.code, 0, run.stderr)
        assert.isFalse(holdsControl(run.stdout), JSON.stringify(run.stdout))
        assert.include(run.stdout, "\\u001b[2J\\u001b]0;owned\\u0007\\u009b31mX\\r\\nX-Injected: 1\\u007f")
        assert.strictEqual(JSON.parse(run.stdout).reason, HOSTILE)
      }),
    )

    it.effect("escapes them in tail's message bodies and headers", () =>
      Effect.gen(function* () {
        const nats = yield* Nats
        const tail = yield* startCli(service.env, "tail", "roster.ctl.>")
        yield* tail.waitFor("stderr", /tailing roster\.ctl\.> on /)
        yield* nats.publish(nats.subject("roster.ctl.owner.updated"), new TextEncoder().encode(HOSTILE), {
          msgID: "ctl-\u009b1",
        })
        yield* tail.waitFor("stdout", /X-Injected/)
        assert.isFalse(holdsControl(tail.stdout()), JSON.stringify(tail.stdout()))
        assert.include(tail.stdout(), printable(HOSTILE))
        assert.include(tail.stdout(), "Nats-Msg-Id: ctl-\\u009b1")
        assert.strictEqual(yield* tail.stop, 0)
      }),
    )
  })
})
