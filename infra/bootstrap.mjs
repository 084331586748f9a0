// Development/CI entry point: makes sure dependencies (with the pinned Node), PostgreSQL, NATS JetStream and Redis
// (the bench's BullMQ peer runs on it; and, for the tests, chromium, curl and jq) are available, then runs the requested target on the pinned Node. Node builtins only: this runs before node_modules
// exists, on whatever Node the machine has.
//
//   node infra/bootstrap.mjs start|test|bench|cli [args...]   ensure everything, then run the target
//   node infra/bootstrap.mjs faults [args...]                 the fault suite: dependencies and its own servers' binaries
//   node infra/bootstrap.mjs mutation [args...]               mutation testing (StrykerJS, stryker.config.mjs)
//   node infra/bootstrap.mjs install                          install dependencies (npm ci) on the pinned Node
//   node infra/bootstrap.mjs services                         ensure the servers, print their URLs as JSON
//   node infra/bootstrap.mjs stop                             stop the project-local servers of the data folder
import { spawn, spawnSync } from "node:child_process"
import {
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs"
import net from "node:net"
import os from "node:os"
import path from "node:path"
import { clearInterval, setInterval } from "node:timers"
import { setTimeout as sleep } from "node:timers/promises"
import { fileURLToPath, pathToFileURL } from "node:url"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const DATA_DIR = path.resolve(ROOT, process.env.PARTNER_DATA_DIR || ".data")
const PG_DIR = path.join(DATA_DIR, "postgres")
const PG = { root: PG_DIR, data: `${PG_DIR}/data`, sockets: `${PG_DIR}/run`, log: `${PG_DIR}/server.log` }
const NATS_DIR = path.join(DATA_DIR, "nats")
const NATS = { root: NATS_DIR, log: `${NATS_DIR}/nats-server.log`, pidFile: `${NATS_DIR}/nats-server.pid` }
const REDIS_DIR = path.join(DATA_DIR, "redis")
const REDIS = {
  root: REDIS_DIR,
  log: `${REDIS_DIR}/redis-server.log`,
  pidFile: `${REDIS_DIR}/redis-server.pid`,
}

const DATABASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/partner_service"
const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222"
/** The bench's BullMQ peer (and its test) queue on this Redis. */
const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379"
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"])
const WAIT_MS = 60_000
const IS_ROOT = process.getuid?.() === 0
/** The browser the browser tests drive (test/support/Browser.ts reads the same variable). */
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium"

/** The pinned Node (the `node` package in devDependencies) runs every target; TypeScript runs type-stripped. */
const NODE = path.join(ROOT, "node_modules", ".bin", "node")
const TARGETS = {
  start: (args) => ["backend/main.ts", ...args],
  test: (args) => ["node_modules/vitest/vitest.mjs", "run", ...args],
  faults: (args) => ["node_modules/vitest/vitest.mjs", "run", "--config", "vitest.faults.config.ts", ...args],
  mutation: (args) => [
    "node_modules/@stryker-mutator/core/bin/stryker.js",
    "run",
    "stryker.config.mjs",
    ...args,
  ],
  bench: (args) => ["test/bench/main.ts", ...args],
  cli: (args) => ["backend/cli/Cli.ts", ...args],
}
const wantsHelp = (args) =>
  args.length === 0 || args[0] === "help" || args.some((arg) => arg === "--help" || arg === "-h")

/**
 * The service's processes (and the bench, which runs the service in its own process) get a 64 MB young-generation
 * semi-space unless NODE_OPTIONS sets one: the webhook engine and the actors keep many messages in flight, and
 * V8's default (16 MB) scavenges them so often that collection took a quarter of a delivery's CPU time. The
 * systemd unit in infra/deploy passes the same flag.
 */
const SERVICE_HEAP = "--max-semi-space-size=64"
const withServiceHeap = (nodeOptions = "") =>
  nodeOptions.includes("--max-semi-space-size") ? nodeOptions : `${nodeOptions} ${SERVICE_HEAP}`.trim()

class BootstrapError extends Error {}
const say = (line) => console.error(line)
/** The CLI's callers read its output, not the bootstrap's: lines saying nothing was needed are left out for it. */
let quiet = false
const note = (line) => quiet || say(line)
const shortPath = (p) => (p.startsWith(ROOT + path.sep) ? path.relative(ROOT, p) : p)
const shellQuote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { stdio: "inherit", cwd: ROOT, ...options })
  if (result.status !== 0) {
    const output = options.stdio === "pipe" ? `\n${result.stdout ?? ""}${result.stderr ?? ""}`.trimEnd() : ""
    throw new BootstrapError(
      `command failed (${result.error?.message ?? `exit ${result.status}`}): ${cmd} ${args.join(" ")}${output}`,
    )
  }
  return result
}

