import { request } from "node:http"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { gatewayPort } from "../support/Auth.ts"
import { assertAccessible } from "../support/Accessibility.ts"
import { launchBrowser } from "../support/Browser.ts"
import {
  enrollableRenter,
  enrollmentService,
  formTokenOf,
  headingOf,
  pathOf,
  type Renter,
} from "../support/Enrollment.ts"
import { ENROLLMENT_HOST } from "../support/Prospects.ts"

/** A proxy in front of the enrollment host; the browser's own address is trusted as one too. */
const PROXY = "127.0.0.9"
const FREE_FAILURES = 20

const service = enrollmentService({
  TRUSTED_PROXIES: `${PROXY}/32,127.0.0.1/32`,
})

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
}

/** One request to the enrollment host sent from the loopback address `from` (all of 127.0.0.0/8 is this machine). */
const from = (
  address: string,
  path: string,
  options: {
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly body?: string
  } = {},
) =>
  Effect.flatMap(gatewayPort("enrollment"), (port) =>
    Effect.promise(
      () =>
        new Promise<Answer>((resolve, reject) => {
          const req = request(
            {
              host: "127.0.0.1",
              port,
              path,
              method: options.method ?? "GET",
              localAddress: address,
              agent: false,
              headers: options.headers ?? {},
            },
            (res) => {
              let text = ""
              res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
              res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
            },
          )
          req.once("error", reject)
          req.end(options.body)
        }),
    ),
  )

const heading = (answer: Answer) => headingOf({ ...answer, headers: new Headers() })

/** The renter's link with another prospect id: what someone enumerating a partner's ids would try. */
const guessedLink = (renter: Renter, n: number) =>
  pathOf(renter.enrollmentUrl).replace(`/${renter.sourceProspectId}?`, `/p-guess-${n}?`)

/** `count` wrong links opened one after the other from `address`, with what each answered. */
const guessLinks = (renter: Renter, address: string, count: number, headers: Record<string, string> = {}) =>
  Effect.forEach(
    Array.from({ length: count }, (_, n) => n),
    (n) => from(address, guessedLink(renter, n), { headers }),
  )

const assertThrottled = (answer: Answer, name: string) => {
  assert.strictEqual(answer.status, 429, name)
  assert.strictEqual(heading(answer), "Too many links that are not valid", name)
  assert.isAbove(Number(answer.headers["retry-after"]), 0, `${name}: Retry-After says when to come back`)
  assert.notInclude(answer.text, "John", `${name} shows nothing of the renter`)
}

