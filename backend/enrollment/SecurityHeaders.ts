import { frameAncestorSources, pageSecurityHeaders } from "../platform/PageHeaders.ts"
import type { EnrollmentFlow } from "../prospects/Domain.ts"

/** Who may frame a page: the owner's HTTPS origins on the embedded flow, nobody on the expedited one. */
export interface Framing {
  readonly flow: EnrollmentFlow | undefined
  /** The owner's `embedded_frame_ancestors`; empty when the owner is unknown or lists none. */
  readonly frameAncestors: ReadonlyArray<string>
}

/** The owner's origins on an embedded page; nobody may frame an expedited one. */
const frameAncestorsSources = (framing: Framing) =>
  frameAncestorSources(framing.flow === "embedded" ? framing.frameAncestors : [])

/**
 * Headers of every renter page (`platform/PageHeaders.ts`): no page is cached (they show personal data), and the
 * link (which carries the renter's email) never leaves in a Referer while same-origin form posts keep their
 * Origin for the CSRF check.
 */
export const pageHeaders = (
  framing: Framing,
  options: {
    readonly https: boolean
    /** The page's script fetches the page again (the receipt, until its documents are stored). */
    readonly connects?: boolean
  },
): Record<string, string> =>
  pageSecurityHeaders(frameAncestorsSources(framing), {
    https: options.https,
    contentType: "text/html; charset=utf-8",
    connects: options.connects === true,
  })

/** Headers of the host's own CSS and script: cacheable, never sniffed, never used by another site. */
export const assetHeaders = (contentType: string): Record<string, string> => ({
  "content-type": contentType,
  "cache-control": "public, max-age=3600",
  "x-content-type-options": "nosniff",
  "cross-origin-resource-policy": "same-origin",
})
