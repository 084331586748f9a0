import { parseArgs } from "node:util"
import { COMMANDS, type CommandName, type CommandSpec } from "./Commands.ts"

/**
 * A command line read against the command table (`Commands.ts`): a command with its checked input, a request for
 * help, or a usage error; and the usage lines and `--help` text the table makes. Nothing here imports Effect:
 * `--help` and a mistyped command line are answered before the rest of the CLI loads.
 */

type Spec<N extends CommandName> = (typeof COMMANDS)[N]

type OptionValues<O> = {
  readonly [K in keyof O]: O[K] extends { readonly type: "boolean" }
    ? boolean | undefined
    : O[K] extends { readonly required: true }
      ? string
      : string | undefined
}

type Strings<T> = { readonly [I in keyof T]: string }

/** What a command receives: its positional arguments by position and its options by name, already checked. */
export interface Input<N extends CommandName> {
  readonly args: Strings<Spec<N>["args"]>
  readonly options: OptionValues<Spec<N>["options"]>
}

export type CommandLine =
  | { readonly _tag: "Help"; readonly text: string }
  | { readonly _tag: "Usage"; readonly message: string; readonly command?: CommandName }
  | {
      readonly [N in CommandName]: { readonly _tag: "Command"; readonly name: N; readonly input: Input<N> }
    }[CommandName]

const names = Object.keys(COMMANDS) as Array<CommandName>

export const PROGRAM = "npm run -s cli --"

/** `usage: clients grant CLIENT_ID --owners slug1,slug2`, as a refused command line shows it. */
export const usageOf = (name: CommandName) => `usage: ${`${name} ${COMMANDS[name].synopsis}`.trim()}`

/** Every command with its arguments, and what it does on the line below. */
export const usage = () =>
  `usage: ${PROGRAM} <command> [options]\n\ncommands:\n` +
  names
    .map((name) => `  ${`${name} ${COMMANDS[name].synopsis}`.trim()}\n      ${COMMANDS[name].summary}\n`)
    .join("") +
  `\n${PROGRAM} <command> --help says more about one command.\n`

/** What a refused command line prints: the problem, then how the command is used (or every command). */
export const refusal = (message: string, command: CommandName | undefined) =>
  command === undefined
    ? `${message}\n\n${usage()}`
    : message.startsWith("usage:")
      ? `${message}\n`
      : `${message}\n${usageOf(command)}\n`

/** `text` broken into lines of at most `width` characters, at spaces. */
const wrap = (text: string, width = 100) =>
  text
    .split(" ")
    .reduce<Array<string>>((lines, word) => {
      const last = lines.at(-1)
      if (last !== undefined && last.length + 1 + word.length <= width)
        lines[lines.length - 1] = `${last} ${word}`
      else lines.push(word)
      return lines
    }, [])
    .join("\n")

const commandHelp = (name: CommandName) => {
  const spec: CommandSpec = COMMANDS[name]
  return `${usageOf(name)}\n\n${wrap(spec.summary)}\n${spec.details ? `${wrap(spec.details)}\n` : ""}`
}

const isHelp = (arg: string) => arg === "--help" || arg === "-h"

/** The command whose name is the longest run of leading words, and what follows it. */
const matchCommand = (argv: ReadonlyArray<string>) => {
  for (let length = Math.min(argv.length, 3); length > 0; length--) {
    const name = argv.slice(0, length).join(" ")
    if (Object.hasOwn(COMMANDS, name)) return { name: name as CommandName, rest: argv.slice(length) }
  }
  return undefined
}

/** `unknown sources mapping command: delete`: named after the longest group of commands the words start. */
const unknownCommand = (argv: ReadonlyArray<string>) => {
  for (let length = Math.min(argv.length, 2); length > 0; length--) {
    const group = argv.slice(0, length).join(" ")
    if (names.some((name) => name.startsWith(`${group} `))) {
      return `unknown ${group} command: ${argv[length] ?? "(none)"}`
    }
  }
  return `unknown command: ${argv[0]}`
}

/** Reads a command line against the table: a command with its input, a request for help, or a usage error. */
export const parseCommandLine = (argv: ReadonlyArray<string>): CommandLine => {
  if (argv.length === 0 || argv[0] === "help" || isHelp(argv[0]!)) return { _tag: "Help", text: usage() }
  const matched = matchCommand(argv)
  if (matched === undefined) {
    return argv.some(isHelp)
      ? { _tag: "Help", text: usage() }
      : { _tag: "Usage", message: unknownCommand(argv) }
  }
  const { name, rest } = matched
  const spec: CommandSpec = COMMANDS[name]
  if (rest.some(isHelp)) return { _tag: "Help", text: commandHelp(name) }
  let parsed: ReturnType<typeof parseArgs>
  try {
    const options = Object.fromEntries(
      Object.entries(spec.options).map(([option, o]) => [option, { type: o.type }]),
    )
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true })
  } catch (error) {
    return { _tag: "Usage", message: (error as Error).message, command: name }
  }
  const values = parsed.values as Record<string, string | boolean | undefined>
  const missing = Object.entries(spec.options).some(
    ([option, o]) => o.required && (values[option] === undefined || values[option] === ""),
  )
  if (missing || parsed.positionals.length !== spec.args.length) {
    return { _tag: "Usage", message: usageOf(name), command: name }
  }
  for (const [option, o] of Object.entries(spec.options)) {
    const value = values[option]
    if (o.choices && typeof value === "string" && !o.choices.includes(value)) {
      return {
        _tag: "Usage",
        message: `--${option} must be ${o.choices.join(", ")}, not '${value}'`,
        command: name,
      }
    }
  }
  // The values were checked against the command's table entry just above, which is what its `Input` says.
  return {
    _tag: "Command",
    name,
    input: { args: parsed.positionals, options: values },
  } as unknown as CommandLine
}

/** A comma-separated option as a list; absent stays absent. */
export const list = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(/[,\s]+/)
        .map((item) => item.trim())
        .filter((item) => item !== "")