function findExecutable(name, extraDirs = []) {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter).filter(Boolean), ...extraDirs]
  return dirs.map((dir) => path.join(dir, name)).find((file) => existsSync(file))
}

function endpoint(url, defaultPort) {
  const parsed = new URL(url)
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1")
  const port = Number(parsed.port || defaultPort)
  return { host, port, label: `${host.includes(":") ? `[${host}]` : host}:${port}` }
}

// A database URL may list several hosts (`postgres://u@h1:5432,h2:5433/db`, for failover), which `new URL` refuses.
function databaseEndpoints(url, defaultPort) {
  const authority = url.replace(/^[a-z]+:\/\//i, "").split(/[/?#]/)[0]
  return authority
    .slice(authority.lastIndexOf("@") + 1)
    .split(",")
    .map((entry) => {
      const ipv6 = /^\[(.*)\](?::(\d+))?$/.exec(entry)
      const colon = entry.lastIndexOf(":")
      const host = decodeURIComponent(ipv6 ? ipv6[1] : colon === -1 ? entry : entry.slice(0, colon))
      const port = Number((ipv6 ? ipv6[2] : colon === -1 ? "" : entry.slice(colon + 1)) || defaultPort)
      // A socket directory is no TCP host.
      return {
        host: host.startsWith("/") ? "" : host,
        port,
        label: `${host.includes(":") ? `[${host}]` : host}:${port}`,
      }
    })
}

function probe({ host, port }, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (ok) => (socket.destroy(), resolve(ok))
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })
}

async function waitForPort(target, name, hasDied = () => false) {
  for (const deadline = Date.now() + WAIT_MS; Date.now() < deadline; await sleep(250)) {
    if (hasDied()) throw new BootstrapError(`${name}: server exited during startup`)
    if (await probe(target)) return
  }
  throw new BootstrapError(`${name}: nothing answers at ${target.label} after ${WAIT_MS / 1000} s`)
}

function tail(file, lines = 20) {
  return existsSync(file)
    ? `\n--- last lines of ${file} ---\n${readFileSync(file, "utf8").split("\n").slice(-lines).join("\n")}`
    : ""
}

function isAlive(pid) {
  try {
    return process.kill(pid, 0)
  } catch (error) {
    return error.code === "EPERM"
  }
}

function tryLink(from, to) {
  try {
    linkSync(from, to)
    return true
  } catch (error) {
    if (error.code === "EEXIST") return false
    throw error
  }
}

// Two bootstraps at once (say `npm start` and `npm test`) must not both run initdb or start servers.
// link() is atomic and never replaces, so nobody sees a half-written lock file.
async function withLock(fn) {
  mkdirSync(DATA_DIR, { recursive: true })
  const lock = path.join(DATA_DIR, "bootstrap.lock")
  const mine = `${lock}.${process.pid}`
  writeFileSync(mine, `${process.pid}\n`)
  try {
    for (let waited = 0; !tryLink(mine, lock); waited += 200) {
      const owner = existsSync(lock) ? Number(readFileSync(lock, "utf8")) : 0
      if (!(owner > 0 && isAlive(owner))) rmSync(lock, { force: true })
      else if (waited === 0) say(`bootstrap: waiting for another bootstrap (pid ${owner})`)
      else if (waited > 2 * WAIT_MS) throw new BootstrapError(`bootstrap: ${lock} is held by pid ${owner}`)
      await sleep(200)
    }
  } finally {
    rmSync(mine, { force: true })
  }
  try {
    return await fn()
  } finally {
    rmSync(lock, { force: true })
  }
}

