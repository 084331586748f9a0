import { request as httpRequest } from "node:http"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import ipaddr from "ipaddr.js"
import { clientAddress } from "../../backend/platform/ClientAddress.ts"
import { audienceOf, authEnv, authService, createClient, gatewayPort } from "../support/Auth.ts"
import { createOperator } from "../support/Operator.ts"

interface Answer {
  readonly status: number
  readonly text: string
}

/** One JSON request sent from the loopback address `from` (all of 127.0.0.0/8 is this machine). */
const jsonFrom = (
  port: number,
  from: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  Effect.promise(
    () =>
      new Promise<Answer>((resolve, reject) => {
        const text = JSON.stringify(body)
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path,
            method: "POST",
            localAddress: from,
            agent: false,
            headers: {
              "content-type": "application/json",
              "content-length": Buffer.byteLength(text),
              ...headers,
            },
          },
          (res) => {
            let answer = ""
            res.setEncoding("utf8").on("data", (chunk: string) => (answer += chunk))
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text: answer }))
          },
        )
        req.once("error", reject)
        req.end(text)
      }),
  )

const PROXY = "127.0.0.9"
const service = authService({
  env: authEnv({
    ROLES: "partner-api,console",
    CONSOLE_PORT: "0",
    TRUSTED_PROXIES: `${PROXY}/32,10.9.0.0/16`,
  }),
})

const networks = (...cidrs: Array<string>) => cidrs.map((cidr) => ipaddr.parseCIDR(cidr))

describe("client addresses", () => {
  it("reads X-Forwarded-For only from a trusted proxy, taking its right-most untrusted entry", () => {
    const trusted = networks("10.0.0.0/8", "fd00::/8")
    assert.strictEqual(clientAddress("10.0.0.1", "203.0.113.7", trusted), "203.0.113.7")
    assert.strictEqual(
      clientAddress("::ffff:10.0.0.1", "198.51.100.1, 203.0.113.7, 10.0.0.2", trusted),
      "203.0.113.7",
    )
    assert.strictEqual(clientAddress("10.0.0.1", "203.0.113.7:5123", trusted), "203.0.113.7")
    assert.strictEqual(clientAddress("fd00::1", "[2001:db8::1]:443", trusted), "2001:db8::1")
    // A client cannot name itself: an untrusted socket's header is ignored, however it is spelt.
    assert.strictEqual(clientAddress("203.0.113.9", "10.0.0.3", trusted), "203.0.113.9")
    assert.strictEqual(clientAddress("::ffff:203.0.113.9", "198.51.100.1", trusted), "203.0.113.9")
    assert.strictEqual(clientAddress("203.0.113.9", "198.51.100.1", []), "203.0.113.9")
    // An entry that is no address stops the walk at the last trusted hop.
    assert.strictEqual(clientAddress("10.0.0.1", "203.0.113.7, unknown", trusted), "10.0.0.1")
    assert.strictEqual(clientAddress("10.0.0.1", "", trusted), "10.0.0.1")
    assert.strictEqual(clientAddress("10.0.0.1", null, trusted), "10.0.0.1")
    // Every hop trusted: the left-most is as far as anyone can tell.
    assert.strictEqual(clientAddress("10.0.0.1", "10.0.0.5, 10.0.0.2", trusted), "10.0.0.5")
  })

  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("never refuses an operator's correct password from an address that has not failed", () =>
      Effect.gen(function* () {
        const port = yield* gatewayPort("console")
        const { email, password } = yield* createOperator("target@example.com", "admin")
        const signIn = (from: string, secret: string, headers: Record<string, string> = {}) =>
          jsonFrom(port, from, "/api/session", { email, password: secret }, headers)
        for (let i = 0; i < 5; i++)
          assert.strictEqual((yield* signIn("127.0.0.2", "wrong-password!")).status, 401)
        const attacker = yield* signIn("127.0.0.2", password)
        assert.strictEqual(attacker.status, 429, attacker.text)
        // The operator, elsewhere, gets in (held a little, never refused).
        assert.strictEqual((yield* signIn("127.0.0.3", password)).status, 200)
        // Failures spread over many addresses do not lock anyone out either.
        for (let i = 10; i < 13; i++)
          assert.strictEqual((yield* signIn(`127.0.1.${i}`, "wrong-password!")).status, 401)
        assert.strictEqual((yield* signIn("127.0.0.4", password)).status, 200)

        // Behind the trusted proxy each client is its own address; the proxy itself is nobody's.
        const proxiedOperator = yield* createOperator("proxied@example.com", "admin")
        const proxiedSignIn = (from: string, secret: string, headers: Record<string, string> = {}) =>
          jsonFrom(port, from, "/api/session", { email: proxiedOperator.email, password: secret }, headers)
        for (let i = 0; i < 5; i++) {
          const failed = yield* proxiedSignIn(PROXY, "wrong-password!", { "x-forwarded-for": "198.51.100.1" })
          assert.strictEqual(failed.status, 401)
        }
        const proxiedAttacker = yield* proxiedSignIn(PROXY, password, { "x-forwarded-for": "198.51.100.1" })
        assert.strictEqual(proxiedAttacker.status, 429, proxiedAttacker.text)
        // An address written by the client in front of the proxy's own entry changes nothing.
        const spoofed = yield* proxiedSignIn(PROXY, password, {
          "x-forwarded-for": "198.51.100.2, 198.51.100.1",
        })
        assert.strictEqual(spoofed.status, 429, spoofed.text)
        const proxied = yield* proxiedSignIn(PROXY, password, { "x-forwarded-for": "198.51.100.2" })
        assert.strictEqual(proxied.status, 200, proxied.text)
        // A socket that is not a trusted proxy is believed about nothing.
        const directOperator = yield* createOperator("direct@example.com", "admin")
        const directSignIn = (secret: string, forwardedFor: string) =>
          jsonFrom(
            port,
            "127.0.0.5",
            "/api/session",
            { email: directOperator.email, password: secret },
            {
              "x-forwarded-for": forwardedFor,
            },
          )
        for (let i = 0; i < 5; i++) {
          yield* directSignIn("wrong-password!", `198.51.100.${50 + i}`)
        }
        assert.strictEqual((yield* directSignIn(directOperator.password, "198.51.100.60")).status, 429)
      }),
    )

    it.effect("keys the /token throttle on the client behind a trusted proxy, not on the proxy", () =>
      Effect.gen(function* () {
        const port = yield* gatewayPort("partner-api")
        const client = yield* createClient({ gateway: "partner" })
        const fields = {
          grant_type: "client_credentials",
          client_id: client.clientId,
          audience: yield* audienceOf("partner"),
        }
        const token = (secret: string, forwardedFor: string) =>
          jsonFrom(
            port,
            PROXY,
            "/token",
            { ...fields, client_secret: secret },
            { "x-forwarded-for": forwardedFor },
          )
        for (let i = 0; i < 5; i++) assert.strictEqual((yield* token("wrong", "192.0.2.1")).status, 401)
        const blocked = yield* token(client.clientSecret, "192.0.2.1")
        assert.strictEqual(blocked.status, 429, blocked.text)
        const other = yield* token(client.clientSecret, "192.0.2.2")
        assert.strictEqual(other.status, 200, other.text)
      }),
    )
  })
})
