import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import path from "node:path"
import { Effect } from "effect"
import { type BrowserContext, chromium } from "playwright-core"

/** The bootstrap checks the same path before the suite, and installs Debian's chromium when it can. */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium"

/**
 * Debian's chromium through playwright-core, never a downloaded browser, with a fresh profile removed
 * afterwards. `hosts` are test host names resolved to 127.0.0.1; `acceptCertificates` accepts the test's own
 * self-signed certificates (its HTTPS origins are only reachable on this machine).
 */
export const launchBrowser = (
  options: {
    readonly hosts?: ReadonlyArray<string>
    readonly acceptCertificates?: boolean
    readonly viewport?: { readonly width: number; readonly height: number }
    /** The browser's time zone (an IANA name), when a test needs one other than the machine's. */
    readonly timezoneId?: string
  } = {},
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `Chromium is missing at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set ` +
            "CHROMIUM_PATH; `npm test` installs it when run as root with apt.",
        )
      }
      const profile = await mkdtemp(path.join(tmpdir(), "e2e-chromium-"))
      const hosts = options.hosts ?? []
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--no-first-run",
          ...(hosts.length > 0
            ? [`--host-resolver-rules=${hosts.map((host) => `MAP ${host} 127.0.0.1`).join(", ")}`]
            : []),
        ],
        ignoreHTTPSErrors: options.acceptCertificates ?? false,
        viewport: { width: 1280, height: 900, ...options.viewport },
        ...(options.timezoneId === undefined ? {} : { timezoneId: options.timezoneId }),
      })
      return { context, profile }
    }),
    ({ context, profile }) =>
      Effect.promise(async () => {
        await context.close()
        await rm(profile, { recursive: true, force: true })
      }),
  ).pipe(Effect.map(({ context }): BrowserContext => context))