/** The Node version package-lock.json pins (the `node` package), or undefined when it pins none. */
function pinnedNodeVersion() {
  const lock = path.join(ROOT, "package-lock.json")
  if (!existsSync(lock)) return undefined
  return JSON.parse(readFileSync(lock, "utf8")).packages?.["node_modules/node"]?.version
}

/** The version of the `node` package in node_modules, whose install script put the binary at NODE. */
function installedNodeVersion() {
  const manifest = path.join(ROOT, "node_modules", "node", "package.json")
  if (!existsSync(NODE) || !existsSync(manifest)) return undefined
  return JSON.parse(readFileSync(manifest, "utf8")).version
}

/**
 * A directory whose `node` is the pinned version, for running npm itself on it: npm checks every package's
 * `engines` against the Node it runs on, so an install run by an older system Node warns about dependencies
 * that the pinned Node satisfies. The binary comes from the npm registry (`node-<os>-<arch>`, the package the
 * `node` package installs) and is kept in the data folder.
 */
function pinnedRuntimeBin(version) {
  if (process.versions.node === version) return path.dirname(process.execPath)
  const dir = path.join(DATA_DIR, "runtime", `node-v${version}-${process.platform}-${process.arch}`)
  const bin = path.join(dir, "bin")
  if (existsSync(path.join(bin, "node"))) return bin
  say(`runtime: fetching Node ${version} from the npm registry`)
  const staging = `${dir}.${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  const packed = run(
    "npm",
    [
      "pack",
      `node-${process.platform}-${process.arch}@${version}`,
      "--pack-destination",
      staging,
      "--loglevel=warn",
    ],
    {
      stdio: ["ignore", "pipe", "inherit"],
      encoding: "utf8",
    },
  )
  const tarball = path.join(staging, packed.stdout.trim().split("\n").pop())
  run("tar", ["-xzf", tarball, "-C", staging, "--strip-components=1", "package/bin/node"])
  rmSync(tarball, { force: true })
  try {
    renameSync(staging, dir)
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    if (!existsSync(path.join(bin, "node"))) throw error
  }
  return bin
}

function ensureDependencies({ force = false } = {}) {
  const lock = path.join(ROOT, "package-lock.json")
  const installed = path.join(ROOT, "node_modules", ".package-lock.json")
  const hasLock = existsSync(lock)
  const pinned = pinnedNodeVersion()
  // The driver patches in infra/patches are applied by npm's postinstall: a changed patch needs an install too.
  const patches = path.join(ROOT, "infra", "patches")
  const inputs = [
    ...(hasLock ? [lock] : []),
    ...(existsSync(patches) ? readdirSync(patches).map((name) => path.join(patches, name)) : []),
  ]
  const upToDate =
    existsSync(installed) &&
    inputs.every((input) => statSync(installed).mtimeMs >= statSync(input).mtimeMs) &&
    (pinned === undefined || installedNodeVersion() === pinned)
  if (upToDate && !force) return
  const args = [hasLock ? "ci" : "install", "--no-audit", "--no-fund"]
  const env = { ...process.env }
  if (pinned !== undefined) env.PATH = `${pinnedRuntimeBin(pinned)}${path.delimiter}${env.PATH ?? ""}`
  say(`dependencies: running npm ${args.join(" ")}${pinned ? ` on Node ${pinned}` : ""}`)
  run("npm", args, { env })
  if (pinned !== undefined && installedNodeVersion() !== pinned)
    throw new BootstrapError(
      `dependencies: node_modules/.bin/node is not Node ${pinned} after npm ${args[0]} (was the \`node\` package's install script allowed? see allowScripts in package.json)`,
    )
}

/** Installs Debian packages with apt when this runs as root, else stops with one line saying what to install. */
function installPackages(debianPackages, name) {
  const list = debianPackages.join(" ")
  if (!findExecutable("apt-get"))
    throw new BootstrapError(`${name}: not installed; install ${list} with your package manager, then retry`)
  if (!IS_ROOT) throw new BootstrapError(`${name}: not installed; run: sudo apt-get install -y ${list}`)
  say(`${name}: not installed, installing Debian package${debianPackages.length > 1 ? "s" : ""} ${list}`)
  run("apt-get", ["update"])
  run("apt-get", ["install", "-y", ...debianPackages], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  })
}

