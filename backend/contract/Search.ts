/** A row the console's search found in any context: what it is, the id its page takes, and what the list shows of it. */
export interface FoundRow {
  readonly id: string
  readonly label: string
  readonly detail: string
}
