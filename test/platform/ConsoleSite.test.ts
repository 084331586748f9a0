import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { appLayer } from "../../backend/App.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { ensureConsoleBuilt } from "../../console/build.mjs"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

const NOT_FOUND = `{"status_code":404,"error":"Not found."}`

await ensureConsoleBuilt()

const env = isolatedEnv({ ROLES: "console", CONSOLE_PORT: "0" })
const service = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
  Layer.provideMerge(isolationLayer(env)),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

const get = (path: string, init: RequestInit = {}) =>
  Effect.gen(function* () {
    const port = (yield* ListeningPorts).get("console")!
    return yield* Effect.promise(async () => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, init)
      return { status: response.status, headers: response.headers, text: await response.text() }
    })
  })

const assertLockedDown = (headers: Headers) => {
  const csp = headers.get("content-security-policy") ?? ""
  assert.include(csp, "default-src 'self'")
  assert.include(csp, "script-src 'self';")
  assert.include(csp, "frame-ancestors 'none'")
  assert.notInclude(csp, "unsafe-inline")
  assert.strictEqual(headers.get("x-content-type-options"), "nosniff")
}

describe("the console's site on the console role", () => {
  layer(service, { excludeTestServices: true })((it) => {
    it.effect("answers every page path with the app, locked down and never cached stale", () =>
      Effect.gen(function* () {
        for (const path of ["/", "/login", "/deliveries/42?status=failed", "/endpoints/7", "/no/such/page"]) {
          const answer = yield* get(path)
          assert.strictEqual(answer.status, 200, path)
          assert.match(answer.headers.get("content-type") ?? "", /^text\/html/, path)
          assert.include(answer.text, '<div id="app"></div>', path)
          assert.notMatch(answer.text, /<script(?![^>]*\bsrc=)[^>]*>/, "no inline script")
          assert.strictEqual(answer.headers.get("cache-control"), "no-cache", path)
          assertLockedDown(answer.headers)
        }
      }),
    )

    it.effect("serves the built assets it links, with a long cache, and no others", () =>
      Effect.gen(function* () {
        const page = yield* get("/")
        const assets = [...page.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!)
        assert.isAtLeast(assets.length, 2)
        for (const asset of assets) {
          const answer = yield* get(asset)
          assert.strictEqual(answer.status, 200, asset)
          assert.match(answer.headers.get("content-type") ?? "", /^text\/(javascript|css)/, asset)
          assert.include(answer.headers.get("cache-control") ?? "", "immutable", asset)
          assertLockedDown(answer.headers)
        }
        for (const path of ["/assets/missing.js", "/assets/..%2f..%2fpackage.json"]) {
          const missing = yield* get(path)
          assert.strictEqual(missing.status, 404, path)
          assert.strictEqual(missing.text, NOT_FOUND, path)
        }
      }),
    )

    it.effect("leaves the API, health and metrics paths to their own routes", () =>
      Effect.gen(function* () {
        for (const path of ["/api", "/api/no/such/route", "/health"]) {
          const answer = yield* get(path)
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(answer.text, NOT_FOUND, path)
        }
        assert.strictEqual((yield* get("/healthz")).status, 200)
        assert.match((yield* get("/metrics")).text, /^# HELP/m)
        const post = yield* get("/deliveries", { method: "POST", body: "{}" })
        assert.strictEqual(post.status, 404)
      }),
    )
  })
})
