/** A value as indented JSON, for reading. */
export const prettyJson = (value: unknown) => JSON.stringify(value, null, 2) ?? String(value)