const installPackage = (debianPackage, name) => installPackages([debianPackage], name)

const TEST_TOOLS = ["curl", "jq", "python3"]

/**
 * What the suite needs from the system besides the two servers: Debian's chromium for the browser tests, curl and
 * jq for the README's quick start, which a test runs as written, and python3, which runs the portal's Python
 * signature snippet against a real delivery. Checked before anything else, so that a machine that lacks them
 * learns it at once rather than from failing tests.
 */
function ensureTestTools() {
  const missing = [
    ...(existsSync(CHROMIUM) ? [] : [{ debian: "chromium", label: `chromium (at ${CHROMIUM})` }]),
    ...TEST_TOOLS.filter((tool) => !findExecutable(tool)).map((tool) => ({ debian: tool, label: tool })),
  ]
  if (missing.length === 0) return
  installPackages(
    missing.map((tool) => tool.debian),
    `test: ${missing.map((tool) => tool.label).join(", ")}`,
  )
  if (!existsSync(CHROMIUM))
    throw new BootstrapError(
      `test: Debian's chromium is installed, but nothing is at ${CHROMIUM}; set CHROMIUM_PATH to its binary`,
    )
  const still = TEST_TOOLS.filter((tool) => !findExecutable(tool))
  if (still.length > 0)
    throw new BootstrapError(`test: installed, but ${still.join(" and ")} not found on PATH`)
}

// Debian keeps initdb/pg_ctl out of PATH, under /usr/lib/postgresql/<version>/bin. PG_BINDIR names the folder.
function findPostgresBin() {
  if (process.env.PG_BINDIR) return hasPostgresBin(process.env.PG_BINDIR) ? process.env.PG_BINDIR : undefined
  const base = "/usr/lib/postgresql"
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+(\.\d+)?$/.test(v)) : []
  versions.sort((a, b) => Number(b) - Number(a))
  const dirs = [
    ...(process.env.PATH ?? "").split(path.delimiter),
    ...versions.map((v) => path.join(base, v, "bin")),
  ]
  return dirs.find((dir) => dir && hasPostgresBin(dir))
}

const hasPostgresBin = (dir) => existsSync(path.join(dir, "pg_ctl")) && existsSync(path.join(dir, "initdb"))

const hasUser = (name) =>
  existsSync("/etc/passwd") &&
  readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .some((line) => line.startsWith(`${name}:`))

/**
 * What the fault suite needs besides the dependencies: Postgres's server binaries and a user other than root to
 * run them (the `postgres` OS user when this runs as root), and nats-server. As root with apt, a missing package
 * is installed (it creates the `postgres` user); otherwise one line says what to install. Returns the env the
 * suite runs with: PG_BINDIR set, nats-server's folder on PATH.
 */
function faultSuitePrerequisites(env) {
  const natsDirs = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"]
  const missing = []
  let pgBin = findPostgresBin()
  if (!pgBin && !process.env.PG_BINDIR && IS_ROOT && findExecutable("apt-get")) {
    installPackage("postgresql", "postgres")
    pgBin = findPostgresBin()
  }
  if (!pgBin)
    missing.push(
      process.env.PG_BINDIR
        ? `initdb and pg_ctl in PG_BINDIR (${process.env.PG_BINDIR})`
        : "PostgreSQL's server binaries initdb and pg_ctl (Debian: apt-get install postgresql; or set PG_BINDIR)",
    )
  if (pgBin && IS_ROOT && !hasUser("postgres"))
    missing.push("a `postgres` OS user to run them (Postgres refuses root), or run the suite as another user")
  let nats = findExecutable("nats-server", natsDirs)
  if (!nats && IS_ROOT && findExecutable("apt-get")) {
    installPackage("nats-server", "nats")
    nats = findExecutable("nats-server", natsDirs)
  }
  if (!nats) missing.push("nats-server (Debian: apt-get install nats-server)")
  if (missing.length > 0)
    throw new BootstrapError(
      `faults: the fault suite runs its own Postgres and NATS and needs ${missing.join("; and ")}${IS_ROOT ? "" : " (as root it installs what is missing and runs Postgres as the postgres user)"}`,
    )
  return { ...env, PG_BINDIR: pgBin, PATH: `${path.dirname(nats)}${path.delimiter}${env.PATH ?? ""}` }
}

