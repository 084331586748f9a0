import { frameAncestorSources, pageSecurityHeaders } from "../platform/PageHeaders.ts"

/** Who may frame a portal response: the session's parent origin, when it has one, else nobody. */
const frameAncestors = (parentOrigin: string | null | undefined) =>
  frameAncestorSources(parentOrigin === null || parentOrigin === undefined ? [] : [parentOrigin])

/**
 * Headers of every portal response, as the renter's pages send them (`platform/PageHeaders.ts`); its script
 * calls the portal's API.
 */
export const portalHeaders = (
  parentOrigin: string | null | undefined,
  options: { readonly https: boolean; readonly contentType: string },
): Record<string, string> => pageSecurityHeaders(frameAncestors(parentOrigin), { ...options, connects: true })
