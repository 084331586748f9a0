import { request as httpRequestRaw } from "node:http"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authEnv, authService, gatewayPort, httpRequest, requestToken, audienceOf } from "../support/Auth.ts"
import { headingOf } from "../support/Enrollment.ts"
import {
  envelope,
  ingestClient,
  prospectUpdate,
  postEvent,
  setMapping,
  PROSPECT_UPDATE_MAPPING,
} from "../support/Ingest.ts"
import { call, createOperator, signIn } from "../support/Operator.ts"
import {
  ENROLLMENT_HOST,
  issueSource,
  PROPERTY,
  prospectPartner,
  provisionedOwner,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"

const MAX_BODY = 4096

const service = authService({
  env: authEnv({
    ROLES: "partner-api,ingest-api,enrollment,console",
    ENROLLMENT_PORT: "0",
    CONSOLE_PORT: "0",
    ENROLLMENT_HOST,
    HTTP_MAX_BODY_BYTES: String(MAX_BODY),
  }),
})

const LONE_SURROGATE =
  "Request body holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape), which is not text."

/** An admin of the console, signed in. */
const admin = (email: string) => Effect.flatMap(createOperator(email, "admin"), () => signIn(email))

/** `POST /token` with a body streamed in chunks, so no Content-Length announces its size. */
const chunkedToken = (port: number, size: number) =>
  Effect.callback<{ status: number; text: string }>((resume) => {
    const req = httpRequestRaw(
      {
        host: "127.0.0.1",
        port,
        path: "/token",
        method: "POST",
        headers: { "content-type": "application/json" },
      },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text })))
      },
    )
    req.on("error", () => undefined)
    for (let sent = 0; sent < size; sent += 1024) req.write("x".repeat(1024))
    req.end()
  })

