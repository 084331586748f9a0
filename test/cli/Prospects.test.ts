import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { EligibilityRequested } from "../../backend/prospects/Events.ts"
import { EligibilityDecisions } from "../../backend/prospects/EligibilityDecisions.ts"
import { authEnv, authService } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import {
  completeProspect,
  ENROLLMENT_HOST,
  getProspect,
  issueSource,
  postProspect,
  prospectPartner,
  provisionedOwner,
} from "../support/Prospects.ts"
import { drainOutbox } from "../support/Roster.ts"
import { readStream } from "../support/Streams.ts"

/** The partner gateway without the workers: the test relays the outbox and decides prospects itself. */
const service = authService({ env: authEnv({ ROLES: "partner-api", ENROLLMENT_HOST }) })

/** `npm run cli -- ...` on this file's database, run in this process through the CLI's entry function. */
const cli = (...args: ReadonlyArray<string>) => runCli(service.env, ...args)

interface Shown {
  readonly owner_slug: string
  readonly prospect: Record<string, unknown> & { readonly status: string; readonly id: number }
}

/** A partner with a source of its own and an owner provisioned for it (`code` names both). */
const partnerWithOwner = (code: string) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, `org-${code}`)
    return { partner, slug }
  })

/** The eligibility requests published so far for the owner's prospects, oldest first (outbox relayed first). */
const eligibilityRequests = (slug: string) =>
  Effect.gen(function* () {
    yield* drainOutbox
    const messages = yield* readStream("ELIGIBILITY")
    return messages
      .filter((message) => message.subject.startsWith(`eligibility.requested.${slug}.`))
      .map((message) => message.json as EligibilityRequested)
  })

/** The latest eligibility request of the owner's prospects, as the workers would receive it. */
const latestRequest = (slug: string) =>
  Effect.map(eligibilityRequests(slug), (requests) => {
    const last = requests.at(-1)
    if (last === undefined) throw new Error(`no eligibility request for ${slug}`)
    return last
  })

/** A complete prospect POSTed through the gateway, then decided as the eligibility actor decides it. */
const readyProspect = (code: string, id: string) =>
  Effect.gen(function* () {
    const { partner, slug } = yield* partnerWithOwner(code)
    const posted = yield* postProspect(partner, slug, completeProspect(code, id))
    assert.strictEqual(posted.status, 200, posted.text)
    assert.strictEqual(posted.body.prospect.status, "processing")
    const decided = yield* EligibilityDecisions.use((decisions) =>
      Effect.flatMap(latestRequest(slug), (request) => decisions.decide(request)),
    )
    assert.strictEqual(decided, "decided")
    return { partner, slug }
  })

