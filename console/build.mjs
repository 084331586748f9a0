// Builds the operator console into dist/console with Vite, and beside it the partner portal's page (portal.html).
//
//   node console/build.mjs             build now
//   node console/build.mjs --if-stale  build only when dist/console is missing or older than its sources
//
// `npm start` and `npm test` run the second form through infra/bootstrap.mjs, `npm run build` the first after
// vue-tsc. Each build writes to a folder of its own and is renamed into place, so two builds at once (two test
// files, or `npm start` beside `npm test`) never leave a half-written site.
import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const CONSOLE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(CONSOLE)
export const CONSOLE_DIST = path.join(ROOT, "dist", "console")
/** Written last, so its presence and time say the build is whole. */
const STAMP = path.join(CONSOLE_DIST, "index.html")

const newestSource = (dir) => {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestSource(file) : statSync(file).mtimeMs)
  }
  return newest
}

/** Whether dist/console is missing or older than a source file, the console's config or the lock file. */
export const isStale = () => {
  if (!existsSync(STAMP)) return true
  const sources = Math.max(newestSource(CONSOLE), statSync(path.join(ROOT, "package-lock.json")).mtimeMs)
  return sources > statSync(STAMP).mtimeMs
}

export async function buildConsole() {
  const { build } = await import("vite")
  const staging = `${CONSOLE_DIST}.build-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  try {
    await build({
      configFile: path.join(CONSOLE, "vite.config.ts"),
      logLevel: "warn",
      build: { outDir: staging, emptyOutDir: true },
    })
    rmSync(CONSOLE_DIST, { recursive: true, force: true })
    renameSync(staging, CONSOLE_DIST)
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    // Another build finished first and put its (equal) site in place.
    if (error?.code === "ENOTEMPTY" || error?.code === "EEXIST") return
    throw error
  }
}

/** Builds when stale; answers whether it built. */
export async function ensureConsoleBuilt() {
  if (!isStale()) return false
  await buildConsole()
  return true
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const ifStale = process.argv.includes("--if-stale")
  const started = Date.now()
  const built = ifStale ? await ensureConsoleBuilt() : (await buildConsole(), true)
  if (built)
    console.error(`console: built ${path.relative(ROOT, CONSOLE_DIST)} in ${Date.now() - started} ms`)
}
