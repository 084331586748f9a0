import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import path from "node:path"
import { Effect } from "effect"
import { Scopes } from "../auth/Scopes.ts"
import { EventCatalog, EventNames } from "../events/Catalog.ts"
import { Envelopes } from "../events/Envelope.ts"
import { AppConfig } from "../platform/Config.ts"
import type { HttpRequest, Route } from "../platform/Http.ts"
import { openApiDocument } from "../platform/OpenApi.ts"
import { WebhookConfig, type WebhookConfigShape } from "../webhooks/Config.ts"
import { webhookReference } from "../webhooks/endpoints/Reference.ts"

export const API_TITLE = "Partner API"
export const API_VERSION = "v2"

const description = (
  webhookPolicy: string,
) => `Provision property owners, bank accounts, properties and units; submit prospects and read their
enrollment links; report move-outs; manage webhook endpoints and their deliveries.

## Authentication
Get a token from \`POST /token\` with the OAuth 2.0 client credentials grant (\`grant_type\` =
\`client_credentials\`, \`client_id\`, \`client_secret\` and \`audience\` in the body), then send it as
\`Authorization: Bearer <ACCESS_TOKEN>\`. Cache one token per process and refresh it near \`expires_in\`. Each route
needs its own scope. A request failing authentication gets 401 \`{"message":"Unauthorized"}\`; a token lacking the
route's scope, or an owner not granted to the credentials, gets 403 \`{"message":"Forbidden"}\`.

## Errors
Endpoint errors carry \`status_code\` and \`error\`; a validation failure (422) adds an object named for the resource
with a message per field. Batch endpoints answer 200 with one result per item: inspect each item's \`action\` and
\`errors\`.

## Webhooks
The service POSTs a JSON body to every active endpoint subscribed to an event (there is no wildcard subscription).
The body has exactly three keys: \`event\`, \`property_owner_slug\` and \`data\`, an object with a single key named
for the subject. Every delivery carries \`X-Webhook-Event\`, \`X-Webhook-Delivery\` (stable across retries:
deduplicate on it), \`X-Webhook-Timestamp\` and \`X-Webhook-Signature\` (\`t=<timestamp>,v1=<hex>\`, the lowercase
hex HMAC-SHA256 of \`<timestamp>.<raw_request_body>\` keyed with the owner's signing secret). Verify over the raw
body bytes. ${webhookPolicy} Events may arrive
out of order: treat each payload as current state and reconcile on \`status\`.`

const SECURITY_DESCRIPTION =
  "OAuth 2.0 client credentials. POST `grant_type` (`client_credentials`), `client_id`, `client_secret` and " +
  "`audience` to `/token`, as JSON or as a form (the id and secret may come as HTTP Basic credentials instead). " +
  "The audience is issued by the operator with the credentials; it belongs in the body, and is also read from " +
  "the token URL's query when the body has none, which is how this page's Authorize dialog sends it. Omit " +
  "`scope` to get every scope granted to the client; a subset narrows the token. `ingest:events` is granted " +
  "only by the ingestion gateway's own `/token` and audience."

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * The reference of the partner gateway serving `routes`, with `serverUrl` as its server and token issuer; what
 * it says of timeouts and retries follows `webhooks`, the webhook settings in force.
 */
export const partnerApiDocument = (
  serverUrl: string,
  routes: ReadonlyArray<Route<unknown>>,
  webhooks: WebhookConfigShape,
) => {
  const reference = webhookReference(webhooks)
  return openApiDocument({
    title: API_TITLE,
    version: API_VERSION,
    description: description(reference.policy),
    serverUrl,
    routes,
    security: { description: SECURITY_DESCRIPTION, scopes: Scopes },
    webhooks: {
      headers: reference.headers,
      answers: reference.answers,
      events: EventNames.map((name) => {
        const { dataKey, emittedWhen } = EventCatalog[name]
        return {
          name,
          // Summaries are plain text, unlike descriptions.
          summary: `${capitalized(emittedWhen).replaceAll("`", "")}.`,
          description:
            `Emitted when ${emittedWhen}. \`data\` holds one key, \`${dataKey}\`. Events may arrive out of ` +
            "order and one action may emit several: treat the payload as current state and deduplicate on " +
            "`X-Webhook-Delivery`.",
          body: Envelopes[name],
        }
      }),
    },
  })
}

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
  readonly cacheControl: string
}

const REVALIDATE = "no-cache"
/** Asset links carry their content hash, so a new version is a new URL. */
const IMMUTABLE = "public, max-age=31536000, immutable"

const makeAsset = (body: Uint8Array | string, contentType: string, cacheControl: string): Asset => {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body
  const hash = createHash("sha256").update(bytes).digest("base64url").slice(0, 16)
  return { body: bytes, contentType, etag: `"${hash}"`, cacheControl }
}

