import type { CliIoShape } from "./Io.ts"

/**
 * Text as the CLI prints it: every control character but newline and tab (C0, DEL and C1, which terminals read as
 * escape sequences) shown as a `\uXXXX` escape, so stored text cannot move the cursor, recolour or retitle an
 * operator's terminal. Inside JSON output the escape is JSON's own, so the output stays valid JSON.
 */
export const printable = (text: string) => {
  let out = ""
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if ((code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f)) {
      out += `${text.slice(from, i)}\\u${code.toString(16).padStart(4, "0")}`
      from = i + 1
    }
  }
  return from === 0 ? text : out + text.slice(from)
}

/** `io` with everything written to stdout and stderr made `printable`: results, logs, refusals and crashes alike. */
export const printableIo = (io: CliIoShape): CliIoShape => ({
  ...io,
  stdout: (text) => io.stdout(printable(text)),
  stderr: (text) => io.stderr(printable(text)),
})
