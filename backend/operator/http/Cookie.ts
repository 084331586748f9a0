export const SESSION_COOKIE = "console_session"

/** The session token of the request's `console_session` cookie. */
export const sessionToken = (headers: Headers) => {
  for (const part of (headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The `set-cookie` value that gives the browser its session token, or (empty, no age) takes it back. */
export const sessionCookie = (value: string, maxAgeSeconds: number, secure: boolean) =>
  `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`
