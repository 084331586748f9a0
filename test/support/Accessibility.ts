import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { Frame, Page } from "playwright-core"

/** axe-core's browser build (the pinned devDependency), read once. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/** One rule axe-core found broken, with the elements that break it. */
export interface AccessibilityViolation {
  readonly rule: string
  readonly impact: string | null
  readonly help: string
  readonly elements: ReadonlyArray<string>
}

/** What a page gets wrong: axe-core's violations and the ids more than one element carries. */
export interface AccessibilityReport {
  readonly violations: ReadonlyArray<AccessibilityViolation>
  readonly duplicateIds: ReadonlyArray<string>
}

/** The little of axe-core and the DOM the check uses inside the page (the project's types have no DOM library). */
interface InPage {
  readonly axe?: {
    readonly run: (
      context: unknown,
      options: unknown,
    ) => Promise<{
      readonly violations: ReadonlyArray<{
        readonly id: string
        readonly impact: string | null
        readonly help: string
        readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<unknown> }>
      }>
    }>
  }
  readonly document: { readonly querySelectorAll: (selector: string) => Iterable<{ readonly id: string }> }
}

/**
 * Runs axe-core (WCAG 2.x A and AA, and its best practices) in a page or frame, and lists the ids used twice.
 * axe-core goes in through Playwright's `evaluate` (the DevTools protocol), not a `<script>` tag: a page whose
 * policy is `script-src 'self'` refuses inline scripts, and the check must not loosen the policy it runs under.
 */
export const accessibilityReport = async (target: Page | Frame): Promise<AccessibilityReport> => {
  if (!(await target.evaluate(() => (globalThis as unknown as InPage).axe !== undefined))) {
    await target.evaluate(AXE_SOURCE)
  }
  return target.evaluate(async () => {
    const inPage = globalThis as unknown as InPage
    const result = await inPage.axe!.run(inPage.document, { resultTypes: ["violations"] })
    const seen = new Set<string>()
    const duplicateIds = new Set<string>()
    for (const element of inPage.document.querySelectorAll("[id]")) {
      if (seen.has(element.id)) duplicateIds.add(element.id)
      seen.add(element.id)
    }
    return {
      violations: result.violations.map((violation) => ({
        rule: violation.id,
        impact: violation.impact,
        help: violation.help,
        elements: violation.nodes.map((node) => node.target.map(String).join(" ")),
      })),
      duplicateIds: [...duplicateIds],
    }
  })
}

/** Fails, naming each problem, unless the page has unique ids and no axe-core violation. */
export const assertAccessible = async (target: Page | Frame, name: string) => {
  const report = await accessibilityReport(target)
  const problems = [
    ...report.duplicateIds.map((id) => `id "${id}" is used more than once`),
    ...report.violations.map(
      (violation) =>
        `${violation.rule} (${violation.impact ?? "no impact given"}): ${violation.help}, at ${violation.elements.join(", ")}`,
    ),
  ]
  if (problems.length > 0) throw new Error(`${name} is not accessible:\n- ${problems.join("\n- ")}`)
}
