/** A list's cursor: the id of the last row shown, made opaque. */
export const encodeCursor = (id: string | number | undefined) =>
  id === undefined ? null : Buffer.from(String(id), "utf8").toString("base64url")

/** The id a cursor stands for, or undefined when the text is not a cursor of a list. */
export const decodeCursor = (cursor: string) => {
  const id = Buffer.from(cursor, "base64url").toString("utf8")
  return /^\d{1,18}$/.test(id) ? id : undefined
}
