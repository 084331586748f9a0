import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { usageOf } from "../../backend/cli/CommandLine.ts"
import { COMMANDS, type CommandName } from "../../backend/cli/Commands.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { runCli } from "../support/Cli.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const names = Object.keys(COMMANDS) as Array<CommandName>

/** No database or NATS anywhere: help must not need them. */
const nowhere = {
  DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
  NATS_URL: "nats://127.0.0.1:1",
  PATH: "",
}

describe("npm run cli -- --help", () => {
  it.effect("lists every command with its arguments on stdout, without the database", () =>
    Effect.gen(function* () {
      for (const args of [["--help"], ["-h"], ["help"], []]) {
        const run = yield* runCli(nowhere, ...args)
        assert.strictEqual(run.code, 0, args.join(" "))
        assert.strictEqual(run.stderr, "")
        for (const name of names) assert.include(run.stdout, `  ${usageOf(name).slice("usage: ".length)}\n`)
      }
    }),
  )

  it.effect("after a command, shows that command's usage and what it does", () =>
    Effect.gen(function* () {
      for (const name of names) {
        const run = yield* runCli(nowhere, ...name.split(" "), "--help")
        assert.strictEqual(run.code, 0, name)
        assert.isTrue(run.stdout.startsWith(`${usageOf(name)}\n\n${COMMANDS[name].summary}`), run.stdout)
      }
    }),
  )

  it.effect("refuses an unknown command with exit status 2 and the command list on stderr", () =>
    Effect.gen(function* () {
      const run = yield* runCli(nowhere, "frobnicate")
      assert.strictEqual(run.code, 2)
      assert.strictEqual(run.stdout, "")
      assert.match(run.stderr, /^unknown command: frobnicate\n\nusage: /)
    }),
  )

  it.live(
    "answers as a process through npm run -s and through npx partner-cli, the usage alone on stdout",
    () =>
      Effect.gen(function* () {
        for (const [command, args] of [
          ["npm", ["run", "-s", "cli", "--", "--help"]],
          ["npx", ["partner-cli", "--help"]],
        ] as const) {
          const cli = yield* spawnProcess(command, args, { cwd: root, env: process.env })
          assert.deepStrictEqual(yield* cli.exited, { code: 0, signal: null }, cli.stderr())
          assert.isTrue(cli.stdout().startsWith("usage: npm run -s cli -- <command>"), cli.stdout())
        }
      }).pipe(Effect.scoped),
  )
})
