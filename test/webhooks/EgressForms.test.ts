import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { isForbiddenAddress, isLocalhostName } from "../../backend/webhooks/delivery/Egress.ts"
import { authEnv, authService } from "../support/Auth.ts"
import { startReceiver } from "../support/Receiver.ts"
import { PRODUCTION } from "../support/TestPlatform.ts"
import {
  attemptsOf,
  awaitDeliveries,
  endpoint,
  engineService,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
} from "../support/WebhookEngine.ts"
import { api, ENDPOINT, ownerEndpoints, ownerWithPartner } from "../support/Webhooks.ts"

/** Internal destinations written the ways that slipped through: each names loopback in the end. */
const disguised = (port: number) => [
  `https://LOCALHOST.:${port}/trailing-dot`,
  `https://api.LocalHost../two-dots`,
  "https://[2002:7f00:1::]/six-to-four",
  "https://[2002:a00:1::1]/six-to-four-private",
  "https://[2001:0:7f00:1::]/teredo-server",
  "https://[2001::80ff:fffe]/teredo-client",
  "https://[::ffff:0:7f00:1]/translated",
  "https://[::ffff:0:127.0.0.1]/translated-dotted",
  "https://[::ffff:127.0.0.1]/mapped",
  "https://[64:ff9b::7f00:1]/nat64",
  "https://[64:ff9b:1::a00:1]/nat64-local-use",
]

describe("egress address forms", () => {
  it("refuses the IPv4 an IPv6 address carries when it is internal, and lets public ones through", () => {
    for (const address of [
      "::ffff:0:7f00:1",
      "::ffff:0:127.0.0.1",
      "::ffff:7f00:1",
      "2002:7f00:1::",
      "2002:c0a8:101::1",
      "2001:0:7f00:1::",
      "2001::80ff:fffe",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b:1::1",
    ]) {
      assert.isTrue(isForbiddenAddress(address), address)
    }
    for (const address of [
      "2002:808:808::1",
      "2001:0:808:808::f7f7:f7f7",
      "64:ff9b::808:808",
      "::ffff:8.8.8.8",
    ]) {
      assert.isFalse(isForbiddenAddress(address), address)
    }
  })

  it("takes localhost names in any case and with the root's trailing dot for localhost", () => {
    for (const name of ["localhost", "LOCALHOST.", "api.localhost.", "a.b.LocalHost"]) {
      assert.isTrue(isLocalhostName(name), name)
    }
    for (const name of ["localhost.example.com", "mylocalhost", "example.com."]) {
      assert.isFalse(isLocalhostName(name), name)
    }
  })
})

const production = authService({ env: authEnv(PRODUCTION) })

describe("registering a webhook destination in production", () => {
  layer(production.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("refuses the disguised forms of internal destinations", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("disguised")
        for (const url of disguised(443)) {
          const answer = yield* api(partner, "POST", ownerEndpoints("disguised"), {
            endpoint: { ...ENDPOINT, destination_url: url },
          })
          assert.strictEqual(answer.status, 422, `${url}: ${answer.text}`)
          assert.deepStrictEqual(answer.body!.endpoint, {
            destination_url: "Destination url must be a publicly reachable host",
          })
        }
      }),
    )
  })
})

const engine = engineService(PRODUCTION)

describe("connecting to a webhook destination in production", () => {
  layer(engine.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "refuses the disguised forms of internal destinations before any connection, and records why",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const port = Number(new URL(receiver.url("/")).port)
          const acme = yield* owner("acme-disguised")
          const sub = yield* subscriber({ ownerId: acme.id })
          // Written as registration did before it knew these forms.
          const ids = yield* Effect.forEach(disguised(port), (url) =>
            endpoint(sub.id, url, ["move_out.initiated"]),
          )
          yield* publishEvent("move_out.initiated", acme.slug, examplePayload("move_out.initiated"))
          for (const [i, id] of ids.entries()) {
            const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "retrying")
            assert.match(row!.last_attempt_failure_reason ?? "", /^Destination refused: /, disguised(port)[i])
            const [attempt] = yield* attemptsOf(row!.id)
            assert.deepStrictEqual(
              [attempt!.status_code, attempt!.duration_ms],
              [null, 0],
              disguised(port)[i],
            )
          }
          assert.deepStrictEqual(receiver.received(), [])
        }).pipe(Effect.scoped),
    )
  })
})
