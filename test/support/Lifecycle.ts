import { assert } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, References, Schema } from "effect"
import type { IssuedPolicy } from "../../backend/enrollment/Domain.ts"
import { EventNames, type EventName } from "../../backend/events/Catalog.ts"
import { Envelopes } from "../../backend/events/Envelope.ts"
import { type RevisionInput, Revisions } from "../../backend/policies/Revisions.ts"
import { runCli } from "./Cli.ts"
import { enrollmentService, linkOf, walkJourney, type Walk } from "./Enrollment.ts"
import {
  awaitProspect,
  completeProspect,
  issueSource,
  postProspect,
  prospectPartner,
  provisionedOwner,
} from "./Prospects.ts"
import type { Json } from "./PublishedApi.ts"
import type { Receiver, Received } from "./Receiver.ts"
import { postJson, type RosterPartner } from "./Roster.ts"
import { eventually } from "./Streams.ts"
import { createEndpoint } from "./Webhooks.ts"

const DAY_MS = 86_400_000
const realClock = Clock.Clock.defaultValue()
/** The last millisecond of the UTC day of the first reading of `dayClock`. */
let dayEnd: number | undefined
const dayNow = () => {
  const now = realClock.currentTimeMillisUnsafe()
  dayEnd ??= (Math.floor(now / DAY_MS) + 1) * DAY_MS - 1
  return Math.min(now, dayEnd)
}

/**
 * The wall clock of the lifecycle tests' services and of `dateFromToday`: the real one, held at the last
 * millisecond of the day it was first read on once that day is over. A test running across midnight (UTC) and
 * its service thus agree on "today", which the service reads from its `Clock`.
 */
export const dayClock: Clock.Clock = {
  currentTimeMillisUnsafe: dayNow,
  currentTimeMillis: Effect.sync(dayNow),
  currentTimeNanosUnsafe: () => BigInt(dayNow()) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(dayNow()) * 1_000_000n),
  monotonicTimeNanosUnsafe: () => realClock.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: realClock.monotonicTimeNanos,
  sleep: (duration) => realClock.sleep(duration),
}

/** `YYYY-MM-DD`, `days` from `dayClock`'s date (UTC): policies' dates in tests follow the day the tests run. */
export const dateFromToday = (days: number) => new Date(dayNow() + days * DAY_MS).toISOString().slice(0, 10)

/** A service's references timed by `dayClock` (warnings and errors logged, as by default). */
export const dayClockReferences = Layer.merge(
  Layer.succeed(References.MinimumLogLevel, "Warn"),
  Layer.succeed(Clock.Clock, dayClock),
)

/** `enrollmentService` timed by `dayClock`. */
export const lifecycleService = (overrides: Record<string, string> = {}) =>
  enrollmentService(overrides, dayClockReferences)

export interface Delivered {
  readonly event: EventName
  readonly body: { readonly event: string; readonly property_owner_slug: string; readonly data: Json }
  readonly payload: Json
  readonly deliveryId: string
}

export const delivered = (request: Received): Delivered => {
  const body = JSON.parse(request.body.toString("utf8")) as Delivered["body"]
  return {
    event: body.event as EventName,
    body,
    payload: Object.values(body.data)[0] as Json,
    deliveryId: request.headers["x-webhook-delivery"]!,
  }
}

/** What the receiver got on `path`, parsed, optionally only `event`. */
export const deliveries = (receiver: Receiver, path: string, event?: EventName) =>
  receiver
    .received(path)
    .map(delivered)
    .filter((d) => event === undefined || d.event === event)

/** Waits until `check` holds of the deliveries on `path`; them. */
export const awaitDeliveries = (
  receiver: Receiver,
  path: string,
  check: (received: ReadonlyArray<Delivered>) => boolean,
) =>
  eventually(
    Effect.sync(() => deliveries(receiver, path)),
    check,
  )

