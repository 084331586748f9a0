import { fileURLToPath } from "node:url"
import vue from "@vitejs/plugin-vue"
import { defineConfig } from "vite"

/** The console is served by the `console` role; `npm run build` and `console/build.mjs` write it here. */
export const OUT_DIR = fileURLToPath(new URL("../dist/console", import.meta.url))

/** The partner portal's page, built beside the console's: its gateway serves it and its assets under /portal/. */
export const PORTAL_PAGE = "portal.html"
export const PORTAL_BASE = "/portal/"

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [vue()],
  // The strict Content-Security-Policy allows no inline script: no preload polyfill injected into the page.
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    sourcemap: false,
    // The portal's gateway serves only the files its page reaches, which the manifest lists.
    manifest: true,
    rolldownOptions: {
      input: {
        index: fileURLToPath(new URL("index.html", import.meta.url)),
        portal: fileURLToPath(new URL(PORTAL_PAGE, import.meta.url)),
      },
      output: {
        // One bundle of what both pages share (Vue, effect's schemas, the API client, the shared components), so a
        // first load fetches the page's entry and this, not a dozen small chunks; the console's own pages stay out
        // of it (the sign-in and deliveries pages are in the console's entry, the others load when first opened),
        // as does Chart.js (the endpoint page's charts). Vite's preload helper goes in too.
        codeSplitting: {
          groups: [
            {
              name: "shell",
              test: (id: string) =>
                !/[\\/]node_modules[\\/]chart\.js[\\/]/.test(id) &&
                (/[\\/]node_modules[\\/]/.test(id) ||
                  /[\\/]console[\\/]src[\\/](components|composables|utils|schemas|types)/.test(id) ||
                  /[\\/]backend[\\/]/.test(id) ||
                  id.includes("vite/preload-helper")),
            },
          ],
        },
      },
      // The bundler's note that plugins were slow says only that the machine was busy (npm test builds beside tests).
      checks: { bundlerTimings: false },
    },
  },
  experimental: {
    // Scripts and styles load their chunks relative to themselves; each page names its own under its own base.
    renderBuiltUrl: (file, { hostType, hostId }) => {
      if (hostType !== "html") return { relative: true }
      return hostId.endsWith(PORTAL_PAGE) ? `${PORTAL_BASE}${file}` : `/${file}`
    },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8083", "/portal/api": "http://127.0.0.1:8084" } },
})
