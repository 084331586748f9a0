import { randomBytes, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { rootCertificates } from "node:tls"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withDatabase, databaseUrl } from "../../backend/platform/DatabaseUrl.ts"
import { verifySignature } from "../../backend/webhooks/delivery/Signer.ts"
import { type Receiver, startReceiver, testCa } from "../support/Receiver.ts"
import { adminConnection, createFromTemplate } from "../support/TemplateDatabase.ts"
import { baseDatabaseUrl, natsUrl } from "../support/TestPlatform.ts"
import { bullPeer, floor, type PeerEvent } from "./Peers.ts"

/**
 * The bench's BullMQ peer and floor (test/bench/Peers.ts) on a few deliveries to a real HTTPS receiver: each
 * delivers every one signed with the engine's headers and writes its delivery and attempt rows.
 */
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const secret = `whsec_${randomBytes(32).toString("base64")}`
const COUNT = 12

describe("the bench's peers", () => {
  const id = randomBytes(5).toString("hex")
  const url = withDatabase(databaseUrl(baseDatabaseUrl), `ps_test_${id}`)
  let receiver: Receiver
  let scope: Scope.Closeable

  beforeAll(async () => {
    await createFromTemplate(url)
    scope = Effect.runSync(Scope.make())
    receiver = await Effect.runPromise(Scope.provide(startReceiver, scope))
  })

  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    const sql = adminConnection(url)
    await sql`drop database if exists ${sql(databaseUrl(url).database)} with (force)`
    await sql.end()
  })

  const events = (tag: string): Array<PeerEvent> =>
    Array.from({ length: COUNT }, (_, i) => ({
      event: "move_out.initiated",
      eventId: randomUUID(),
      ownerSlug: "peer-owner",
      endpointId: i % 3,
      payload: JSON.stringify({ type: "move_out.initiated", data: { external_id: `${tag}-${i}` } }),
    }))

  const options = (tables: string, path: string) => ({
    databaseUrl: url,
    url: receiver.url(path),
    secret,
    ca: [...rootCertificates, readFileSync(testCa().caFile, "utf8")],
    tables,
  })

  const check = async (
    sql: import("postgres").Sql,
    tables: string,
    path: string,
    sent: ReadonlyArray<PeerEvent>,
  ) => {
    const received = receiver.received().filter((r) => r.path.startsWith(`${path}/e`))
    expect(received).toHaveLength(COUNT)
    for (const request of received) {
      expect(request.headers["content-type"]).toBe("application/json")
      expect(request.headers["x-webhook-event"]).toBe("move_out.initiated")
      expect(request.headers["x-webhook-timestamp"]).toMatch(/^\d+$/)
      expect(verifySignature(request.headers["x-webhook-signature"]!, request.body, [secret])).toBe(true)
    }
    expect(received.map((r) => r.body.toString()).sort()).toEqual(sent.map((e) => e.payload).sort())
    const rows = await sql<Array<{ id: string; status: string; attempt_number: number; attempts: number }>>`
      select d.id, d.status, d.attempt_number, d.delivered_at is not null as done,
             (select count(*)::int from ${sql(`${tables}_attempts`)} a
              where a.delivery_id = d.id and a.status_code = 200 and a.attempt_number = 1) as attempts
      from ${sql(`${tables}_deliveries`)} d`
    expect(rows).toHaveLength(COUNT)
    for (const row of rows) expect(row).toMatchObject({ status: "delivered", attempt_number: 1, attempts: 1 })
    expect(new Set(received.map((r) => r.headers["x-webhook-delivery"]))).toEqual(
      new Set(rows.map((r) => String(r.id))),
    )
  }

  const until = async (check: () => Promise<boolean>) => {
    for (const deadline = Date.now() + 30_000; !(await check());) {
      if (Date.now() > deadline) throw new Error("timed out")
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  it("the BullMQ peer delivers each job signed and writes its delivery and attempt rows", async () => {
    const peer = await bullPeer({ ...options("peer_bull", "/bull"), redisUrl })
    try {
      const sent = events("bull")
      await peer.enqueue(sent)
      await peer.start(4)
      await until(async () => (await peer.delivered()) === COUNT)
      await check(peer.sql, "peer_bull", "/bull", sent)
    } finally {
      await peer.close()
    }
  })

  /** One delivery whose first attempt is answered 500: retried after the engine's backoff, both attempts recorded. */
  const retried = async (sql: import("postgres").Sql, tables: string) => {
    const attempts = await sql<
      Array<{ attempt_number: number; status_code: number; failure_reason: string | null }>
    >`
      select attempt_number, status_code, failure_reason from ${sql(`${tables}_attempts`)} order by attempt_number`
    expect(attempts).toEqual([
      { attempt_number: 1, status_code: 500, failure_reason: "HTTP 500" },
      { attempt_number: 2, status_code: 200, failure_reason: null },
    ])
    const [row] = await sql<Array<{ status: string; attempt_number: number }>>`
      select status, attempt_number from ${sql(`${tables}_deliveries`)}`
    expect(row).toEqual({ status: "delivered", attempt_number: 2 })
  }
  const once500 = (path: string) =>
    receiver.respond(`${path}/e0`, (_, index) => (index === 0 ? { status: 500 } : { status: 200 }))

  it("the BullMQ peer retries a failed attempt with the engine's backoff and records both attempts", async () => {
    once500("/bullretry")
    const peer = await bullPeer({ ...options("peer_bull", "/bullretry"), redisUrl, backoffUnitMs: 5 })
    try {
      await peer.enqueue(events("bullretry").slice(0, 1))
      await peer.start(1)
      await until(async () => (await peer.delivered()) === 1)
      await retried(peer.sql, "peer_bull")
    } finally {
      await peer.close()
    }
  })

  it("the floor retries a failed attempt with the engine's backoff and records both attempts", async () => {
    once500("/floorretry")
    const bare = await floor({
      ...options("peer_floor", "/floorretry"),
      natsUrl,
      prefix: `t${id}r`,
      backoffUnitMs: 5,
    })
    try {
      await bare.enqueue(events("floorretry").slice(0, 1))
      await bare.start(1)
      await until(async () => (await bare.delivered()) === 1 && bare.acked() === 1)
      await retried(bare.sql, "peer_floor")
    } finally {
      await bare.close()
    }
  })

  it("the floor delivers each attempt message signed, acknowledges it and writes the claim, outcome and attempt rows", async () => {
    const bare = await floor({ ...options("peer_floor", "/floor"), natsUrl, prefix: `t${id}` })
    try {
      const sent = events("floor")
      await bare.enqueue(sent)
      await bare.start(8)
      await until(async () => (await bare.delivered()) === COUNT && bare.acked() === COUNT)
      await check(bare.sql, "peer_floor", "/floor", sent)
      const [claims] = await bare.sql<Array<{ n: number }>>`
        select count(*)::int as n from peer_floor_deliveries
        where claimed_by is not null and last_attempted_at is not null and lease_until is null`
      expect(claims!.n).toBe(COUNT)
    } finally {
      await bare.close()
    }
  })
})