/** Each delivery's body decodes with its event's catalog schema, nothing extra, and no payload field is null. */
export const assertCatalogShapes = (received: ReadonlyArray<Delivered>) => {
  for (const d of received) {
    const decoded = Schema.decodeUnknownExit(Envelopes[d.event])(d.body, { onExcessProperty: "error" })
    assert.isTrue(Exit.isSuccess(decoded), `${d.event}: ${JSON.stringify(d.body)}`)
    assert.deepStrictEqual(Object.keys(d.body).sort(), ["data", "event", "property_owner_slug"])
    for (const [field, value] of Object.entries(d.payload)) {
      assert.isNotNull(value, `${d.event} carries ${field}: null`)
    }
  }
}

/**
 * A partner with every scope, a source issued to it, an owner it provisioned, and an endpoint of that owner
 * subscribed to every event at `receiver`'s `path`.
 */
export const lifecycleOwner = (receiver: Receiver, externalOrgId: string, source: string, path: string) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code: source, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, externalOrgId)
    yield* createEndpoint(partner, `/partners/${slug}/webhooks/endpoints`, {
      name: `every event of ${slug}`,
      destination_url: receiver.url(path),
      events: EventNames,
    })
    return { partner, slug, source }
  })

/**
 * A renter submitted as a prospect (`overrides` on the complete prospect, e.g. its lease dates), walked through
 * the enrollment journey to a policy; the policy as the journey shows it.
 */
export const issuePolicy = (
  owner: { readonly partner: RosterPartner; readonly slug: string; readonly source: string },
  sourceProspectId: string,
  walk: Walk,
  overrides: Record<string, unknown> = {},
) =>
  Effect.gen(function* () {
    yield* postProspect(
      owner.partner,
      owner.slug,
      completeProspect(owner.source, sourceProspectId, {
        email: `${sourceProspectId}@example.com`,
        ...overrides,
      }),
    )
    const ready = yield* awaitProspect(owner.partner, owner.slug, owner.source, sourceProspectId)
    const views = yield* walkJourney(linkOf(ready.enrollment_url as string), walk)
    const last = views.at(-1)!
    if (last.step !== "completed" || last.policy === undefined) {
      return yield* Effect.die(new Error(`journey of ${sourceProspectId} ended on ${last.step}`))
    }
    return last.policy satisfies IssuedPolicy
  })

/** `POST /partners/{slug}/test_clock/advance` with `{"days": days}` as the owner's partner; the clock after. */
export const advanceClock = (
  owner: { readonly partner: RosterPartner; readonly slug: string },
  days: number,
) =>
  Effect.gen(function* () {
    const answer = yield* postJson<{ test_clock: { offset_days: number; today: string } }>(
      owner.partner,
      `/partners/${owner.slug}/test_clock/advance`,
      { days },
    )
    if (answer.status !== 200)
      return yield* Effect.die(new Error(`advance answered ${answer.status}: ${answer.text}`))
    return answer.body.test_clock
  })

/** The actor the tests' operator actions are audited as. */
export const OPERATOR = "cli:ops@example.com"

/** An operator's revision, as `policies revise` makes it. */
export const revise = (policyNumber: string, input: RevisionInput) =>
  Revisions.use((revisions) => revisions.revise(policyNumber, input, OPERATOR))

/** `policies show`'s view of a policy. */
export const showPolicy = (policyNumber: string) =>
  Revisions.use((revisions) => revisions.show(policyNumber)).pipe(Effect.orDie)

/** What a refused operator command says. */
export const refusal = <R>(effect: Effect.Effect<unknown, { readonly message: string }, R>) =>
  Effect.map(Effect.flip(effect), (error) => error.message)

/** `npm run cli -- ...args` with the service's env (and CLI_ACTOR); stdout parsed when it is JSON. */
export const cli = (env: Record<string, string>, ...args: ReadonlyArray<string>) =>
  Effect.map(runCli({ ...env, CLI_ACTOR: "ops@example.com" }, ...args), (run) => {
    let json: Json | undefined
    try {
      json = JSON.parse(run.stdout) as Json
    } catch {
      json = undefined
    }
    return { ...run, json }
  })
