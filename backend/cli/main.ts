import { parseArgs } from "node:util"
import { Effect, Layer } from "effect"
import { AppConfig, loadAppConfig } from "../platform/Config.ts"
import { Nats } from "../platform/Nats.ts"
import { runMain } from "../platform/Main.ts"
import { loggerLayer } from "../platform/Observability.ts"
import { PlatformLayer } from "../platform/Platform.ts"
import { tail, TailUsage } from "./Tail.ts"

const USAGE = `usage: npm run cli -- <command>

commands:
  migrate                                   create the database if missing, apply migrations, provision streams
  tail <subject-pattern> [--since 10m] [--stream NAME]
                                            print messages on matching subjects (e.g. 'events.acme.>'),
                                            then follow new ones until ctrl-C
`

const commands = {
  migrate: () =>
    Effect.scoped(Layer.build(PlatformLayer)).pipe(
      Effect.andThen(Effect.sync(() => process.stdout.write("database migrated and streams provisioned\n"))),
    ),
  tail: (args: ReadonlyArray<string>) => {
    const { positionals, values } = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { since: { type: "string" }, stream: { type: "string" } },
    })
    if (positionals.length !== 1)
      return Effect.fail(new TailUsage({ message: "tail takes one subject pattern" }))
    return Effect.scoped(tail(positionals[0]!, values)).pipe(Effect.provide(Nats.layer))
  },
}

const program = Effect.gen(function* () {
  const [name, ...args] = process.argv.slice(2)
  const command = commands[name as keyof typeof commands]
  if (command === undefined) {
    process.stderr.write(USAGE)
    process.exitCode = name === undefined || name === "help" || name === "--help" ? 0 : 2
    return
  }
  const config = yield* loadAppConfig
  yield* command(args).pipe(
    Effect.provide(Layer.succeed(AppConfig, config)),
    Effect.provide(
      loggerLayer({ logLevel: config.logLevel === "info" ? "warn" : config.logLevel }, "stderr"),
    ),
  )
}).pipe(
  Effect.catchTags({
    ConfigInvalid: (error) => fail(error.message),
    TailUsage: (error) => fail(`${error.message}\n\n${USAGE}`),
  }),
)

const fail = (message: string) =>
  Effect.sync(() => {
    process.stderr.write(`${message}\n`)
    process.exitCode = 2
  })

runMain(program)
