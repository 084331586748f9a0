import { readFileSync } from "node:fs"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "yaml"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { consoleService } from "../support/Operator.ts"
import { eventually } from "../support/Streams.ts"

interface Rule {
  readonly alert: string
  readonly expr: string
  readonly for?: string
  readonly annotations: { readonly summary: string }
}

const rules = (
  parse(readFileSync("infra/prometheus/alerts.yml", "utf8")) as {
    groups: ReadonlyArray<{ name: string; rules: ReadonlyArray<Rule> }>
  }
).groups.flatMap((group) => group.rules)

/** The metric names an expression reads: identifiers followed by a selector, a range or a comparison. */
const metricsOf = (expr: string) =>
  [...expr.matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g)]
    .map((m) => m[1]!)
    .filter((name) => name.includes("_") && !["group_left"].includes(name))
    .filter((name, i, all) => all.indexOf(name) === i)

const scrape = Effect.gen(function* () {
  const port = (yield* Effect.service(ListeningPorts)).get("metrics")!
  return yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()))
})

const sampled = (text: string, name: string) => new RegExp(`^${name}(\\{|\\s)`, "m").test(text)

describe("the Prometheus alert rules", () => {
  it("parse, and every rule has a name, an expression and a summary", () => {
    assert.isAtLeast(rules.length, 5)
    for (const rule of rules) {
      assert.match(rule.alert, /^[A-Z][A-Za-z]+$/)
      assert.isString(rule.expr)
      assert.isString(rule.annotations.summary)
    }
  })

  layer(consoleService({ ROLES: "console,workers", METRICS_PORT: "0" }).layer, {
    excludeTestServices: true,
    timeout: 90_000,
  })((it) => {
    it.effect("name only metrics /metrics serves, each with a value read at the scrape", () =>
      Effect.gen(function* () {
        const names = [...new Set(rules.flatMap((rule) => metricsOf(rule.expr)))]
        assert.includeMembers(names, [
          "jetstream_consumer_pending",
          "jetstream_consumer_oldest_unacked_seconds",
          "outbox_backlog",
          "outbox_oldest_seconds",
          "dead_letters_total",
          "loop_last_pass_timestamp_seconds",
        ])
        const first = yield* scrape
        for (const name of names) assert.match(first, new RegExp(`^# TYPE ${name} gauge$`, "m"), name)
        // Each scrape reads the figures; the workers may not have made their consumers at the first.
        yield* eventually(scrape, (text) => names.every((name) => sampled(text, name)))
      }),
    )
  })
})