// initdb, pg_ctl and postgres refuse to run as root, so as root they run as the `postgres` OS user.
function postgresCommand(cmd, args) {
  if (!IS_ROOT) return [cmd, args]
  if (findExecutable("runuser", ["/usr/sbin", "/sbin"]))
    return ["runuser", ["-u", "postgres", "--", cmd, ...args]]
  return ["su", ["postgres", "-s", "/bin/sh", "-c", [cmd, ...args].map(shellQuote).join(" ")]]
}

const asPostgres = (cmd, args, options = {}) =>
  run(...postgresCommand(cmd, args), { stdio: "pipe", encoding: "utf8", cwd: PG.root, ...options })
const succeedsAsPostgres = (cmd, args) =>
  spawnSync(...postgresCommand(cmd, args), { stdio: "ignore", cwd: PG.root }).status === 0

function preparePostgresDir(bin) {
  mkdirSync(PG.sockets, { recursive: true })
  if (IS_ROOT) {
    run("chown", ["-R", "postgres:postgres", PG.root])
    if (!succeedsAsPostgres("test", ["-w", PG.root]))
      throw new BootstrapError(
        `postgres: the postgres OS user cannot write ${PG.root} (check the permissions of its parent directories, or set PARTNER_DATA_DIR)`,
      )
  }
  if (!existsSync(path.join(PG.data, "PG_VERSION"))) {
    say(`postgres: initializing ${shortPath(PG.data)}`)
    asPostgres(path.join(bin, "initdb"), ["-D", PG.data, "-A", "trust", "-U", "postgres", "-E", "UTF8"])
  }
}

async function ensurePostgres() {
  const targets = databaseEndpoints(DATABASE_URL, 5432)
  for (const answering of targets) {
    if (answering.host && (await probe(answering))) return note(`postgres: reusing ${answering.label}`)
  }
  const target = targets[0]
  if (!target.host) return say("postgres: DATABASE_URL has no TCP host; using it as given")
  if (targets.length > 1)
    throw new BootstrapError(
      `postgres: none of DATABASE_URL's hosts answers (${targets.map((t) => t.label).join(", ")}); only a URL of one loopback host can be started locally.`,
    )
  if (!LOOPBACK.has(target.host))
    throw new BootstrapError(
      `postgres: nothing answers at ${target.label}; only a loopback host (127.0.0.1, localhost, ::1) can be started locally. Check DATABASE_URL.`,
    )

  let bin = findPostgresBin()
  if (!bin) {
    installPackage("postgresql", "postgres")
    // Debian's package creates and may start its own cluster; it serves us only if it is our URL.
    if (await probe(target)) return note(`postgres: reusing ${target.label}`)
    bin = findPostgresBin()
    if (!bin)
      throw new BootstrapError(
        "postgres: installed, but initdb/pg_ctl were not found under /usr/lib/postgresql/*/bin",
      )
  }
  preparePostgresDir(bin)
  // Settings go on the command line so the current DATABASE_URL always wins over an older one.
  const settings = `-c listen_addresses=${shellQuote(target.host)} -c port=${target.port} -c unix_socket_directories=${shellQuote(PG.sockets)}`
  try {
    const pgCtl = path.join(bin, "pg_ctl")
    asPostgres(pgCtl, ["start", "-w", "-t", "60", "-D", PG.data, "-l", PG.log, "-o", settings])
    await waitForPort(target, "postgres")
  } catch (error) {
    if (await probe(target)) return say(`postgres: reusing ${target.label} (started concurrently)`)
    throw new BootstrapError(`${error.message}${tail(PG.log)}`)
  }
  say(`postgres: started project-local server on ${target.label} (data: ${shortPath(PG.root)})`)
}

