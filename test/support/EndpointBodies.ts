import { ENDPOINT } from "./Webhooks.ts"

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The published 422 of a create, with the `errors` every 422 of ours carries. */
export const invalidParams = (fields: Record<string, string>) => ({
  status_code: 422,
  error: "Invalid endpoint params.",
  endpoint: fields,
  errors: Object.fromEntries(Object.entries(fields).map(([field, message]) => [field, [message]])),
})

export const long = "x".repeat(50_000)

export const invalidBodies: ReadonlyArray<{
  readonly name: string
  readonly body: unknown
  readonly fields: Record<string, string>
}> = [
  {
    name: "an http destination",
    body: { endpoint: { ...ENDPOINT, destination_url: "http://hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must use HTTPS" },
  },
  {
    name: "another scheme",
    body: { endpoint: { ...ENDPOINT, destination_url: "ftp://hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must use HTTPS" },
  },
  {
    name: "a destination that is no URL",
    body: { endpoint: { ...ENDPOINT, destination_url: "hooks.example.com/partner" } },
    fields: { destination_url: "Destination url is not a valid URL" },
  },
  {
    name: "a destination with spaces",
    body: { endpoint: { ...ENDPOINT, destination_url: "https://hooks.example.com/a b" } },
    fields: { destination_url: "Destination url is not a valid URL" },
  },
  {
    name: "credentials in the destination",
    body: { endpoint: { ...ENDPOINT, destination_url: "https://user:pw@hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must not contain credentials" },
  },
  {
    name: "a destination too long",
    body: { endpoint: { ...ENDPOINT, destination_url: `https://hooks.example.com/${"a".repeat(2100)}` } },
    fields: { destination_url: "Destination url is too long (maximum is 2048 characters)" },
  },
  {
    name: "a destination that is not a string",
    body: { endpoint: { ...ENDPOINT, destination_url: 443 } },
    fields: { destination_url: "Destination url must be a string" },
  },
  {
    name: "missing fields",
    body: { endpoint: {} },
    fields: {
      name: "Name can't be blank",
      destination_url: "Destination url can't be blank",
      events: "Events can't be blank",
    },
  },
  {
    name: "null fields, which read as blank",
    body: { endpoint: { name: null, destination_url: null, events: null } },
    fields: {
      name: "Name can't be blank",
      destination_url: "Destination url can't be blank",
      events: "Events can't be blank",
    },
  },
  {
    name: "a blank name",
    body: { endpoint: { ...ENDPOINT, name: "   " } },
    fields: { name: "Name can't be blank" },
  },
  {
    name: "a name too long",
    body: { endpoint: { ...ENDPOINT, name: long } },
    fields: { name: "Name is too long (maximum is 255 characters)" },
  },
  {
    name: "a name that is not a string",
    body: { endpoint: { ...ENDPOINT, name: ["Main"] } },
    fields: { name: "Name must be a string" },
  },
  {
    name: "no events",
    body: { endpoint: { ...ENDPOINT, events: [] } },
    fields: { events: "Events can't be blank" },
  },
  {
    name: "events that are not an array of names",
    body: { endpoint: { ...ENDPOINT, events: "prospect.ready" } },
    fields: { events: "Events must be an array of event names" },
  },
  {
    name: "an event that is not a string",
    body: { endpoint: { ...ENDPOINT, events: ["prospect.ready", 7] } },
    fields: { events: "Events must be an array of event names" },
  },
  {
    name: "unknown events and wildcards",
    body: { endpoint: { ...ENDPOINT, events: ["prospect.ready", "prospect.updated", "*", "policy.*"] } },
    fields: { events: "Events include unknown events: prospect.updated, *, policy.*" },
  },
  {
    name: "an invalid status",
    body: { endpoint: { ...ENDPOINT, status: "paused" } },
    fields: { status: "Status is invalid" },
  },
  {
    name: "no endpoint object",
    body: { name: "Main" },
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
  {
    name: "an endpoint that is an array",
    body: { endpoint: [ENDPOINT] },
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
  {
    name: "a body that is not an object",
    body: [ENDPOINT],
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
]
