import { JsonSchema, Schema, SchemaRepresentation } from "effect"
import { EndpointError, ForbiddenBody, type Route, UnauthorizedBody } from "./Http.ts"

/** An outbound webhook as the reference shows it: a POST the service sends, with `body` as its JSON. */
export interface WebhookDoc {
  readonly name: string
  readonly summary: string
  readonly description: string
  readonly body: Schema.Top
}

export interface OpenApiOptions {
  readonly title: string
  readonly version: string
  /** Markdown shown on top of the reference. */
  readonly description: string
  /** `PUBLIC_BASE_URL`: where the routes are served and where `/token` issues tokens. */
  readonly serverUrl: string
  /** Routes of the gateway; only those with a `doc` appear. */
  readonly routes: ReadonlyArray<Route<unknown>>
  /** The OAuth 2.0 client-credentials scheme: how to get a token, and every scope with its description. */
  readonly security: {
    readonly description: string
    readonly scopes: Readonly<Record<string, string>>
  }
  readonly webhooks: {
    /** Headers sent on every delivery, by name. */
    readonly headers: Readonly<Record<string, Schema.Top>>
    readonly events: ReadonlyArray<WebhookDoc>
    /** What a receiver's answer means: a 2xx, and any other answer or none (how it is retried). */
    readonly answers: { readonly delivered: string; readonly notDelivered: string }
  }
}

export type OpenApiDocument = Readonly<Record<string, unknown>>

const METHOD_ORDER = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
const JSON_MEDIA = "application/json"
const SECURITY_SCHEME = "oauth2"

/** Code-unit order, the same on every machine whatever its locale. */
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** h3's `/partners/:owner_slug/units` is OpenAPI's `/partners/{owner_slug}/units`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")

const pathParameters = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!)

/** `POST /partners/:owner_slug/units` -> `postPartnersOwnerSlugUnits`. */
const operationId = (method: string, path: string) =>
  [method.toLowerCase(), ...path.split(/[^A-Za-z0-9]+/).filter((word) => word !== "")]
    .map((word, index) => (index === 0 ? word : word.charAt(0).toUpperCase() + word.slice(1)))
    .join("")

/**
 * Drops `additionalProperties: true` from object schemas: it is JSON Schema's default, so the meaning is the same,
 * and documentation renderers otherwise invent `additionalProp1` keys in their examples.
 */
const withoutDefaultAdditionalProperties = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutDefaultAdditionalProperties)
  if (typeof node !== "object" || node === null) return node
  const record = node as Record<string, unknown>
  return Object.fromEntries(
    Object.entries(record)
      .filter(
        ([key, value]) => !(key === "additionalProperties" && value === true && record.type === "object"),
      )
      .map(([key, value]) => [key, withoutDefaultAdditionalProperties(value)]),
  )
}

/**
 * Every schema of the document compiled in one pass, so that schemas with an `identifier` become shared
 * `components/schemas` entries referenced as `#/components/schemas/<identifier>`. Each schema is described on
 * its JSON-encoded side: what travels on the wire.
 */
const compileSchemas = (schemas: ReadonlyArray<Schema.Top>) => {
  const unique = [...new Set(schemas)]
  const [first, ...rest] = unique.map((schema) => Schema.toCodecJson(schema).ast)
  const representations = SchemaRepresentation.toRepresentations([first!, ...rest])
  const compiled = JsonSchema.toMultiDocumentOpenApi3_1(
    SchemaRepresentation.toJsonSchemaMultiDocument(representations),
  )
  const bySchema = new Map(
    unique.map((schema, index) => [schema, withoutDefaultAdditionalProperties(compiled.schemas[index])]),
  )
  const components = Object.fromEntries(
    Object.keys(compiled.definitions)
      .sort()
      .map((name) => [name, withoutDefaultAdditionalProperties(compiled.definitions[name])]),
  )
  return { components, schemaOf: (schema: Schema.Top) => bySchema.get(schema)! }
}

const jsonContent = (schema: unknown) => ({ [JSON_MEDIA]: { schema } })

const ref = (kind: "schemas" | "responses" | "parameters", name: string) => ({
  $ref: `#/components/${kind}/${name}`,
})

/**
 * The OpenAPI 3.1 document of a gateway, generated from the schemas its routes decode and encode with and from
 * the webhook envelopes. Deterministic: paths, methods, responses and components come out in a fixed order.
 */
