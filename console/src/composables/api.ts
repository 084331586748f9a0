import { Schema } from "effect"

/**
 * What a call needs of the signed-in session, which sits above this module (`session.ts` calls the API, and
 * `router.ts` imports both): the CSRF token, and what to do when the server answers 401 because the session expired or
 * was revoked. `router.ts` connects them before the app mounts.
 */
export interface SessionLink {
  readonly csrfToken: () => string | undefined
  readonly expired: () => Promise<void>
}

const link: { current: SessionLink } = {
  current: { csrfToken: () => undefined, expired: () => Promise.resolve() },
}

export const linkSession = (session: SessionLink) => {
  link.current = session
}

/** A refused or failed call, with the backend's own sentence (and per-field messages on a 422). */
export class ApiError extends Error {
  readonly status: number
  readonly fields: Record<string, string>
  constructor(status: number, message: string, fields: Record<string, string> = {}) {
    super(message)
    this.status = status
    this.fields = fields
  }
}

const fallbackMessage = (status: number) =>
  status === 0
    ? "The console could not reach the server. Check your connection and try again."
    : status >= 500
      ? "The server failed to answer. Try again in a moment."
      : `The request failed (HTTP ${status}).`

/** The message and field errors of the contract's error bodies (`message`, or `error` plus `<resource>`). */
const errorFrom = (status: number, body: unknown): ApiError => {
  if (typeof body !== "object" || body === null) return new ApiError(status, fallbackMessage(status))
  const record = body as Record<string, unknown>
  const message =
    typeof record.message === "string"
      ? record.message
      : typeof record.error === "string"
        ? record.error
        : fallbackMessage(status)
  const fields: Record<string, string> = {}
  for (const [key, value] of Object.entries(record)) {
    if (key === "errors" || typeof value !== "object" || value === null || Array.isArray(value)) continue
    for (const [field, text] of Object.entries(value)) if (typeof text === "string") fields[field] = text
  }
  return new ApiError(status, message, fields)
}

/** Each refused field with what it must be ("since must be an ISO 8601 date-time ..."). */
export const fieldProblems = (error: ApiError) =>
  Object.entries(error.fields).map(([field, problem]) => `${field.replace(/_/g, " ")} ${problem}`)

/**
 * One JSON request with the page's cookies: `headers` beside `accept` (and `content-type` when there is a body);
 * `sent` is the same request already under way. The answer's status and body (undefined when it is not JSON: a
 * proxy's error page says nothing the status does not). Unreachable: an `ApiError` with status 0 and `unreachable`.
 */
export const exchange = async (
  request: { readonly method: string; readonly url: string; readonly body?: unknown },
  headers: Record<string, string>,
  unreachable: string,
  sent?: Promise<Response>,
) => {
  const all: Record<string, string> = { accept: "application/json", ...headers }
  if (request.body !== undefined) all["content-type"] = "application/json"
  let response: Response
  try {
    response = await (sent ??
      fetch(request.url, {
        method: request.method,
        headers: all,
        credentials: "same-origin",
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      }))
  } catch {
    throw new ApiError(0, unreachable)
  }
  const text = await response.text()
  let parsed: unknown
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // Not JSON: the status alone tells what happened.
  }
  return { status: response.status, ok: response.ok, parsed }
}

/** An answer decoded with `answer`: an answer of another shape is an error to show, never a value to render. */
export const decodeAnswer = <T>(
  answer: Schema.Decoder<T>,
  parsed: unknown,
  method: string,
  path: string,
): T => {
  try {
    return Schema.decodeUnknownSync(answer)(parsed)
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    throw new ApiError(0, `The server's answer to ${method} ${path} was not understood: ${reason}`)
  }
}

export type Query = Record<string, string | number | undefined | null>

export const withQuery = (path: string, query: Query = {}) => {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value))
  }
  const text = params.toString()
  return text ? `${path}?${text}` : path
}

/**
 * Answers asked for before the app mounted (the first page's data, beside the session, not after it): each is
 * taken once, by the same GET of the same path, and those the first page did not take are dropped.
 */
const early = new Map<string, Promise<Response>>()

export const prefetch = (path: string) => {
  const response = fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" })
  // Its failure is the taker's to see; one never taken is dropped unseen.
  response.catch(() => undefined)
  early.set(path, response)
}

export const dropPrefetched = () => early.clear()

/**
 * Every call the console makes: JSON in and out, the CSRF token on anything that changes state, and a 401
 * (the session expired or was revoked) sends the operator to the sign-in page, back here afterwards. The answer
 * is decoded with `answer`, a schema of the operator API (`backend/operator/Api.ts`): an answer of another shape
 * is an error to show, never a value to render.
 */
export async function api<T>(
  answer: Schema.Decoder<T>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  return decodeAnswer(answer, await call(method, path, body), method, path)
}

/** A call whose answer carries nothing the console reads (signing out). */
export const send = async (method: string, path: string, body?: unknown): Promise<void> => {
  await call(method, path, body)
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  const headers: Record<string, string> = {}
  const token = link.current.csrfToken()
  if (method !== "GET" && token) headers["x-csrf-token"] = token
  const taken = method === "GET" ? early.get(path) : undefined
  if (taken) early.delete(path)
  const response = await exchange({ method, url: path, body }, headers, fallbackMessage(0), taken)
  if (response.ok) return response.parsed
  const error = errorFrom(response.status, response.parsed)
  if (response.status === 401 && path !== "/api/session") await link.current.expired()
  throw error
}