/** A refused command: exit status 2, the message on stderr, nothing on stdout, no stack trace. */
const assertRefused = (run: { code: number | null; stdout: string; stderr: string }, message: RegExp) => {
  assert.strictEqual(run.code, 2, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`)
  assert.match(run.stderr, message)
  assert.notMatch(run.stderr, /^\s+at /m, "no stack trace")
  assert.strictEqual(run.stdout.trim(), "")
}

describe("npm run cli -- prospects", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("show prints the prospect as the API shows it, with its owner", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* readyProspect("cli-show", "p-1")
        const run = yield* cli("prospects", "show", "--source", "cli-show", "--id", "p-1")
        assert.strictEqual(run.code, 0, run.stderr)
        const shown = JSON.parse(run.stdout) as Shown
        assert.strictEqual(shown.owner_slug, slug)
        assert.strictEqual(shown.prospect.status, "ready")
        assert.notProperty(shown.prospect, "error_reason")
        const answer = yield* getProspect(partner, slug, "cli-show", "p-1")
        assert.deepStrictEqual(shown.prospect, answer.body.prospect)
      }),
    )

    it.effect(
      "show prints the error_reason of a prospect in error; recheck sends it to be decided again",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* partnerWithOwner("cli-error")
          const posted = yield* postProspect(partner, slug, completeProspect("cli-error", "p-1"))
          assert.strictEqual(posted.status, 200, posted.text)
          const request = yield* latestRequest(slug)
          const reason = "eligibility check failed 5 times: Error: roster unavailable"
          const failed = yield* EligibilityDecisions.use((decisions) => decisions.fail(request, reason))
          assert.isTrue(failed)

          const shown = yield* cli("prospects", "show", "--source", "cli-error", "--id", "p-1")
          assert.strictEqual(shown.code, 0, shown.stderr)
          const inError = JSON.parse(shown.stdout) as Shown
          assert.strictEqual(inError.owner_slug, slug)
          assert.strictEqual(inError.prospect.status, "error")
          assert.strictEqual(inError.prospect.error_reason, reason)

          const rechecked = yield* cli("prospects", "recheck", "--source", "cli-error", "--id", "p-1")
          assert.strictEqual(rechecked.code, 0, rechecked.stderr)
          const processing = JSON.parse(rechecked.stdout) as Shown
          assert.strictEqual(processing.prospect.status, "processing")
          assert.notProperty(processing.prospect, "error_reason")
          const retried = yield* latestRequest(slug)
          assert.strictEqual(retried.version, request.version + 1)
          const decided = yield* EligibilityDecisions.use((decisions) => decisions.decide(retried))
          assert.strictEqual(decided, "decided")
          const answer = yield* getProspect(partner, slug, "cli-error", "p-1")
          assert.strictEqual(answer.body.prospect.status, "ready", answer.text)
        }),
    )

    it.effect("recheck moves a ready prospect to processing and requests its eligibility again", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* readyProspect("cli-recheck", "p-1")
        const before = yield* eligibilityRequests(slug)
        assert.strictEqual(before.length, 1)

        const run = yield* cli("prospects", "recheck", "--source", "cli-recheck", "--id", "p-1")
        assert.strictEqual(run.code, 0, run.stderr)
        const printed = JSON.parse(run.stdout) as Shown
        assert.strictEqual(printed.owner_slug, slug)
        assert.strictEqual(printed.prospect.status, "processing")
        assert.strictEqual(printed.prospect.source_prospect_id, "p-1")
        assert.isNull(printed.prospect.effective_coverage_amount_cents)
        assert.isNull(printed.prospect.enrollment_url)

        const stored = yield* getProspect(partner, slug, "cli-recheck", "p-1")
        assert.deepStrictEqual(stored.body.prospect, printed.prospect)

        const after = yield* eligibilityRequests(slug)
        assert.strictEqual(after.length, 2)
        assert.deepStrictEqual(after[1], {
          prospect_id: String(printed.prospect.id),
          version: before[0]!.version + 1,
          source: "cli-recheck",
          source_prospect_id: "p-1",
        })
        const subjects = (yield* readStream("ELIGIBILITY"))
          .filter((message) => message.subject.startsWith(`eligibility.requested.${slug}.`))
          .map((message) => message.subject)
        assert.match(subjects[1]!, new RegExp(`^eligibility\\.requested\\.${slug}\\.\\d+$`))
        // One prospect's requests share a partition, so the workers take them in order.
        assert.strictEqual(subjects[1], subjects[0])
      }),
    )

    it.effect("show and recheck exit 2 for an unknown prospect", () =>
      Effect.gen(function* () {
        yield* readyProspect("cli-unknown", "p-1")
        for (const command of ["show", "recheck"]) {
          assertRefused(
            yield* cli("prospects", command, "--source", "cli-unknown", "--id", "p-404"),
            /^no such prospect$/m,
          )
        }
        assertRefused(
          yield* cli("prospects", "show", "--source", "never-issued", "--id", "p-1"),
          /^no such prospect$/m,
        )
      }),
    )

    it.effect("recheck exits 2 for an incomplete prospect, naming what it lacks, and changes nothing", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("cli-incomplete")
        const posted = yield* postProspect(
          partner,
          slug,
          completeProspect("cli-incomplete", "p-1", { email: null, phone: null }),
        )
        assert.strictEqual(posted.status, 200, posted.text)
        assert.strictEqual(posted.body.prospect.status, "incomplete")

        const run = yield* cli("prospects", "recheck", "--source", "cli-incomplete", "--id", "p-1")
        assertRefused(run, /the prospect is incomplete; it lacks email, phone/)
        const answer = yield* getProspect(partner, slug, "cli-incomplete", "p-1")
        assert.deepStrictEqual(answer.body.prospect, posted.body.prospect)
        assert.deepStrictEqual(yield* eligibilityRequests(slug), [])

        // show still shows it, with what it lacks.
        const shown = yield* cli("prospects", "show", "--source", "cli-incomplete", "--id", "p-1")
        assert.strictEqual(shown.code, 0, shown.stderr)
        assert.deepStrictEqual((JSON.parse(shown.stdout) as Shown).prospect.missing_fields, [
          "email",
          "phone",
        ])
      }),
    )

    const badInput: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; message: RegExp }> = [
      {
        name: "a missing --id",
        args: ["prospects", "show", "--source", "vero"],
        message: /usage: prospects show --source CODE --id SOURCE_PROSPECT_ID/,
      },
      {
        name: "a missing --source",
        args: ["prospects", "recheck", "--id", "p-1"],
        message: /usage: prospects recheck --source CODE --id SOURCE_PROSPECT_ID/,
      },
      {
        name: "an unknown option",
        args: ["prospects", "show", "--source", "vero", "--id", "p-1", "--owner", "acme"],
        message: /Unknown option '--owner'/,
      },
      {
        name: "an unknown prospects command",
        args: ["prospects", "delete", "--source", "vero", "--id", "p-1"],
        message: /unknown prospects command: delete/,
      },
    ]

    for (const { name, args, message } of badInput) {
      it.effect(`exits 2 with the usage on ${name}`, () =>
        Effect.gen(function* () {
          const run = yield* cli(...args)
          assertRefused(run, message)
          assert.match(run.stderr, /^usage: /m, "how the command is used")
        }),
      )
    }
  })
})
