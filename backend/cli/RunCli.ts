import { parseCommandLine, refusal } from "./CommandLine.ts"
import type { CliIoShape } from "./Io.ts"
import { printableIo } from "./Printable.ts"

/**
 * The CLI: reads the command line, answers `--help` and refuses a malformed one before the platform loads, and
 * otherwise runs the command. Resolves to the exit status. The binary (`main.ts`) and the tests call this same
 * function, the tests with buffers for output and an environment of their own.
 */
export const runCli = async (argv: ReadonlyArray<string>, given: CliIoShape): Promise<number> => {
  // Stored text (names, reasons, message bodies) may hold control characters: none reaches the terminal raw.
  const io = printableIo(given)
  const line = parseCommandLine(argv)
  switch (line._tag) {
    case "Help":
      io.stdout(line.text)
      return 0
    case "Usage":
      io.stderr(refusal(line.message, line.command))
      return 2
    case "Command":
      return (await import("./RunCommand.ts")).runCommand(line, io)
  }
}