describe("guessing enrollment links", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "answers wrong links from one address with the neutral page, then 429, while another address opens its valid link",
      () =>
        Effect.gen(function* () {
          const renter = yield* enrollableRenter("guess")
          const answers = yield* guessLinks(renter, "127.0.0.2", 200)
          for (const [n, answer] of answers.slice(0, FREE_FAILURES).entries()) {
            assert.strictEqual(answer.status, 404, `guess ${n}`)
            assert.strictEqual(heading(answer), "This link is not valid", `guess ${n}`)
          }
          assert.strictEqual(answers[FREE_FAILURES]!.status, 404, "the first failure past the free ones")
          assertThrottled(answers.at(-1)!, "the last guess")
          // The neutral 429 page has the renter pages' look: the same layout as the neutral page.
          const shell = (text: string) =>
            text.replace(/<title>.*<\/title>/, "").replace(/<main[\s\S]*<\/main>/, "")
          assert.strictEqual(shell(answers.at(-1)!.text), shell(answers[0]!.text))

          // The renter's valid link, opened from the guessing address, is refused too: the guesser may hold it.
          assertThrottled(yield* from("127.0.0.2", pathOf(renter.enrollmentUrl)), "a valid link from there")

          // Another address is not affected.
          const elsewhere = yield* from("127.0.0.3", pathOf(renter.enrollmentUrl))
          assert.strictEqual(elsewhere.status, 303, elsewhere.text)
          const page = yield* from("127.0.0.3", String(elsewhere.headers.location))
          assert.strictEqual(page.status, 200)
          assert.strictEqual(heading(page), "Check your details")
          assert.include(page.text, "John Doe")
        }),
    )

    it.effect(
      "lets a burst of wrong links sent at once from one address past the free ones by a few at most",
      () =>
        Effect.gen(function* () {
          const renter = yield* enrollableRenter("guess-burst")
          const answers = yield* Effect.forEach(
            Array.from({ length: 200 }, (_, n) => n),
            (n) => from("127.0.0.7", guessedLink(renter, n)),
            // Many more at once than one address may look up, and few enough to leave the test database's pool be.
            { concurrency: 16 },
          )
          const looked = answers.filter((answer) => answer.status === 404).length
          // Four lookups of one address run at once: the ones under way when the block is set still answer.
          assert.isAtLeast(looked, FREE_FAILURES)
          assert.isAtMost(looked, FREE_FAILURES + 4)
          // A guess refused for being one too many at once says so; after the burst, the block stands.
          const refused = answers.filter((answer) => answer.status !== 404)
          for (const answer of refused) {
            assert.strictEqual(answer.status, 429)
            assert.isAbove(Number(answer.headers["retry-after"]), 0)
            assert.include(
              ["Too many links that are not valid", "Too many pages opened at once"],
              heading(answer),
            )
          }
          assertThrottled(yield* from("127.0.0.7", guessedLink(renter, 200)), "a guess after the burst")
          const elsewhere = yield* from("127.0.0.8", pathOf(renter.enrollmentUrl))
          assert.strictEqual(elsewhere.status, 303, elsewhere.text)
        }),
    )

    it.effect("refuses form posts and documents from a blocked address, and counts their wrong keys", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("guess-forms")
        const link = pathOf(renter.enrollmentUrl)
        const opened = yield* from("127.0.0.4", link)
        const details = yield* from("127.0.0.4", String(opened.headers.location))
        const post = (address: string, path: string) =>
          from(address, path, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", origin: ENROLLMENT_HOST },
            body: new URLSearchParams({
              csrf_token: formTokenOf({ ...details, headers: new Headers() }),
              step: "details",
            }).toString(),
          })
        // The form's token names the link's parts but not its email: posts with other emails reach the journey.
        const wrongEmail = (n: number) => {
          const url = new URL(renter.enrollmentUrl)
          url.searchParams.set("email", `guess-${n}@example.com`)
          return pathOf(url.href)
        }
        const posts = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, n) => n),
          (n) => post("127.0.0.4", wrongEmail(n)),
        )
        assert.strictEqual(posts[0]!.status, 404)
        assert.strictEqual(heading(posts[0]!), "This link is not valid")
        assertThrottled(posts.at(-1)!, "the last wrong post")
        assertThrottled(yield* post("127.0.0.4", link), "the renter's own form from there")

        const unknownDocuments = Array.from(
          { length: 40 },
          (_, n) => `/documents/${`${n}`.padEnd(43, "a")}.zip`,
        )
        const documents = yield* Effect.forEach(unknownDocuments, (path) => from("127.0.0.5", path))
        assert.strictEqual(documents[0]!.status, 404)
        assert.strictEqual(heading(documents[0]!), "Page not found")
        assertThrottled(documents.at(-1)!, "the last unknown document")
        assertThrottled(yield* from("127.0.0.5", `/documents/${"b".repeat(43)}/declaration.pdf`), "a PDF")
        assertThrottled(yield* from("127.0.0.5", link), "a link from an address that guessed documents")

        // The renter, elsewhere, still answers their form.
        const answered = yield* post("127.0.0.6", link)
        assert.strictEqual(answered.status, 303, answered.text)
      }),
    )

    it.effect("counts a trusted proxy's clients each by their own address", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("guess-proxied")
        const answers = yield* guessLinks(renter, PROXY, 60, { "x-forwarded-for": "198.51.100.7" })
        assertThrottled(answers.at(-1)!, "the proxied guesser")
        // An address the client wrote in front of the proxy's own entry changes nothing.
        const spoofed = yield* from(PROXY, pathOf(renter.enrollmentUrl), {
          headers: { "x-forwarded-for": "198.51.100.8, 198.51.100.7" },
        })
        assertThrottled(spoofed, "a spoofed address")
        const neighbour = yield* from(PROXY, pathOf(renter.enrollmentUrl), {
          headers: { "x-forwarded-for": "198.51.100.8" },
        })
        assert.strictEqual(neighbour.status, 303, neighbour.text)
      }),
    )

    it.effect("shows a blocked renter an accessible page in the renter pages' style", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("guess-page")
        const port = yield* gatewayPort("enrollment")
        const browser = yield* launchBrowser()
        const page = yield* Effect.promise(() => browser.newPage())
        // The browser's address is a trusted proxy's: each page is counted as this client's.
        yield* Effect.promise(() => page.setExtraHTTPHeaders({ "x-forwarded-for": "198.51.100.20" }))
        yield* guessLinks(renter, "127.0.0.1", 40, { "x-forwarded-for": "198.51.100.20" })
        yield* Effect.promise(async () => {
          const answer = await page.goto(`http://127.0.0.1:${port}${pathOf(renter.enrollmentUrl)}`)
          assert.strictEqual(answer?.status(), 429)
          await page.getByRole("heading", { level: 1, name: "Too many links that are not valid" }).waitFor()
          await assertAccessible(page, "the page of a blocked address")
          await page.setViewportSize({ width: 360, height: 740 })
          await page.reload()
          await page.getByRole("heading", { level: 1, name: "Too many links that are not valid" }).waitFor()
          await assertAccessible(page, "the page of a blocked address at 360 px")
        })
      }).pipe(Effect.scoped),
    )
  })
})
