import { execFile, execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import postgres from "postgres"
import { freePort } from "./Net.ts"

/**
 * A PostgreSQL server of the test's own, for fault tests that stop and restart it: `initdb` and `pg_ctl` on a
 * free loopback port, its data and socket in a temporary folder. Postgres refuses to run as root, so as root
 * its commands run as the `postgres` OS user (`runuser`). `infra/bootstrap.mjs faults` checks all of this before
 * the suite starts and says what is missing.
 */

const isRoot = process.getuid?.() === 0

/** Where initdb and pg_ctl are: PG_BINDIR, else `pg_config --bindir`, else Debian's newest version folder. */
export const postgresBinDir = () => {
  const has = (dir: string) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR
  try {
    const dir = execFileSync("pg_config", ["--bindir"], { encoding: "utf8", stdio: "pipe" }).trim()
    if (has(dir)) return dir
  } catch {
    // No pg_config on PATH: look where Debian puts the server binaries.
  }
  const base = "/usr/lib/postgresql"
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+$/.test(v)) : []
  const found = versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(base, v, "bin"))
    .find(has)
  return found ?? "/usr/lib/postgresql/bin"
}

const postgresUser = () => {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return { uid: Number(uid), gid: Number(gid) }
}

/** A server binary; one beside the real `pg_ctl` when the bin folder holds only links to some (pg_basebackup). */
const serverBinary = (command: string) => {
  const file = join(postgresBinDir(), command)
  return existsSync(file) ? file : join(dirname(realpathSync(join(postgresBinDir(), "pg_ctl"))), command)
}

