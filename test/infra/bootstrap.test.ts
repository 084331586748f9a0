import { type ChildProcess, execFile, spawn } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import net from "node:net"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import postgres from "postgres"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { answers, freePort } from "../support/Net.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const BOOTSTRAP = path.join(ROOT, "infra", "bootstrap.mjs")
const TIMEOUT_MS = 120_000

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function bootstrap(
  command: string,
  env: NodeJS.ProcessEnv,
  { args = [], uid }: { args?: ReadonlyArray<string>; uid?: number } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BOOTSTRAP, command, ...args],
      { cwd: ROOT, env, timeout: 100_000, ...(uid === undefined ? {} : { uid, gid: uid }) },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    )
  })
}

function answersAt(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return answers(Number(port || defaultPort), hostname.replace(/^\[(.*)\]$/, "$1"))
}

describe("infra/bootstrap.mjs", { timeout: TIMEOUT_MS }, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "partner-bootstrap-"))
  // initdb and postgres run as the postgres OS user when the tests run as root.
  chmodSync(dataDir, 0o777)
  let env: NodeJS.ProcessEnv = { ...process.env, PARTNER_DATA_DIR: dataDir }

  afterAll(async () => {
    await bootstrap("stop", env)
    rmSync(dataDir, { recursive: true, force: true })
  }, TIMEOUT_MS)

  it("starts project-local Postgres, NATS and Redis on free ports, reuses them, and stops them", async () => {
    const [pgPort, natsPort, redisPort] = [await freePort(), await freePort(), await freePort()]
    const DATABASE_URL = `postgres://postgres@127.0.0.1:${pgPort}/partner_service`
    const NATS_URL = `nats://127.0.0.1:${natsPort}`
    const REDIS_URL = `redis://127.0.0.1:${redisPort}`
    env = { ...env, DATABASE_URL, NATS_URL, REDIS_URL }

    const first = await bootstrap("services", env)
    expect(first.code, first.stderr).toBe(0)
    expect(JSON.parse(first.stdout.trim())).toEqual({ DATABASE_URL, NATS_URL, REDIS_URL })
    expect(first.stderr).toContain(`postgres: started project-local server on 127.0.0.1:${pgPort}`)
    expect(first.stderr).toContain(`nats: started project-local server on 127.0.0.1:${natsPort}`)
    expect(first.stderr).toContain(`redis: started project-local server on 127.0.0.1:${redisPort}`)
    expect(await redisPing(redisPort)).toBe("+PONG")

    const sql = postgres({ host: "127.0.0.1", port: pgPort, user: "postgres", database: "postgres", max: 1 })
    try {
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }])
    } finally {
      await sql.end()
    }

    const nc = await connect({ servers: NATS_URL })
    try {
      await nc.flush()
      const account = await (await jetstreamManager(nc)).getAccountInfo()
      expect(account.streams).toBe(0)
    } finally {
      await nc.close()
    }

    const second = await bootstrap("services", env)
    expect(second.code, second.stderr).toBe(0)
    expect(second.stderr).toContain(`postgres: reusing 127.0.0.1:${pgPort}`)
    expect(second.stderr).toContain(`nats: reusing 127.0.0.1:${natsPort}`)
    expect(second.stderr).toContain(`redis: reusing 127.0.0.1:${redisPort}`)

    const stop = await bootstrap("stop", env)
    expect(stop.code, stop.stderr).toBe(0)
    expect(await answers(pgPort)).toBe(false)
    expect(await answers(natsPort)).toBe(false)
    expect(await answers(redisPort)).toBe(false)
  })

  it("reuses the servers that already answer at the default (or inherited) URLs", async ({ skip }) => {
    const inherited: NodeJS.ProcessEnv = { ...process.env, PARTNER_DATA_DIR: dataDir }
    const databaseUrl = inherited.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/partner_service"
    const natsUrl = inherited.NATS_URL ?? "nats://127.0.0.1:4222"
    const redisUrl = inherited.REDIS_URL ?? "redis://127.0.0.1:6379"
    // Plain `vitest` on a machine without these servers has nothing to reuse (`npm test` starts them first).
    if (
      !(await answersAt(databaseUrl, 5432)) ||
      !(await answersAt(natsUrl, 4222)) ||
      !(await answersAt(redisUrl, 6379))
    )
      skip()

    const result = await bootstrap("services", inherited)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toMatch(/^postgres: reusing /m)
    expect(result.stderr).toMatch(/^nats: reusing /m)
    expect(result.stderr).toMatch(/^redis: reusing /m)
    expect(JSON.parse(result.stdout.trim())).toEqual({
      DATABASE_URL: databaseUrl,
      NATS_URL: natsUrl,
      REDIS_URL: redisUrl,
    })
  })
})

/** Redis's answer to an inline PING (its first line). */
const redisPing = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    let buffer = ""
    socket.setTimeout(5000, () => (socket.destroy(), reject(new Error("redis: no answer to PING"))))
    socket.once("error", reject)
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.on("data", (chunk) => {
      buffer += chunk.toString()
      const end = buffer.indexOf("\r\n")
      if (end < 0) return
      socket.destroy()
      resolve(buffer.slice(0, end))
    })
  })

const onPath = (name: string, PATH: string) =>
  PATH.split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, name)))