describe("hostile text (security review)", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers a NUL in an enrollment link's address with the neutral page, GET and POST", () =>
      Effect.gen(function* () {
        const port = yield* gatewayPort("enrollment")
        const paths = [
          "/enrollment/embedded/a%00/s/p?email=a%40b.c",
          "/enrollment/embedded/owner/s%00/p?email=a%40b.c",
          "/enrollment/expedited/a%00/s/p?email=a%40b.c",
          "/enrollment/embedded/owner/s/p?email=a%00%40b.c",
          "/enrollment/embedded/owner/s/p?email=a%40b.c&product=x%1b",
          "/enrollment/other/a%00",
        ]
        for (const path of paths) {
          for (const method of ["GET", "POST"]) {
            const page = yield* httpRequest(port, path, {
              method,
              redirect: "manual",
              ...(method === "POST"
                ? {
                    headers: { "content-type": "application/x-www-form-urlencoded", origin: ENROLLMENT_HOST },
                    body: "step=details&csrf_token=x",
                  }
                : {}),
            })
            assert.strictEqual(page.status, 404, `${method} ${path}: ${page.text.slice(0, 200)}`)
            assert.strictEqual(headingOf(page), "This link is not valid", `${method} ${path}`)
            assert.include(page.headers.get("content-security-policy") ?? "", "frame-ancestors 'none'")
          }
        }
      }),
    )

    it.effect("refuses a NUL in the owner or provider of a secret rotation with 422, rotating nothing", () =>
      Effect.gen(function* () {
        const secrets = query(
          (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from webhook_secrets`,
        )
        const before = (yield* secrets)[0]!.n
        const session = yield* admin("rotate-nul@example.com")
        const rotate = (body: unknown) => call("POST", "/api/secrets/rotate", { ...session, body })
        for (const field of ["owner", "provider"]) {
          const answer = yield* rotate({ [field]: "a\u0000", overlap_hours: 1 })
          assert.strictEqual(answer.status, 422, answer.text)
          assert.deepStrictEqual(answer.body, {
            status_code: 422,
            error: "Invalid rotation.",
            secret: { [field]: "must not contain control characters" },
            errors: { [field]: ["must not contain control characters"] },
          })
          const surrogate = yield* rotate({ [field]: "a\ud800", overlap_hours: 1 })
          assert.strictEqual(surrogate.status, 400, surrogate.text)
          assert.deepStrictEqual(surrogate.body, { status_code: 400, error: LONE_SURROGATE })
        }
        assert.strictEqual((yield* secrets)[0]!.n, before)
      }),
    )

    it.effect("refuses a lone surrogate in a bulk retry's filter with 400, creating no job", () =>
      Effect.gen(function* () {
        const session = yield* admin("bulk-surrogate@example.com")
        for (const filter of [{ owner: "\ud800" }, { event_type: "a\udc00b" }, { "\ud800": "x" }]) {
          const answer = yield* call("POST", "/api/bulk-retries", { ...session, body: { filter } })
          assert.strictEqual(answer.status, 400, answer.text)
          assert.deepStrictEqual(answer.body, { status_code: 400, error: LONE_SURROGATE })
        }
        const jobs = yield* call("GET", "/api/bulk-retries", session)
        assert.deepStrictEqual(jobs.body, { bulk_retries: [], next_cursor: null })
        // A surrogate pair is text like any other.
        const paired = yield* call("POST", "/api/bulk-retries", {
          ...session,
          body: { filter: { owner: "a\ud83d\ude00" } },
        })
        assert.isBelow(paired.status, 500, paired.text)
        assert.notStrictEqual(paired.body.error, LONE_SURROGATE)
        const path = yield* call("PUT", "/api/operators/a%00", { ...session, body: { role: "viewer" } })
        assert.strictEqual(path.status, 404, path.text)
      }),
    )

    it.effect(
      "refuses a lone surrogate in any roster item with 400 however often it is sent, storing nothing",
      () =>
        Effect.gen(function* () {
          const partner = yield* prospectPartner()
          const slug = yield* provisionedOwner(partner, "org-surrogates")
          const port = yield* gatewayPort("partner-api")
          const send = (path: string, body: unknown) =>
            httpRequest(port, path, {
              method: "POST",
              headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
              body: JSON.stringify(body),
            })
          const sends: ReadonlyArray<readonly [string, unknown]> = [
            [`/partners/${slug}/properties`, [{ ...PROPERTY, external_system_id: "k\ud800z" }]],
            [`/partners/${slug}/properties`, [{ ...PROPERTY, external_system_id: "k\udc00" }]],
            [
              `/partners/${slug}/properties`,
              [{ ...PROPERTY, external_system_id: "p-2", building_name: "B\ud800" }],
            ],
            [
              `/partners/${slug}/units`,
              [
                {
                  external_system_id: "k\ud800z",
                  property_external_id: PROPERTY.external_system_id,
                  name: "1",
                },
              ],
            ],
            [
              `/partners/${slug}/bank_accounts`,
              [
                {
                  external_system_id: "k\ud800z",
                  display_name: "Ops",
                  routing_number: "021000021",
                  account_number: "000123456789",
                },
              ],
            ],
            ["/partners/property_owners", { external_org_id: "k\ud800z", name: "Surrogate" }],
            [`/partners/${slug}/prospects`, { prospect: { source: "s\ud800", source_prospect_id: "p" } }],
            [
              `/partners/${slug}/webhooks/endpoints`,
              { endpoint: { name: "e\ud800", destination_url: "https://a.example" } },
            ],
          ]
          for (const [path, body] of sends) {
            for (const attempt of [1, 2]) {
              const answer = yield* send(path, body)
              assert.strictEqual(answer.status, 400, `${path} #${attempt}: ${answer.text}`)
              assert.deepStrictEqual(JSON.parse(answer.text), { status_code: 400, error: LONE_SURROGATE })
            }
          }
          const stored = yield* query(
            (sql) => sql<Array<{ n: number }>>`
            select (select count(*) from properties where external_system_id <> ${PROPERTY.external_system_id})
                 + (select count(*) from units where external_system_id like 'k%')
                 + (select count(*) from bank_accounts where external_system_id like 'k%')
                 + (select count(*) from owners where external_org_id like 'k%') as n`,
          )
          assert.strictEqual(Number(stored[0]!.n), 0)
        }),
    )

    it.effect("refuses a lone surrogate in an inbound event with 400, publishing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "surrogate-src", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-surrogate-events")
        const client = yield* ingestClient("surrogate-src", [slug])
        yield* setMapping("surrogate-src", PROSPECT_UPDATE_MAPPING)
        const event = envelope("surrogate-src", prospectUpdate("p-\ud800", "2026-01-10T12:00:00Z"))
        const answer = yield* postEvent(client, event)
        assert.strictEqual(answer.status, 400, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), { status_code: 400, error: LONE_SURROGATE })
      }),
    )

    it.effect(
      "answers every /token refusal in OAuth's shape: a control character, a lone surrogate, a 413",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const audience = yield* audienceOf("partner")
          const fields = {
            grant_type: "client_credentials",
            client_id: "cli_x",
            client_secret: "s",
            audience,
          }
          const oauth = (answer: { status: number; text: string }, status: number) => {
            assert.strictEqual(answer.status, status, answer.text)
            const body = JSON.parse(answer.text) as Record<string, unknown>
            assert.deepStrictEqual(Object.keys(body).sort(), ["error", "error_description"], answer.text)
            assert.strictEqual(body.error, "invalid_request")
          }
          oauth(yield* httpRequest(port, "/token?audience=a%00", { method: "POST", body: "{}" }), 400)
          oauth(yield* httpRequest(port, "/token?x%1b=1", { method: "POST", body: "{}" }), 400)
          oauth(yield* requestToken(port, { ...fields, client_id: "cli_\ud800" }), 400)
          oauth(yield* requestToken(port, { ...fields, client_secret: "x".repeat(MAX_BODY) }), 413)
          oauth(
            yield* requestToken(
              port,
              { ...fields, client_secret: "x".repeat(MAX_BODY) },
              { encoding: "form" },
            ),
            413,
          )
          oauth(yield* chunkedToken(port, MAX_BODY * 4), 413)
          // The ingestion gateway's /token is the same route.
          oauth(
            yield* httpRequest(yield* gatewayPort("ingest-api"), "/token?a=%00", {
              method: "POST",
              body: "{}",
            }),
            400,
          )
        }),
    )
  })
})
