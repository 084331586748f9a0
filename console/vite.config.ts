import { fileURLToPath } from "node:url"
import vue from "@vitejs/plugin-vue"
import { defineConfig } from "vite"

/** The console is served by the `console` role; `npm run build` and `console/build.mjs` write it here. */
export const OUT_DIR = fileURLToPath(new URL("../dist/console", import.meta.url))

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [vue()],
  // The strict Content-Security-Policy allows no inline script: no preload polyfill injected into the page.
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    sourcemap: false,
    // The bundler's note that plugins were slow says only that the machine was busy (npm test builds beside tests).
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8083" } },
})
