import { readFile } from "node:fs/promises"
import path from "node:path"
import { Effect, Option, Schema } from "effect"
import { json, type Route } from "../platform/Http.ts"
import { PortalConfig } from "./Config.ts"
import type { PortalSession } from "./Domain.ts"
import { portalToken } from "./Cookie.ts"
import { noSessionPage, notBuiltPage } from "./Pages.ts"
import { PortalSessions } from "./PortalSessions.ts"
import { headersFor, JSON_TYPE, sessionHeaders } from "./Routes.ts"

/*
 * The portal's app: `portal.html` of the console's Vite build (console/vite.config.ts), for `/portal/` and every
 * path of the app under it, and the files that page reaches under `/portal/assets/`. Vite's manifest says which
 * files those are, so the console's own chunks, built into the same folder, are never served on this port.
 */

const HTML = "text/html; charset=utf-8"
const PAGE = "portal.html"
const MANIFEST = path.join(".vite", "manifest.json")
/** Vite names every asset after its content, so a browser may keep them for good. */
const IMMUTABLE = "public, max-age=31536000, immutable"

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
}

const ManifestChunk = Schema.Struct({
  file: Schema.String,
  imports: Schema.optionalKey(Schema.Array(Schema.String)),
  dynamicImports: Schema.optionalKey(Schema.Array(Schema.String)),
  css: Schema.optionalKey(Schema.Array(Schema.String)),
  assets: Schema.optionalKey(Schema.Array(Schema.String)),
})
const Manifest = Schema.fromJsonString(Schema.Record(Schema.String, ManifestChunk))
const decodeManifest = Schema.decodeUnknownOption(Manifest)

/** The files (`assets/...`) the page at `entry` loads, statically or on demand, as the manifest lists them. */
export const reachableFiles = (manifest: typeof Manifest.Type, entry: string): ReadonlySet<string> => {
  const files = new Set<string>()
  const seen = new Set<string>()
  const visit = (key: string) => {
    const chunk = manifest[key]
    if (chunk === undefined || seen.has(key)) return
    seen.add(key)
    if (chunk.file.startsWith("assets/")) files.add(chunk.file)
    for (const file of [...(chunk.css ?? []), ...(chunk.assets ?? [])]) files.add(file)
    for (const next of [...(chunk.imports ?? []), ...(chunk.dynamicImports ?? [])]) visit(next)
  }
  visit(entry)
  return files
}

/** The portal's page and its assets, built into `dir`; every other `/portal/api` path is a JSON 404. */
export const portalSiteRoutes = (dir: string): ReadonlyArray<Route<PortalSessions | PortalConfig>> => {
  const root = path.resolve(dir)
  const assets = new Map<string, Uint8Array>()
  const read = (relative: string) =>
    Effect.promise(async () => {
      const file = path.resolve(root, relative)
      // A path that climbs out of the build names nothing.
      return file.startsWith(root + path.sep) ? await readFile(file).catch(() => null) : null
    })
  /** Read on a miss only: a rebuild's files have new names, so the manifest is read again when they are asked for. */
  const portalFiles = Effect.map(read(MANIFEST), (bytes) =>
    bytes === null
      ? new Set<string>()
      : Option.match(decodeManifest(new TextDecoder().decode(bytes)), {
          onNone: () => new Set<string>(),
          onSome: (manifest) => reachableFiles(manifest, PAGE),
        }),
  )
  const asset = (relative: string) =>
    Effect.gen(function* () {
      const known = assets.get(relative)
      if (known !== undefined) return known
      if (!(yield* portalFiles).has(relative)) return null
      const bytes = yield* read(relative)
      if (bytes !== null) assets.set(relative, bytes)
      return bytes
    })

  const notFound = () =>
    Effect.map(headersFor(null, JSON_TYPE), (headers) =>
      json(404, { status_code: 404, error: "Not found." }, headers),
    )
  const html = (status: number, body: Uint8Array | string, session: PortalSession | undefined) =>
    Effect.map(
      session === undefined ? headersFor(null, HTML) : sessionHeaders(session, HTML),
      (headers) => new Response(body as Uint8Array<ArrayBuffer> | string, { status, headers }),
    )

  const handle: Route<PortalSessions | PortalConfig>["handle"] = (request) =>
    Effect.gen(function* () {
      if (request.path.startsWith("/portal/api/")) return yield* notFound()
      if (request.path.startsWith("/portal/assets/")) {
        const relative = request.path.slice("/portal/".length)
        const bytes = yield* asset(relative)
        if (bytes === null) return yield* notFound()
        const headers = yield* headersFor(
          null,
          CONTENT_TYPES[path.extname(relative)] ?? "application/octet-stream",
        )
        return new Response(bytes as Uint8Array<ArrayBuffer>, {
          headers: { ...headers, "cache-control": IMMUTABLE },
        })
      }
      const session = yield* PortalSessions.use((sessions) => sessions.current(portalToken(request.headers)))
      if (session === undefined) return yield* html(401, noSessionPage(), undefined)
      // Read on every load, so a rebuild is served at once.
      const page = yield* read(PAGE)
      if (page === null) {
        const answer = yield* html(503, notBuiltPage(), session)
        answer.headers.set("retry-after", "30")
        return answer
      }
      return yield* html(200, page, session)
    })

  return [
    { method: "GET", path: "/portal/", access: "public", handle },
    { method: "GET", path: "/portal/**", access: "public", handle },
  ]
}