function readNatsInfo(target) {
  return new Promise((resolve) => {
    let buffer = ""
    const socket = net.connect({ host: target.host, port: target.port })
    const done = (info) => (socket.destroy(), resolve(info))
    socket.setTimeout(2000, () => done(null))
    socket.on("error", () => done(null))
    socket.on("close", () => done(null))
    socket.on("data", (chunk) => {
      buffer += chunk
      const line = buffer.split("\r\n", 2)
      if (line.length < 2) return
      try {
        done(line[0].startsWith("INFO ") ? JSON.parse(line[0].slice(5)) : null)
      } catch {
        done(null)
      }
    })
  })
}

function natsPid() {
  const pid = existsSync(NATS.pidFile) ? Number(readFileSync(NATS.pidFile, "utf8").trim()) : 0
  return Number.isInteger(pid) && pid > 0 ? pid : 0
}

// A killed server can linger as a zombie when PID 1 does not reap orphans; that counts as gone.
function isOurNatsAlive(pid) {
  if (!isAlive(pid)) return false
  if (!existsSync(`/proc/${pid}`)) return true
  const state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0]
  return state !== "Z" && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(NATS.root)
}

async function ensureNats() {
  const target = endpoint(NATS_URL, 4222)
  if (await probe(target)) {
    const info = await readNatsInfo(target)
    // nats-server only lists "jetstream" in INFO when it is enabled; the account may still have it.
    const warning = !info
      ? " (warning: no NATS INFO greeting)"
      : info.jetstream
        ? ""
        : " (warning: the server does not advertise JetStream)"
    return (warning ? say : note)(`nats: reusing ${target.label}${warning}`)
  }
  if (!LOOPBACK.has(target.host))
    throw new BootstrapError(
      `nats: nothing answers at ${target.label}; only a loopback host (127.0.0.1, localhost, ::1) can be started locally. Check NATS_URL.`,
    )
  const running = natsPid()
  if (running && isOurNatsAlive(running))
    throw new BootstrapError(
      `nats: the project-local server (pid ${running}) runs on another address; run \`node infra/bootstrap.mjs stop\` first`,
    )

  const extraDirs = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"]
  if (!findExecutable("nats-server", extraDirs)) installPackage("nats-server", "nats")
  const bin = findExecutable("nats-server", extraDirs)
  if (!bin) throw new BootstrapError("nats: installed, but nats-server was not found")

  mkdirSync(NATS.root, { recursive: true })
  const log = openSync(NATS.log, "a")
  const child = spawn(bin, ["-a", target.host, "-p", String(target.port), "-js", "-sd", NATS.root], {
    detached: true,
    stdio: ["ignore", log, log],
  })
  let died = false
  child.on("exit", () => (died = true))
  child.on("error", () => (died = true))
  writeFileSync(NATS.pidFile, `${child.pid}\n`)
  child.unref()
  try {
    await waitForPort(target, "nats", () => died)
  } catch (error) {
    if (await probe(target)) return say(`nats: reusing ${target.label} (started concurrently)`)
    throw new BootstrapError(`${error.message}${tail(NATS.log)}`)
  }
  say(`nats: started project-local server on ${target.label} (data: ${shortPath(NATS.root)})`)
}

function stopPostgres() {
  const bin = findPostgresBin()
  const running =
    bin &&
    existsSync(path.join(PG.data, "postmaster.pid")) &&
    succeedsAsPostgres(path.join(bin, "pg_ctl"), ["status", "-D", PG.data])
  if (!running) return say(`postgres: no project-local server running (data: ${shortPath(PG.root)})`)
  asPostgres(path.join(bin, "pg_ctl"), ["stop", "-D", PG.data, "-m", "fast", "-w", "-t", "60"])
  say(`postgres: stopped project-local server (data: ${shortPath(PG.root)})`)
}

async function stopNats() {
  const pid = natsPid()
  if (!pid || !isOurNatsAlive(pid)) {
    rmSync(NATS.pidFile, { force: true })
    return say(`nats: no project-local server running (data: ${shortPath(NATS.root)})`)
  }
  process.kill(pid, "SIGTERM")
  for (const deadline = Date.now() + 15_000; isOurNatsAlive(pid) && Date.now() < deadline;) await sleep(100)
  if (isOurNatsAlive(pid)) process.kill(pid, "SIGKILL")
  rmSync(NATS.pidFile, { force: true })
  say(`nats: stopped project-local server (pid ${pid})`)
}