const notModified = (request: HttpRequest, etag: string) =>
  (request.headers.get("if-none-match") ?? "")
    .split(",")
    .some((tag) => tag.trim().replace(/^W\//, "") === etag || tag.trim() === "*")

const serve = (request: HttpRequest, asset: Asset, headers: Record<string, string> = {}) => {
  const common = { etag: asset.etag, "cache-control": asset.cacheControl, ...headers }
  return notModified(request, asset.etag)
    ? new Response(null, { status: 304, headers: common })
    : new Response(asset.body, {
        headers: { "content-type": asset.contentType, "x-content-type-options": "nosniff", ...common },
      })
}

/** Starts the Swagger UI bundle once its script is loaded; the document URL comes from the page. */
const INITIALIZER = `window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui")
  window.ui = SwaggerUIBundle({
    url: root.dataset.url,
    dom_id: "#swagger-ui",
    deepLinking: true,
    // Otherwise the page asks Swagger's public validator for a badge.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
  })
  // Swagger UI cannot put the audience in the token request's body; /token also reads it from the query.
  window.ui.initOAuth({ additionalQueryStringParams: { audience: root.dataset.audience } })
})
`

/** Files of `swagger-ui-dist` served under `/docs/assets/`, besides the initializer. */
const SWAGGER_FILES = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
} as const

type AssetName = keyof typeof SWAGGER_FILES | "reference.js"
const ASSET_NAMES = [...Object.keys(SWAGGER_FILES), "reference.js"] as ReadonlyArray<AssetName>

const loadAssets = async (): Promise<Readonly<Record<AssetName, Asset>>> => {
  const root = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
  const files = await Promise.all(
    Object.entries(SWAGGER_FILES).map(async ([name, type]) => {
      const body = await readFile(path.join(root, name))
      return [name, makeAsset(body, type, IMMUTABLE)] as const
    }),
  )
  return {
    ...(Object.fromEntries(files) as Record<keyof typeof SWAGGER_FILES, Asset>),
    "reference.js": makeAsset(INITIALIZER, "text/javascript; charset=utf-8", IMMUTABLE),
  }
}

/** Nothing but this origin may provide scripts, styles or data, so a page reaching for a CDN fails visibly. */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ")

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  )

const docsPage = (base: string, audience: string, assets: Readonly<Record<AssetName, Asset>>) => {
  const href = (name: AssetName) =>
    escapeHtml(`${base}/docs/assets/${name}?v=${assets[name].etag.replaceAll('"', "")}`)
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${API_TITLE} reference</title>
    <link rel="stylesheet" href="${href("swagger-ui.css")}" />
    <link rel="stylesheet" href="${href("index.css")}" />
    <link rel="icon" type="image/png" sizes="32x32" href="${href("favicon-32x32.png")}" />
    <link rel="icon" type="image/png" sizes="16x16" href="${href("favicon-16x16.png")}" />
  </head>
  <body>
    <div
      id="swagger-ui"
      data-url="${escapeHtml(`${base}/openapi.json`)}"
      data-audience="${escapeHtml(audience)}"
    ></div>
    <script src="${href("swagger-ui-bundle.js")}"></script>
    <script src="${href("reference.js")}"></script>
  </body>
</html>
`
}

/**
 * `GET /openapi.json`, `GET /docs` and the files the docs page loads, all public. The document covers
 * `documented()` (read on first use, so it may name the very list these routes join) and is built once per
 * process and public base URL; the Swagger UI files are read once from `swagger-ui-dist` and kept in memory.
 */
export const referenceRoutes = (
  documented: () => ReadonlyArray<Route<unknown>>,
): ReadonlyArray<Route<AppConfig | WebhookConfig>> => {
  const documents = new Map<string, Asset>()
  const pages = new Map<string, Asset>()
  let loading: Promise<Readonly<Record<AssetName, Asset>>> | undefined
  const assets = Effect.promise(() => {
    loading ??= loadAssets().catch((error: unknown) => {
      loading = undefined
      throw error
    })
    return loading
  })
  const cachedIn = (cache: Map<string, Asset>, key: string, make: () => Asset) => {
    const existing = cache.get(key)
    if (existing) return existing
    const made = make()
    cache.set(key, made)
    return made
  }

  const openApiJson: Route<AppConfig | WebhookConfig> = {
    method: "GET",
    path: "/openapi.json",
    access: "public",
    handle: (request) =>
      Effect.gen(function* () {
        const { publicBaseUrl } = yield* AppConfig
        const webhooks = yield* WebhookConfig
        const document = cachedIn(documents, publicBaseUrl, () =>
          makeAsset(
            JSON.stringify(partnerApiDocument(publicBaseUrl, documented(), webhooks)),
            "application/json",
            REVALIDATE,
          ),
        )
        return serve(request, document, { "access-control-allow-origin": "*" })
      }),
  }

  const docs: Route<AppConfig> = {
    method: "GET",
    path: "/docs",
    access: "public",
    handle: (request) =>
      Effect.gen(function* () {
        const config = yield* AppConfig
        const files = yield* assets
        const base = new URL(config.publicBaseUrl).pathname.replace(/\/+$/, "")
        const audience = config.audiences.partner
        const page = cachedIn(pages, `${base} ${audience}`, () =>
          makeAsset(docsPage(base, audience, files), "text/html; charset=utf-8", REVALIDATE),
        )
        return serve(request, page, {
          "content-security-policy": DOCS_CSP,
          "referrer-policy": "no-referrer",
        })
      }),
  }

  const files = ASSET_NAMES.map((name): Route<AppConfig> => ({
    method: "GET",
    path: `/docs/assets/${name}`,
    access: "public",
    handle: (request) => Effect.map(assets, (loaded) => serve(request, loaded[name])),
  }))

  return [openApiJson, docs, ...files]
}
