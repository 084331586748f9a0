/**
 * Pretty JSON cut into pieces a box may wrap between: each value or key (with the punctuation that follows it,
 * so no line starts with a comma) is one piece, the whitespace between pieces another.
 */
export interface JsonPiece {
  readonly text: string
  readonly kind: "token" | "space"
}

const PIECES = /("(?:[^"\\]|\\.)*"|[^\s"]+?)([,:]?)(?=\s|$|[\]}])|[[\]{}],?|\s+/gy

export const jsonPieces = (value: unknown): ReadonlyArray<JsonPiece> => {
  const text = JSON.stringify(value, null, 2) ?? "null"
  const pieces: Array<JsonPiece> = []
  PIECES.lastIndex = 0
  let at = 0
  while (at < text.length) {
    PIECES.lastIndex = at
    const match = PIECES.exec(text)
    // Anything the pattern does not cut is kept whole, as one piece that may wrap.
    const piece = match === null || match[0] === "" ? text.slice(at) : match[0]
    pieces.push({
      text: piece,
      kind: /^\s+$/.test(piece) ? "space" : "token",
    })
    at += piece.length
  }
  return pieces
}
