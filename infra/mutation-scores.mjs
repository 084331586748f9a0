// A StrykerJS reporter (stryker.config.mjs loads it) that prints the mutation score of each module of MODULES,
// whose parts may be line ranges of a file: the clear-text reporter's table counts whole files.
import path from "node:path"
import { MODULES } from "../stryker.config.mjs"

/** `file[:line:column-line:column]` as a file and the lines it spans. */
const parsePart = (part) => {
  const match = /^(.*?):(\d+):\d+-(\d+):\d+$/.exec(part)
  return match
    ? { file: match[1], from: Number(match[2]), to: Number(match[3]) }
    : { file: part, from: 1, to: Infinity }
}

const DETECTED = new Set(["Killed", "Timeout"])
const UNDETECTED = new Set(["Survived", "NoCoverage"])

class ModuleScores {
  static inject = []

  onMutationTestReportReady(report) {
    const rows = Object.entries(MODULES).map(([name, parts]) => {
      const spans = parts.map(parsePart)
      let detected = 0
      let undetected = 0
      for (const [file, { mutants }] of Object.entries(report.files)) {
        const relative = path.isAbsolute(file) ? path.relative(process.cwd(), file) : file
        for (const mutant of mutants) {
          const line = mutant.location.start.line
          if (!spans.some((s) => s.file === relative && line >= s.from && line <= s.to)) continue
          if (DETECTED.has(mutant.status)) detected++
          else if (UNDETECTED.has(mutant.status)) undetected++
        }
      }
      const total = detected + undetected
      const score = total === 0 ? "n/a" : `${((100 * detected) / total).toFixed(2)}%`
      return { name, score, detected, undetected }
    })
    const width = Math.max(...rows.map((row) => row.name.length))
    console.log("\nMutation score per module (killed or timed out / all but ignored and errors):")
    for (const row of rows)
      console.log(
        `  ${row.name.padEnd(width)}  ${row.score.padStart(7)}  ${row.detected} killed, ${row.undetected} survived`,
      )
  }
}

export const strykerPlugins = [{ kind: "Reporter", name: "module-scores", injectableClass: ModuleScores }]
