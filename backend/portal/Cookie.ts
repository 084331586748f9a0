export const PORTAL_COOKIE = "portal_session"

/** The token of the request's `portal_session` cookie. */
export const portalToken = (headers: Headers) => {
  for (const part of (headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === PORTAL_COOKIE) return part.slice(eq + 1).trim()
  }
  return undefined
}

/**
 * The session cookie of a portal framed by a partner's page: a third-party cookie, so `SameSite=None` (hence
 * `Secure`), and `Partitioned` so browsers that block third-party cookies keep it, under the partner's site only.
 */
export const portalCookie = (token: string, maxAgeSeconds: number) =>
  `${PORTAL_COOKIE}=${token}; HttpOnly; Secure; SameSite=None; Partitioned; Path=/portal; Max-Age=${maxAgeSeconds}`