function redisPid() {
  const pid = existsSync(REDIS.pidFile) ? Number(readFileSync(REDIS.pidFile, "utf8").trim()) : 0
  return Number.isInteger(pid) && pid > 0 ? pid : 0
}

// As for nats-server: a zombie counts as gone, and only a server working in our data folder is ours (redis-server
// rewrites its command line to its address, so its working directory, `--dir`, tells).
function isOurRedisAlive(pid) {
  if (!isAlive(pid)) return false
  if (!existsSync(`/proc/${pid}`)) return true
  const state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0]
  let cwd = ""
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`)
  } catch {
    // Not ours to read: not ours.
  }
  return state !== "Z" && cwd === REDIS.root
}

async function ensureRedis() {
  const target = endpoint(REDIS_URL, 6379)
  if (await probe(target)) return note(`redis: reusing ${target.label}`)
  if (!LOOPBACK.has(target.host))
    throw new BootstrapError(
      `redis: nothing answers at ${target.label}; only a loopback host (127.0.0.1, localhost, ::1) can be started locally. Check REDIS_URL.`,
    )
  const running = redisPid()
  if (running && isOurRedisAlive(running))
    throw new BootstrapError(
      `redis: the project-local server (pid ${running}) runs on another address; run \`node infra/bootstrap.mjs stop\` first`,
    )

  const extraDirs = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"]
  if (!findExecutable("redis-server", extraDirs)) installPackage("redis-server", "redis")
  const bin = findExecutable("redis-server", extraDirs)
  if (!bin) throw new BootstrapError("redis: installed, but redis-server was not found")

  mkdirSync(REDIS.root, { recursive: true })
  const log = openSync(REDIS.log, "a")
  // In the foreground (no daemonize), without snapshots or an append-only file: the bench's queues are scratch.
  const child = spawn(
    bin,
    [
      "--bind",
      target.host,
      "--port",
      String(target.port),
      "--dir",
      REDIS.root,
      "--save",
      "",
      "--appendonly",
      "no",
      "--protected-mode",
      "no",
    ],
    { detached: true, stdio: ["ignore", log, log] },
  )
  let died = false
  child.on("exit", () => (died = true))
  child.on("error", () => (died = true))
  writeFileSync(REDIS.pidFile, `${child.pid}\n`)
  child.unref()
  try {
    await waitForPort(target, "redis", () => died)
  } catch (error) {
    if (await probe(target)) return say(`redis: reusing ${target.label} (started concurrently)`)
    throw new BootstrapError(`${error.message}${tail(REDIS.log)}`)
  }
  say(`redis: started project-local server on ${target.label} (data: ${shortPath(REDIS.root)})`)
}

async function stopRedis() {
  const pid = redisPid()
  if (!pid || !isOurRedisAlive(pid)) {
    rmSync(REDIS.pidFile, { force: true })
    return say(`redis: no project-local server running (data: ${shortPath(REDIS.root)})`)
  }
  process.kill(pid, "SIGTERM")
  for (const deadline = Date.now() + 15_000; isOurRedisAlive(pid) && Date.now() < deadline;) await sleep(100)
  if (isOurRedisAlive(pid)) process.kill(pid, "SIGKILL")
  rmSync(REDIS.pidFile, { force: true })
  say(`redis: stopped project-local server (pid ${pid})`)
}

/**
 * Runs the target as the one child of this process and passes SIGINT/SIGTERM on to it, so a signal to npm (which
 * forwards it here), to this process or to the target itself stops the whole tree; this process then exits with
 * the target's status.
 */
