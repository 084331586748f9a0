import { frameAncestorSources, pageSecurityHeaders } from "../platform/PageHeaders.ts"

/** Who may frame a portal response: the session's parent origin, when it has one, else nobody. */
const frameAncestors = (parentOrigin: string | null | undefined) =>
  frameAncestorSources(parentOrigin === null || parentOrigin === undefined ? [] : [parentOrigin])

/** The origin of the owner's logo, the one place besides the portal its page shows an image from. */
const logoOrigins = (logoUrl: string | null | undefined) =>
  logoUrl === null || logoUrl === undefined || !URL.canParse(logoUrl) ? [] : [new URL(logoUrl).origin]

/**
 * Headers of every portal response, as the renter's pages send them (`platform/PageHeaders.ts`); its script
 * calls the portal's API, and a session's answers may show its owner's logo (`img-src` its origin).
 */
export const portalHeaders = (
  parentOrigin: string | null | undefined,
  options: {
    readonly https: boolean
    readonly contentType: string
    readonly logoUrl?: string | null | undefined
  },
): Record<string, string> =>
  pageSecurityHeaders(frameAncestors(parentOrigin), {
    https: options.https,
    contentType: options.contentType,
    connects: true,
    imageOrigins: logoOrigins(options.logoUrl),
  })
