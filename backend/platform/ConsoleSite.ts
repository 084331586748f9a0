import { readFile } from "node:fs/promises"
import path from "node:path"
import { Effect } from "effect"
import { NotFound, type Route, ServiceUnavailable } from "./Http.ts"

/**
 * Headers of every page and asset of the console: scripts and styles from this origin only (the build has no
 * inline script), never framed, never sniffed.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
}

/** Paths the single-page app never answers: the API and the operators' endpoints keep their JSON 404. */
const NOT_THE_SITE = /^\/(api|metrics|healthz|readyz|health)(\/|$)/

/** Vite names every file under /assets after its content, so a browser may keep them for good. */
const IMMUTABLE = "public, max-age=31536000, immutable"

const notBuilt = new ServiceUnavailable({
  message: "The console is not built; run `npm run build` (npm start builds it when missing).",
  retryAfterSeconds: 30,
})

/**
 * The built single-page app in `dir` (Vite's output): files under `/assets/` with a long cache, and
 * `index.html` for every other GET path (the app's own router draws the page), except the API's and the
 * operators' endpoints. Static files only: the platform knows nothing of what the console shows. Assets are kept
 * in memory once read (their names change with their content); `index.html` is read on every page load, so a
 * rebuild (`npm test` beside a running `npm start`) is served at once without a restart.
 */
export const consoleSiteRoutes = (dir: string): ReadonlyArray<Route> => {
  const root = path.resolve(dir)
  const assets = new Map<string, Uint8Array>()
  const read = (relative: string) =>
    Effect.promise(async () => {
      const file = path.resolve(root, relative)
      // A path that climbs out of the build names nothing.
      return file.startsWith(root + path.sep) ? await readFile(file).catch(() => null) : null
    })
  const asset = (relative: string) =>
    Effect.suspend(() => {
      const known = assets.get(relative)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.tap(read(relative), (bytes) => Effect.sync(() => bytes && assets.set(relative, bytes)))
    })
  const respond = (bytes: Uint8Array, file: string, cacheControl: string) =>
    new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream",
        "cache-control": cacheControl,
        ...CONSOLE_SECURITY_HEADERS,
      },
    })

  const page: Route = {
    method: "GET",
    path: "/**",
    access: "public",
    handle: (request) =>
      Effect.gen(function* () {
        if (NOT_THE_SITE.test(request.path)) return yield* new NotFound({ message: "Not found." })
        if (request.path.startsWith("/assets/")) {
          const relative = request.path.slice(1)
          const bytes = yield* asset(relative)
          if (bytes === null) return yield* new NotFound({ message: "Not found." })
          return respond(bytes, relative, IMMUTABLE)
        }
        const index = yield* read("index.html")
        if (index === null) return yield* notBuilt
        return respond(index, "index.html", "no-cache")
      }),
  }
  return [page]
}
