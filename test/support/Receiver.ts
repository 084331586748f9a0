import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import type { AddressInfo, Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"

/**
 * A webhook receiver for tests: HTTPS on 127.0.0.1 with a certificate from a CA made for tests (`openssl`, EC
 * P-256, once per machine in the temporary folder), which the service trusts through `WEBHOOK_EXTRA_CA_FILE`. It records every request's
 * raw body, headers and arrival time, and answers as each path is told to, or never (a receiver that accepts and
 * hangs). It counts the requests open on each path and the connections open to it, now and at most.
 */

export interface TestCa {
  readonly caFile: string
  readonly key: string
  readonly cert: string
}

/** One CA for every test process on the machine, made once (the service reads it from a file). */
const CA_DIR = join(tmpdir(), "partner-service-webhook-test-ca")

const readCa = (dir: string): TestCa => ({
  caFile: join(dir, "ca.pem"),
  key: readFileSync(join(dir, "server.key"), "utf8"),
  cert: readFileSync(join(dir, "server.pem"), "utf8"),
})

const makeCa = (): TestCa => {
  if (existsSync(join(CA_DIR, "server.pem"))) return readCa(CA_DIR)
  const dir = mkdtempSync(join(tmpdir(), "webhook-ca-"))
  const file = (name: string) => join(dir, name)
  const openssl = (...args: ReadonlyArray<string>) => execFileSync("openssl", args, { stdio: "pipe" })
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
  openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.pem"),
    "-days",
    "3650",
    "-subj",
    "/CN=Webhook Test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  )
  openssl("req", ...ec, "-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1")
  writeFileSync(
    file("server.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
  )
  openssl(
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.pem"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-out",
    file("server.pem"),
    "-days",
    "3650",
    "-extfile",
    file("server.ext"),
  )
  try {
    // Test processes starting together race here: the first rename wins, the others use its files.
    renameSync(dir, CA_DIR)
  } catch {
    rmSync(dir, { recursive: true, force: true })
  }
  return readCa(CA_DIR)
}

let ca: TestCa | undefined
/** The test process's CA and server certificate, made on first use. */
export const testCa = (): TestCa => (ca ??= makeCa())

export interface Received {
  readonly path: string
  /** Header names lowercased; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  readonly rawHeaders: ReadonlyArray<string>
  readonly body: Buffer
  /** Epoch milliseconds (with fractions) when the body had fully arrived. */
  readonly at: number
}

export interface Reply {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
  /** Answer only after this long (a slow or hanging receiver). */
  readonly delayMs?: number
}

/** A responder's word for a request it never answers: held open until the client closes it or the receiver ends. */
export const NEVER = "never"

export type Responder = (request: Received, index: number) => Reply | typeof NEVER

export interface Receiver {
  /** `https://127.0.0.1:<port><path>` */
  readonly url: (path: string) => string
  /** Requests received so far on `path` (every path when omitted), in arrival order. */
  readonly received: (path?: string) => ReadonlyArray<Received>
  /** How `path` answers from now on (200 with an empty body until told). */
  readonly respond: (path: string, responder: Responder) => void
  /** Requests on `path` received and neither answered nor closed by the client, now and at most so far. */
  readonly open: (path: string) => { readonly now: number; readonly most: number }
  /** Starts counting `path`'s most open requests at once over from those open now. */
  readonly resetMost: (path: string) => void
  /** TCP connections open to the receiver (any path, any state), now and at most so far. */
  readonly connections: () => { readonly now: number; readonly most: number }
}

/** A receiver for the scope: started on a free port, closed (connections too) when the scope ends. */
export const startReceiver = Effect.acquireRelease(
  Effect.promise(async () => {
    const { key, cert } = testCa()
    const log: Array<Received> = []
    const responders = new Map<string, Responder>()
    const opened = new Map<string, { now: number; most: number }>()
    const connected = { now: 0, most: 0 }
    const server: Server = createServer({ key, cert, keepAliveTimeout: 60_000 }, (req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const path = req.url ?? "/"
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(req.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
        }
        const entry: Received = {
          path,
          headers,
          rawHeaders: req.rawHeaders,
          body: Buffer.concat(chunks),
          at: performance.timeOrigin + performance.now(),
        }
        const index = log.filter((r) => r.path === path).length
        log.push(entry)
        const open = opened.get(path) ?? { now: 0, most: 0 }
        opened.set(path, open)
        open.now++
        open.most = Math.max(open.most, open.now)
        res.on("close", () => open.now--)
        const responder: Responder = responders.get(path) ?? (() => ({ status: 200 }))
        const reply = responder(entry, index)
        if (reply === NEVER) return
        const send = () => {
          if (res.destroyed) return
          res.writeHead(reply.status, { ...reply.headers })
          res.end(reply.body ?? "")
        }
        if (reply.delayMs) setTimeout(send, reply.delayMs).unref()
        else send()
      })
    })
    // Counted as the socket is accepted, before its TLS handshake: a connection the client opens is open here.
    server.on("connection", (socket: Socket) => {
      connected.now++
      connected.most = Math.max(connected.most, connected.now)
      socket.on("close", () => connected.now--)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    return {
      server,
      receiver: {
        url: (path: string) => `https://127.0.0.1:${port}${path}`,
        received: (path?: string) => (path === undefined ? [...log] : log.filter((r) => r.path === path)),
        respond: (path: string, responder: Responder) => void responders.set(path, responder),
        open: (path: string) => ({ ...(opened.get(path) ?? { now: 0, most: 0 }) }),
        resetMost: (path: string) => {
          const open = opened.get(path)
          if (open !== undefined) open.most = open.now
        },
        connections: () => ({ ...connected }),
      } satisfies Receiver,
    }
  }),
  ({ server }) =>
    Effect.promise(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
    ),
).pipe(Effect.map(({ receiver }) => receiver))
