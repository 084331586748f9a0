import { Effect } from "effect"
import { json, type Route, Unprocessable } from "../platform/Http.ts"
import { decodeFields, joinedMessages } from "../platform/Validation.ts"
import { TestClockAdvance, TestClockInvalid, TestClockResponse } from "./LifecycleDomain.ts"
import { TestClocks } from "./TestClocks.ts"

const decodeAdvance = decodeFields(TestClockAdvance)

/** The advance a body asks for, or TestClockInvalid with a message per failing field. */
const advanceOf = (parsed: unknown) => {
  const decoded = decodeAdvance(parsed)
  return "errors" in decoded
    ? Effect.fail(new TestClockInvalid({ fields: joinedMessages(decoded.errors) }))
    : Effect.succeed(decoded.value)
}

const NOT_IN_PRODUCTION = "Staging and development only: in production this route does not exist (404)."

/**
 * The owner's test clock (staging and development; the partner gateway does not serve these in production):
 * moving it forward makes that owner's policies expire, start and get charged as of the new date, and nobody
 * else's.
 */
export const testClockRoutes: ReadonlyArray<Route<TestClocks>> = [
  {
    method: "GET",
    path: "/partners/:owner_slug/test_clock",
    access: { scope: "test_clock:write" },
    doc: {
      summary: "Show the owner's test clock",
      description: `How many days the owner's clock runs ahead of the real date, and the date its policies live on. ${NOT_IN_PRODUCTION}`,
      tag: "Test clock",
      responses: [{ status: 200, description: "The owner's clock", schema: TestClockResponse }],
    },
    handle: (request) =>
      TestClocks.use((clocks) => clocks.show(request.params.owner_slug!)).pipe(
        Effect.map((clock) => json(200, { status_code: 200, test_clock: clock })),
      ),
  },
  {
    method: "POST",
    path: "/partners/:owner_slug/test_clock/advance",
    access: { scope: "test_clock:write" },
    doc: {
      summary: "Advance the owner's test clock",
      description:
        'Body `{"days": N}`: moves the owner\'s clock N days forward (it never goes back). The workers then ' +
        "activate, charge and expire the owner's policies as of the new date, emitting `policy.expired`, " +
        "`delinquency.created` and `delinquency.resolved` as they come due; other owners' policies are untouched. " +
        NOT_IN_PRODUCTION,
      tag: "Test clock",
      body: TestClockAdvance,
      responses: [
        { status: 200, description: "The owner's clock after the advance", schema: TestClockResponse },
        { status: 422, description: "`days` is not a whole number from 1 to 3650" },
      ],
    },
    handle: (request) =>
      Effect.gen(function* () {
        const input = yield* Effect.flatMap(request.json, advanceOf)
        const clock = yield* TestClocks.use((clocks) => clocks.advance(request.params.owner_slug!, input))
        return json(200, { status_code: 200, test_clock: clock })
      }).pipe(
        Effect.catchTag("TestClockInvalid", (error) =>
          Effect.fail(
            new Unprocessable({
              message: "Test clock advance invalid.",
              resource: "test_clock",
              fields: error.fields,
            }),
          ),
        ),
      ),
  },
]
