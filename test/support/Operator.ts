import { Clock, Effect, Layer, References } from "effect"
import { appLayer } from "../../backend/App.ts"
import { Operators } from "../../backend/operator/Operators.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { isolatedEnv, isolationLayer } from "./TestPlatform.ts"

const realClock = Clock.Clock.defaultValue()
let offsetMs = 0
/** While set, the wall clock stands still at this instant (plus the offset). */
let heldAt: number | undefined
const now = () => (heldAt ?? realClock.currentTimeMillisUnsafe()) + offsetMs

/** A wall clock a test can hold still and move forward (timers still run in real time). */
export const movableClock: Clock.Clock = {
  currentTimeMillisUnsafe: now,
  currentTimeMillis: Effect.sync(now),
  currentTimeNanosUnsafe: () => BigInt(now()) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(now()) * 1_000_000n),
  monotonicTimeNanosUnsafe: () => realClock.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: realClock.monotonicTimeNanos,
  sleep: (duration) => realClock.sleep(duration),
}

/**
 * Moves `movableClock` forward by `ms`, inside `holdClock`'s scope only: its release takes the move back, so a
 * move can never outlive its test and age the sessions of the next file run in the same worker.
 */
export const advanceClock = (ms: number) =>
  Effect.sync(() => {
    if (heldAt === undefined) throw new Error("advanceClock needs the clock held (yield* holdClock first)")
    offsetMs += ms
  })
/** Holds `movableClock` still for the rest of the scope (it moves only by `advanceClock`), then frees it. */
export const holdClock = Effect.acquireRelease(
  Effect.sync(() => void (heldAt = realClock.currentTimeMillisUnsafe())),
  () => Effect.sync(() => void ((heldAt = undefined), (offsetMs = 0))),
)

/** The console role (and `extraRoles`) on a free port, on an isolated database, timed by `movableClock`. */
export const consoleService = (overrides: Record<string, string> = {}) => {
  const env = isolatedEnv({ ROLES: "console", CONSOLE_PORT: "0", ...overrides })
  const layer = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
    Layer.provideMerge(isolationLayer(env)),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
    Layer.provideMerge(Layer.succeed(Clock.Clock, movableClock)),
  )
  return { env, layer }
}

export const consolePort = Effect.map(Effect.service(ListeningPorts), (ports) => ports.get("console")!)

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The parsed JSON, read field by field in assertions (undefined when the body is not JSON). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test reads the fields of its own route
  readonly body: any
}

/** One request to the console's port; a JSON body is sent as JSON. */
export const call = (
  method: string,
  path: string,
  options: { readonly cookie?: string; readonly csrf?: string; readonly body?: unknown } = {},
) =>
  Effect.gen(function* () {
    const port = yield* consolePort
    return yield* Effect.promise(async (): Promise<Answer> => {
      const headers: Record<string, string> = {}
      if (options.cookie !== undefined) headers.cookie = options.cookie
      if (options.csrf !== undefined) headers["x-csrf-token"] = options.csrf
      if (options.body !== undefined) headers["content-type"] = "application/json"
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      })
      // A stream (`/api/live`) never ends: its answer is the status and headers.
      const streaming = response.headers.get("content-type")?.startsWith("text/event-stream") === true
      const text = streaming ? (await response.body?.cancel(), "") : await response.text()
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      return { status: response.status, headers: response.headers, text, body }
    })
  })

/** An operator made as the CLI makes one. */
export const createOperator = (
  email: string,
  role: "viewer" | "operator" | "admin",
  password = "correct horse battery",
) =>
  Effect.flatMap(Effect.service(Operators), (operators) =>
    operators.create({ email, role, password }, "cli:test"),
  ).pipe(Effect.orDie, Effect.as({ email, password }))

export interface SignedIn {
  readonly cookie: string
  readonly csrf: string
  readonly email: string
}

/** Signs in through `POST /api/session`; the cookie and CSRF token to send with later calls. */
export const signIn = (email: string, password = "correct horse battery") =>
  Effect.gen(function* () {
    const answer = yield* call("POST", "/api/session", { body: { email, password } })
    if (answer.status !== 200)
      return yield* Effect.die(new Error(`sign-in refused: ${answer.status} ${answer.text}`))
    const cookie = answer.headers.get("set-cookie")!.split(";")[0]!
    return { cookie, csrf: answer.body.csrf_token as string, email } satisfies SignedIn
  })

/** An operator of `role` made and signed in. */
export const operatorSession = (email: string, role: "viewer" | "operator" | "admin") =>
  Effect.flatMap(createOperator(email, role), () => signIn(email))
