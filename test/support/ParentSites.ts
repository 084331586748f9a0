import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { createServer, type Server } from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"

/**
 * HTTPS origins on this machine for browser tests: partner sites that frame the embedded flow or the portal, or
 * receive the expedited flow's redirect, and the service's own hosts (TLS in front of its plain HTTP gateways, as
 * a load balancer would be). All are one server on one port, told apart by host name; the browser maps the
 * names to 127.0.0.1 and accepts the self-signed certificate made here.
 */

export const ENROLLMENT_HOST_NAME = "enroll.test"
export const PORTAL_HOST_NAME = "portal.test"

export interface ParentSites {
  /** `https://<host>:<port>` */
  readonly origin: (host: string) => string
  /** Requests the partner sites received, as `https://host:port/path?query`. */
  readonly visits: () => ReadonlyArray<string>
}

/**
 * A page framing `src` at `width` px; every message it receives is kept in `window.received` as `{origin, data}`.
 */
const framingPage = (src: string, width: number) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner page</title></head>
<body>
<h1>Partner page</h1>
<iframe id="enrollment" title="Enrollment" src="${src.replaceAll("&", "&amp;").replaceAll('"', "&quot;")}"
  width="${width}" height="1600" allow="clipboard-write"></iframe>
<script>
  window.received = []
  window.addEventListener("message", (event) => window.received.push({ origin: event.origin, data: event.data }))
</script>
</body></html>`

const returnPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Back at the partner</title></head>
<body><h1>Back at the partner</h1></body></html>`

/** A self-signed certificate for the given names (EC P-256, made in a temporary folder and removed). */
const certificateFor = (names: ReadonlyArray<string>) => {
  const dir = mkdtempSync(join(tmpdir(), "parent-sites-"))
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "2",
        "-subj",
        `/CN=${names[0]}`,
        "-addext",
        `subjectAltName=${names.map((name) => `DNS:${name}`).join(",")}`,
      ],
      { stdio: "pipe" },
    )
    return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The sites on `port` (chosen before the service starts, so `ENROLLMENT_HOST` or `PORTAL_BASE_URL` can name it),
 * forwarding each host of `upstreams` (the enrollment host by default) to its gateway's port; closed when the
 * scope ends.
 */
export const startParentSites = (options: {
  readonly port: number
  readonly upstreams: Readonly<Record<string, number>>
  readonly hosts: ReadonlyArray<string>
}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const visits: Array<string> = []
      const server: Server = createServer(
        certificateFor([...Object.keys(options.upstreams), ...options.hosts]),
        (req, res) => {
          const host = (req.headers.host ?? "").replace(/:\d+$/, "")
          const upstreamPort = Object.hasOwn(options.upstreams, host) ? options.upstreams[host] : undefined
          if (upstreamPort !== undefined) {
            const upstream = httpRequest(
              {
                host: "127.0.0.1",
                port: upstreamPort,
                method: req.method,
                path: req.url,
                headers: { ...req.headers, "x-forwarded-proto": "https" },
              },
              (answer) => {
                res.writeHead(answer.statusCode ?? 502, answer.headers)
                answer.pipe(res)
              },
            )
            upstream.on("error", () => {
              res.writeHead(502)
              res.end()
            })
            req.pipe(upstream)
            return
          }
          const url = new URL(req.url ?? "/", `https://${req.headers.host}`)
          visits.push(url.href)
          res.setHeader("content-type", "text/html; charset=utf-8")
          const width = Number(url.searchParams.get("width") ?? "380")
          if (url.pathname === "/frame") res.end(framingPage(url.searchParams.get("src") ?? "", width))
          else res.end(returnPage)
        },
      )
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject)
        server.listen(options.port, "127.0.0.1", () => resolve())
      })
      const sites: ParentSites = {
        origin: (host) => `https://${host}:${options.port}`,
        visits: () => [...visits],
      }
      return { server, sites }
    }),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          }),
      ),
  ).pipe(Effect.map(({ sites }) => sites))