export const openApiDocument = (options: OpenApiOptions): OpenApiDocument => {
  const documented = options.routes
    .filter((route) => route.doc !== undefined)
    .sort(
      (a, b) =>
        byCodeUnits(openApiPath(a.path), openApiPath(b.path)) ||
        METHOD_ORDER.indexOf(a.method.toLowerCase()) - METHOD_ORDER.indexOf(b.method.toLowerCase()),
    )
  const headerNames = Object.keys(options.webhooks.headers)
  const { components, schemaOf } = compileSchemas([
    UnauthorizedBody,
    ForbiddenBody,
    EndpointError,
    ...documented.flatMap(({ doc }) => [
      ...(doc!.body ? [doc!.body] : []),
      ...doc!.responses.flatMap((response) => (response.schema ? [response.schema] : [])),
    ]),
    ...headerNames.map((name) => options.webhooks.headers[name]!),
    ...options.webhooks.events.map((event) => event.body),
  ])

  const operation = (route: Route<unknown>) => {
    const doc = route.doc!
    const guarded = route.access !== "public"
    const responses: Record<string, unknown> = {}
    for (const response of [...doc.responses].sort((a, b) => a.status - b.status)) {
      const key = String(response.status)
      if (response.schema) {
        responses[key] = {
          description: response.description,
          content: jsonContent(schemaOf(response.schema)),
        }
      } else if (guarded && (response.status === 401 || response.status === 403)) {
        responses[key] = ref("responses", response.status === 401 ? "Unauthorized" : "Forbidden")
      } else if (response.status >= 400) {
        responses[key] = {
          description: response.description,
          content: jsonContent(ref("schemas", "EndpointError")),
        }
      } else {
        responses[key] = { description: response.description }
      }
    }
    if (guarded) {
      responses["401"] ??= ref("responses", "Unauthorized")
      responses["403"] ??= ref("responses", "Forbidden")
    }
    const parameters = pathParameters(route.path).map((name) => ({
      name,
      in: "path",
      required: true,
      schema: { type: "string" },
    }))
    return {
      operationId: operationId(route.method, route.path),
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      tags: [doc.tag],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(doc.body ? { requestBody: { required: true, content: jsonContent(schemaOf(doc.body)) } } : {}),
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => byCodeUnits(a, b))),
      security: route.access === "public" ? [] : [{ [SECURITY_SCHEME]: [route.access.scope] }],
    }
  }

  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of documented) {
    const path = openApiPath(route.path)
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route) }
  }

  const webhooks = Object.fromEntries(
    options.webhooks.events.map((event) => [
      event.name,
      {
        post: {
          operationId: `webhook.${event.name}`,
          summary: event.summary,
          description: event.description,
          parameters: headerNames.map((name) => ref("parameters", name)),
          requestBody: { required: true, content: jsonContent(schemaOf(event.body)) },
          responses: {
            "2XX": { description: options.webhooks.answers.delivered },
            default: { description: options.webhooks.answers.notDelivered },
          },
        },
      },
    ]),
  )

  const tags = [...new Set(documented.map((route) => route.doc!.tag))].sort().map((name) => ({ name }))
  const tokenUrl = `${options.serverUrl}/token`

  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version, description: options.description },
    servers: [{ url: options.serverUrl }],
    ...(tags.length > 0 ? { tags } : {}),
    paths,
    webhooks,
    components: {
      schemas: components,
      responses: {
        Unauthorized: {
          description:
            "The token is missing, expired or invalid. Retry once with a fresh token; a persistent 401 with a " +
            "valid token means an issuer or audience mismatch.",
          content: jsonContent(schemaOf(UnauthorizedBody)),
        },
        Forbidden: {
          description:
            "The token's scopes do not cover the route, or the owner is not granted to the caller. Retrying " +
            "does not help: the operator must add the scope or owner to the client's grant.",
          content: jsonContent(schemaOf(ForbiddenBody)),
        },
      },
      parameters: Object.fromEntries(
        headerNames.map((name) => {
          const schema = schemaOf(options.webhooks.headers[name]!)
          const { description, ...rest } = schema as { description?: string }
          return [name, { name, in: "header", required: true, description, schema: rest }]
        }),
      ),
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: "oauth2",
          description: options.security.description,
          flows: {
            clientCredentials: { tokenUrl, scopes: { ...options.security.scopes } },
          },
        },
      },
    },
  }
}