describe("npm test's set-up", { timeout: TIMEOUT_MS }, () => {
  // Readable by the unprivileged user the refusal runs as.
  const dir = mkdtempSync(path.join(os.tmpdir(), "partner-test-setup-"))
  chmodSync(dir, 0o777)
  const calls = path.join(dir, "apt-get.calls")
  const chromium = path.join(dir, "chromium")
  // apt itself is not ours: a stand-in earlier on PATH records how it was called and installs chromium where the
  // bootstrap looks for it, so the test sees the bootstrap's decision without changing this machine.
  const fakeBin = path.join(dir, "bin")
  const aptGet = path.join(fakeBin, "apt-get")
  const PATH = `${fakeBin}${path.delimiter}${process.env.PATH ?? ""}`
  const env: NodeJS.ProcessEnv = { ...process.env, PATH, CHROMIUM_PATH: chromium, PARTNER_DATA_DIR: dir }
  // The inherited compile cache is not writable by the unprivileged user; apt's front end is the bootstrap's to set.
  delete env.NODE_COMPILE_CACHE
  delete env.DEBIAN_FRONTEND

  beforeAll(() => {
    mkdirSync(fakeBin)
    writeFileSync(
      aptGet,
      [
        "#!/bin/sh",
        `echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >> '${calls}'`,
        `if [ "$1" = install ]; then printf '#!/bin/sh\\n' > "$CHROMIUM_PATH" && chmod +x "$CHROMIUM_PATH"; fi`,
        "",
      ].join("\n"),
    )
    chmodSync(fakeBin, 0o755)
    chmodSync(aptGet, 0o755)
  })
  beforeEach(() => rmSync(calls, { force: true }))
  // A filter that selects no test file: what runs after the set-up is Vitest itself, never the suite again.
  const noTests = ["--passWithNoTests", "test/no-such-directory/"]
  // What the machine lacks, as the bootstrap names it: chromium always (it looks at a path that does not exist).
  const missing = () => {
    const tools = ["chromium", ...["curl", "jq", "python3"].filter((tool) => !onPath(tool, PATH))]
    return {
      tools: tools.join(" "),
      label: `test: ${[`chromium (at ${chromium})`, ...tools.slice(1)].join(", ")}`,
    }
  }

  afterAll(async () => {
    await bootstrap("stop", env)
    rmSync(dir, { recursive: true, force: true })
  }, TIMEOUT_MS)

  it("stops before any test, saying in one line what to install, when chromium is missing and it is not root", async () => {
    // As root, the same run as an unprivileged user (nobody).
    const result = await bootstrap("test", env, {
      args: noTests,
      ...(process.getuid?.() === 0 ? { uid: 65534 } : {}),
    })
    const { tools, label } = missing()
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(`${label}: not installed; run: sudo apt-get install -y ${tools}\n`)
    expect(result.stdout).toBe("")
    expect(existsSync(calls)).toBe(false)
    expect(existsSync(chromium)).toBe(false)
  })

  it("installs Debian's chromium with apt when it is missing and it runs as root, then goes on to the tests", async ({
    skip,
  }) => {
    if (process.getuid?.() !== 0) skip()
    rmSync(chromium, { force: true })
    const { tools, label } = missing()
    const result = await bootstrap("test", env, { args: noTests })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(
      `${label}: not installed, installing Debian package${tools.includes(" ") ? "s" : ""} ${tools}\n`,
    )
    expect(readFileSync(calls, "utf8")).toBe(
      `DEBIAN_FRONTEND= update\nDEBIAN_FRONTEND=noninteractive install -y ${tools}\n`,
    )
    expect(existsSync(chromium)).toBe(true)
    expect(result.stdout).toContain("No test files found")

    // Once it is there, nothing is installed again.
    rmSync(calls)
    const again = await bootstrap("test", env, { args: noTests })
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).not.toContain("installing")
    expect(existsSync(calls)).toBe(false)
  })
})

/** Lines of JSON logs as they arrive; resolves the first one `match` accepts. */
function waitForLog(child: ChildProcess, match: (line: Record<string, unknown>) => boolean) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffered = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split("\n")
      buffered = lines.pop() ?? ""
      for (const line of lines) {
        if (!line.startsWith("{")) continue
        const parsed = JSON.parse(line) as Record<string, unknown>
        if (match(parsed)) resolve(parsed)
      }
    })
    child.once("exit", (code) => reject(new Error(`npm start exited with ${code} before it was ready`)))
  })
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code)),
  )

describe("npm start", { timeout: TIMEOUT_MS }, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "partner-start-"))
  chmodSync(dataDir, 0o777)
  let env: NodeJS.ProcessEnv = { ...process.env, PARTNER_DATA_DIR: dataDir }
  let child: ChildProcess | undefined

  afterAll(async () => {
    child?.kill("SIGKILL")
    await bootstrap("stop", env)
    rmSync(dataDir, { recursive: true, force: true })
  }, TIMEOUT_MS)

  it("brings up its own Postgres and NATS when none answer, serves /readyz on every gateway's port and the console's pages, and stops on SIGTERM", async () => {
    const [pgPort, natsPort] = [await freePort(), await freePort()]
    env = {
      ...env,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/partner_service`,
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      PARTNER_API_PORT: "0",
      INGEST_API_PORT: "0",
      ENROLLMENT_PORT: "0",
      CONSOLE_PORT: "0",
      PORTAL_PORT: "0",
    }
    // What `npm start` runs; spawned directly so the service's own exit code comes back.
    child = spawn(process.execPath, [BOOTSTRAP, "start"], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    })
    const started = await waitForLog(child, (line) => line.message === "started")
    const ports = (started.annotations as { ports: Record<string, number> }).ports
    expect(Object.keys(ports).sort()).toEqual([
      "console",
      "enrollment",
      "ingest-api",
      "partner-api",
      "portal",
    ])
    for (const port of Object.values(ports)) {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ status: "ready", checks: { postgres: "ok", nats: "ok" } })
    }
    // The console's pages were built (when missing or stale) before the service started, and are served.
    const page = await fetch(`http://127.0.0.1:${ports.console}/deliveries`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app"></div>')

    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
    for (const port of Object.values(ports)) expect(await answers(port)).toBe(false)
  })
})