function runTarget(args, env) {
  return new Promise((resolve) => {
    const child = spawn(NODE, args, { stdio: "inherit", cwd: ROOT, env })
    stopTarget = (signal) => child.kill(signal)
    // Whoever started us (npm) is gone if we were handed to another parent: nobody is left to stop the target.
    const parent = process.ppid
    const orphaned = setInterval(() => process.ppid !== parent && stopTarget("SIGTERM"), 1000).unref()
    child.on("exit", () => clearInterval(orphaned))
    child.on("error", (error) => (say(`bootstrap: cannot run ${NODE}: ${error.message}`), resolve(127)))
    child.on("exit", (code, signal) =>
      resolve(signal ? 128 + (os.constants.signals[signal] ?? 0) : (code ?? 1)),
    )
  })
}

/**
 * The operator console is built (Vite, on the pinned Node) when dist/console is missing or older than console/:
 * the console role serves it and the browser tests drive it.
 */
async function ensureConsoleBuilt(env) {
  if (!existsSync(path.join(ROOT, "console", "build.mjs"))) return
  const code = await runTarget(["console/build.mjs", "--if-stale"], env)
  stopTarget = undefined
  if (code !== 0) throw new BootstrapError(`console: the build failed (exit ${code})`)
}

/**
 * Set once the target runs; until then a signal ends the bootstrap itself (its servers are meant to outlive it).
 * Only the first signal is passed on: ctrl-C reaches the target directly and this process twice (from the
 * terminal and from npm), and a second copy arriving while the target exits would kill it mid-exit.
 */
let stopTarget
let signalled = false
const onSignal = (signal) => {
  if (!stopTarget) process.exit(128 + (os.constants.signals[signal] ?? 0))
  if (signalled) return
  signalled = true
  stopTarget(signal)
}

/** Redis only for the targets that use it: the bench's BullMQ peer and the test that runs it. */
const USES_REDIS = new Set(["test", "bench", "services"])

async function ensureServices(command) {
  await ensurePostgres()
  await ensureNats()
  if (USES_REDIS.has(command)) await ensureRedis()
}

async function stopServices() {
  stopPostgres()
  await stopNats()
  await stopRedis()
}

export async function main([command, ...args]) {
  process.on("SIGINT", onSignal).on("SIGTERM", onSignal)
  if (command === "stop") {
    await (existsSync(DATA_DIR) ? withLock(stopServices) : stopServices())
    return 0
  }
  if (command === "install") {
    ensureDependencies({ force: args.includes("--force") })
    return 0
  }
  if (command !== "services" && !TARGETS[command]) {
    say(
      "usage: node infra/bootstrap.mjs start|test|faults|mutation|bench|cli|install|services|stop [args...]",
    )
    return 2
  }
  quiet = command === "cli"
  if (command === "test") ensureTestTools()
  if (command !== "services") ensureDependencies()
  if (command === "faults") {
    // The fault suite starts servers of its own and never touches DATABASE_URL's or NATS_URL's.
    const env = faultSuitePrerequisites({ ...process.env })
    env.NODE_COMPILE_CACHE ||= path.join(DATA_DIR, "compile-cache")
    return runTarget(TARGETS.faults(args), env)
  }
  if (!(command === "cli" && wantsHelp(args))) await withLock(() => ensureServices(command))
  const env = { ...process.env, DATABASE_URL, NATS_URL, REDIS_URL }
  if (command === "start" || command === "bench") env.NODE_OPTIONS = withServiceHeap(env.NODE_OPTIONS)
  // Node keeps the code it compiled (type-stripped TypeScript included) here, so later starts skip compiling.
  env.NODE_COMPILE_CACHE ||= path.join(DATA_DIR, "compile-cache")
  if (command === "services") {
    console.log(JSON.stringify({ DATABASE_URL, NATS_URL, REDIS_URL }))
    return 0
  }
  if (command === "start" || command === "test") await ensureConsoleBuilt(env)
  return runTarget(TARGETS[command](args), env)
}

/** Runs `main` as the process: its status becomes the exit code; a failure is reported on stderr. */
export function runAsProcess(argv) {
  // Should the event loop ever drain before main settles, that is a bug, not a success.
  process.exitCode = 70
  main(argv).then(
    (code) => process.exit(code),
    (error) => {
      say(error instanceof BootstrapError ? error.message : `bootstrap: ${error.stack ?? error}`)
      process.exit(1)
    },
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) runAsProcess(process.argv.slice(2))