/** Runs a Postgres binary (as the `postgres` user when this is root); its output when it fails. */
const runPg = (dir: string, command: string, args: ReadonlyArray<string>) =>
  Effect.callback<void>((resume) => {
    const bin = serverBinary(command)
    const [file, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, [...args]]
    execFile(file, argv, { cwd: dir, timeout: 120_000 }, (error, stdout, stderr) =>
      resume(
        error
          ? Effect.die(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stdout}${stderr}`))
          : Effect.void,
      ),
    )
  })

export type StopMode = "fast" | "immediate"

export interface PrivatePostgres {
  readonly port: number
  /** A URL of `database` on this server (user postgres, trust). */
  readonly url: (database: string) => string
  /** `pg_ctl stop -m mode`: a fast stop ends sessions cleanly, an immediate one as a crash would. */
  readonly stop: (mode: StopMode) => Effect.Effect<void>
  /** Starts it again on the same port and data, once it accepts connections. */
  readonly start: Effect.Effect<void>
  /** Starts it unless it runs: what a case that failed during an outage leaves for the next. */
  readonly ensureRunning: Effect.Effect<void>
}

/** A fresh server on a free port, started; stopped (immediately) and removed with the scope. */
export const privatePostgres = Effect.acquireRelease(
  Effect.gen(function* () {
    const dir = mkdtempSync(join(tmpdir(), "faults-postgres-"))
    if (isRoot) {
      const { uid, gid } = postgresUser()
      chownSync(dir, uid, gid)
    }
    const port = yield* Effect.promise(freePort)
    const data = join(dir, "data")
    yield* runPg(dir, "initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
    const settings = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      // Two service processes, each with its pool, partition leases and listeners, and the test's own.
      "-c max_connections=200",
      // Nothing here outlives the test; a stop still loses no committed row (only an OS crash would).
      "-c fsync=off",
    ].join(" ")
    let running = false
    const start = runPg(dir, "pg_ctl", [
      "start",
      "-w",
      "-t",
      "60",
      "-D",
      data,
      "-l",
      join(dir, "server.log"),
      "-o",
      settings,
    ]).pipe(Effect.andThen(Effect.sync(() => void (running = true))))
    yield* start
    const server: PrivatePostgres = {
      port,
      url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
      stop: (mode) =>
        Effect.sync(() => void (running = false)).pipe(
          Effect.andThen(runPg(dir, "pg_ctl", ["stop", "-w", "-t", "60", "-D", data, "-m", mode])),
        ),
      start,
      ensureRunning: Effect.suspend(() => (running ? Effect.void : start)),
    }
    return { dir, data, server }
  }),
  ({ dir, data }) =>
    runPg(dir, "pg_ctl", ["stop", "-w", "-t", "30", "-D", data, "-m", "immediate"]).pipe(
      Effect.catchDefect(() => Effect.void),
      Effect.andThen(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
    ),
).pipe(Effect.map(({ server }) => server))

/** A primary with a streaming standby, as a managed Postgres runs them; the service is given both hosts. */
export interface ReplicatedPostgres extends PrivatePostgres {
  readonly primaryPort: number
  readonly standbyPort: number
  /** `kill -9` of the primary's postmaster: a crash of its machine, as far as clients see it. */
  readonly killPrimary: Effect.Effect<void>
  /** `pg_ctl promote` of the standby, once it accepts writes. */
  readonly promoteStandby: Effect.Effect<void>
}

const server = (dir: string, data: string, port: number) =>
  runPg(dir, "pg_ctl", [
    "start",
    "-w",
    "-t",
    "60",
    "-D",
    data,
    "-l",
    join(dir, `server-${port}.log`),
    "-o",
    [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c max_connections=200",
      "-c fsync=off",
    ].join(" "),
  ])

/**
 * A primary and a standby made with `pg_basebackup -R`, streaming; with `synchronous`, every commit waits for the
 * standby (`synchronous_standby_names`). `url` lists both, primary first, with `target_session_attrs=primary`.
 */
export const replicatedPostgres = (options: { readonly synchronous: boolean }) =>
  Effect.gen(function* () {
    const dir = mkdtempSync(join(tmpdir(), "faults-postgres-pair-"))
    if (isRoot) {
      const { uid, gid } = postgresUser()
      chownSync(dir, uid, gid)
    }
    const primaryPort = yield* Effect.promise(freePort)
    const standbyPort = yield* Effect.promise(freePort)
    const primaryData = join(dir, "primary")
    const standbyData = join(dir, "standby")
    // Registered first, so a set-up that fails halfway leaves no server running either.
    yield* Effect.addFinalizer(() =>
      Effect.forEach([primaryData, standbyData], (data) =>
        runPg(dir, "pg_ctl", ["stop", "-w", "-t", "30", "-D", data, "-m", "immediate"]).pipe(
          Effect.catchDefect(() => Effect.void),
        ),
      ).pipe(Effect.andThen(Effect.sync(() => rmSync(dir, { recursive: true, force: true })))),
    )
    yield* runPg(dir, "initdb", [
      "-D",
      primaryData,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--no-sync",
    ])
    yield* server(dir, primaryData, primaryPort)
    const basebackup = ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-D", standbyData]
    yield* runPg(dir, "pg_basebackup", [...basebackup, "-R", "-X", "stream", "--no-sync"])
    yield* server(dir, standbyData, standbyPort)
    const sql = postgres(`postgres://postgres@127.0.0.1:${primaryPort}/postgres`, {
      max: 1,
      onnotice: () => undefined,
    })
    yield* Effect.promise(async () => {
      try {
        while ((await sql`select 1 from pg_stat_replication where state = 'streaming'`).length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        if (options.synchronous) {
          await sql`alter system set synchronous_standby_names = '*'`
          await sql`select pg_reload_conf()`
        }
      } finally {
        await sql.end()
      }
    })
    const pair: ReplicatedPostgres = {
      port: primaryPort,
      primaryPort,
      standbyPort,
      url: (database) =>
        `postgres://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/${database}?target_session_attrs=primary`,
      killPrimary: Effect.sync(() => {
        const pid = Number(readFileSync(join(primaryData, "postmaster.pid"), "utf8").split("\n")[0])
        process.kill(pid, "SIGKILL")
      }),
      promoteStandby: runPg(dir, "pg_ctl", ["promote", "-w", "-t", "60", "-D", standbyData]),
      // The pair is not stopped and started as one server: a failover case ends on the promoted standby.
      stop: () => Effect.void,
      start: Effect.void,
      ensureRunning: Effect.void,
    }
    return pair
  })

/** A replicated pair that can fail over again: after a promote, the dead server comes back as the new standby. */
export interface FailoverPair extends ReplicatedPostgres {
  /**
   * A new standby of the server promoted last, made with `pg_basebackup -R` in a new folder and started on the
   * dead primary's port (so the service's URL lists the pair as before), streaming; with `synchronous`, every
   * commit waits for it again. The two servers have then swapped roles: `primaryPort` and `standbyPort` say which is which.
   */
  readonly rebuildStandby: Effect.Effect<void>
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** `run` on the server at `port`, on a connection of its own. */
const askServer = <A>(port: number, run: (sql: postgres.Sql) => Promise<A>) =>
  Effect.promise(async () => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, {
      max: 1,
      onnotice: () => undefined,
    })
    try {
      return await run(sql)
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

/**
 * `replicatedPostgres` that fails over as often as a case asks: `killPrimary` and `promoteStandby` act on the
 * servers' roles now, and `rebuildStandby` makes the dead one a standby of the promoted one. Every server runs in
 * the pair's temporary folder: stopped by this one's finalizer, removed with the folder by the pair's.
 */
export const failoverPair = (options: { readonly synchronous: boolean }) =>
  Effect.gen(function* () {
    const pair = yield* replicatedPostgres(options)
    const dataOf = (port: number) =>
      askServer(
        port,
        (sql) => sql<Array<{ dir: string }>>`select current_setting('data_directory') as dir`,
      ).pipe(Effect.map(([row]) => row!.dir))
    const servers = { primary: pair.primaryPort, standby: pair.standbyPort }
    const data = new Map([
      [pair.primaryPort, yield* dataOf(pair.primaryPort)],
      [pair.standbyPort, yield* dataOf(pair.standbyPort)],
    ])
    const folder = (port: number) => data.get(port)!
    const dir = dirname(folder(pair.primaryPort))
    let copies = 0
    // Runs before the pair's own finalizer, which knows only the servers' first folders.
    yield* Effect.addFinalizer(() =>
      Effect.forEach([...data.values()], (folder) =>
        runPg(dir, "pg_ctl", ["stop", "-w", "-t", "30", "-D", folder, "-m", "immediate"]).pipe(
          Effect.catchDefect(() => Effect.void),
        ),
      ),
    )
    /** Waits until the primary streams to a standby, and (synchronous) counts it as its synchronous one. */
    const streaming = (primary: number) =>
      askServer(primary, async (sql) => {
        const state = options.synchronous ? "sync" : "async"
        while (
          (await sql`select 1 from pg_stat_replication where state = 'streaming' and sync_state = ${state}`)
            .length === 0
        ) {
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })
    const failover: FailoverPair = {
      get port() {
        return servers.primary
      },
      get primaryPort() {
        return servers.primary
      },
      get standbyPort() {
        return servers.standby
      },
      url: pair.url,
      // The dead postmaster's pid file goes with it: no stop at the end may signal a process that took its pid.
      killPrimary: Effect.promise(async () => {
        const pidFile = join(folder(servers.primary), "postmaster.pid")
        const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0])
        process.kill(pid, "SIGKILL")
        // A zombie still answers signal 0 until its new parent reaps it: a few seconds at most.
        for (let tries = 0; alive(pid) && tries < 250; tries++)
          await new Promise((resolve) => setTimeout(resolve, 20))
        rmSync(pidFile, { force: true })
      }),
      promoteStandby: Effect.gen(function* () {
        yield* runPg(dir, "pg_ctl", ["promote", "-w", "-t", "60", "-D", folder(servers.standby)])
        const dead = servers.primary
        servers.primary = servers.standby
        servers.standby = dead
      }),
      rebuildStandby: Effect.gen(function* () {
        const primary = servers.primary
        const standby = servers.standby
        // A folder of its own: the dead postmaster's children may still be exiting in the old one.
        const target = join(dir, `standby-${standby}-${++copies}`)
        const basebackup = ["-h", "127.0.0.1", "-p", String(primary), "-U", "postgres", "-D", target]
        // A fast checkpoint: a spread one, after the load, would take minutes to begin the copy.
        yield* runPg(dir, "pg_basebackup", [...basebackup, "-R", "-X", "stream", "-c", "fast", "--no-sync"])
        const dead = folder(standby)
        data.set(standby, target)
        yield* server(dir, target, standby)
        yield* Effect.sync(() => rmSync(dead, { recursive: true, force: true }))
        if (options.synchronous) {
          yield* askServer(primary, async (sql) => {
            await sql`alter system set synchronous_standby_names = '*'`
            await sql`select pg_reload_conf()`
          })
        }
        yield* streaming(primary)
      }),
      stop: pair.stop,
      start: pair.start,
      ensureRunning: pair.ensureRunning,
    }
    return failover
  })
