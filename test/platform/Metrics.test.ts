import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { appLayer } from "../../backend/App.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

const TOKEN = "metrics-token-for-tests-0123456789"
const NOT_FOUND = `{"status_code":404,"error":"Not found."}`
const UNAUTHORIZED = `{"message":"Unauthorized"}`

const request = (port: number, path: string, authorization?: string) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      headers: authorization === undefined ? {} : { authorization },
    })
    return { status: response.status, text: await response.text() }
  })

/** Both public gateways, the console and a metrics port of its own, with a metrics token. */
const env = isolatedEnv({
  ROLES: "partner-api,ingest-api,console,workers",
  PARTNER_API_PORT: "0",
  INGEST_API_PORT: "0",
  CONSOLE_PORT: "0",
  METRICS_PORT: "0",
  METRICS_TOKEN: TOKEN,
})
const service = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
  Layer.provideMerge(isolationLayer(env)),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

describe("/metrics", () => {
  layer(service, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("is a 404 on the public gateways, whatever the token", () =>
      Effect.gen(function* () {
        const ports = yield* ListeningPorts
        for (const role of ["partner-api", "ingest-api"] as const) {
          for (const authorization of [undefined, `Bearer ${TOKEN}`]) {
            const answer = yield* request(ports.get(role)!, "/metrics", authorization)
            assert.deepStrictEqual(answer, { status: 404, text: NOT_FOUND }, role)
          }
        }
      }),
    )

    it.effect("asks for METRICS_TOKEN as a bearer token on the console's port and on METRICS_PORT", () =>
      Effect.gen(function* () {
        const ports = yield* ListeningPorts
        for (const role of ["console", "metrics"] as const) {
          const port = ports.get(role)!
          for (const authorization of [undefined, "Bearer wrong-token-wrong-token", `Basic ${TOKEN}`]) {
            const refused = yield* request(port, "/metrics", authorization)
            assert.deepStrictEqual(refused, { status: 401, text: UNAUTHORIZED }, `${role} ${authorization}`)
          }
          const answer = yield* request(port, "/metrics", `Bearer ${TOKEN}`)
          assert.strictEqual(answer.status, 200, role)
          assert.match(answer.text, /^actor_handled_total|^# HELP/m, role)
        }
        const other = yield* request(ports.get("metrics")!, "/healthz", `Bearer ${TOKEN}`)
        assert.deepStrictEqual(other, { status: 404, text: NOT_FOUND })
      }),
    )
  })
})
