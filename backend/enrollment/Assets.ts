import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"

/** One file of `assets/`, served by the enrollment host under `/enrollment/assets/<name>`. */
export interface Asset {
  readonly name: string
  readonly contentType: string
  readonly body: string
  /** The path pages link to; it changes with the content, so a browser never runs a stale copy. */
  readonly href: string
}

/** Read once when the module loads: the files ship with the code and never change while it runs. */
const load = (name: string, contentType: string): Asset => {
  const body = readFileSync(new URL(`./assets/${name}`, import.meta.url), "utf8")
  const version = createHash("sha256").update(body).digest("base64url").slice(0, 12)
  return { name, contentType, body, href: `/enrollment/assets/${name}?v=${version}` }
}

export const stylesheet = load("enrollment.css", "text/css; charset=utf-8")
export const script = load("enrollment.js", "text/javascript; charset=utf-8")

export const assets: ReadonlyArray<Asset> = [stylesheet, script]
