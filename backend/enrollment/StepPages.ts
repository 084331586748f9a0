import type { JourneyStep } from "./Domain.ts"

/**
 * The renter's pages, each at an address of its own (`<link path>/<page>?<link query>`), so the browser's Back and
 * a reload show the page the renter was on. The journey's `quote` step has two pages: the check of every answer
 * (the GOV.UK "check your answers" pattern), then the payment.
 */
export const StepPages = [
  "details",
  "income",
  "choose",
  "check",
  "pay",
  "completed",
  "declined",
  "blocked",
] as const
export type StepPage = (typeof StepPages)[number]

export const isStepPage = (name: string | undefined): name is StepPage =>
  (StepPages as ReadonlyArray<string | undefined>).includes(name)

/** The page a journey opens on at each step. */
export const pageOfStep: Record<JourneyStep, StepPage> = {
  details: "details",
  underwriting: "income",
  choose: "choose",
  quote: "check",
  completed: "completed",
  declined: "declined",
  blocked: "blocked",
}

const ANSWERED: ReadonlyArray<StepPage> = ["details", "income", "choose", "check", "pay"]

/**
 * The pages the renter may open at `step`: every page up to the step's own (going back keeps the answers given),
 * or, once the journey ended, its end alone.
 */
export const openPages = (step: JourneyStep): ReadonlyArray<StepPage> => {
  switch (step) {
    case "details":
      return ANSWERED.slice(0, 1)
    case "underwriting":
      return ANSWERED.slice(0, 2)
    case "choose":
      return ANSWERED.slice(0, 3)
    case "quote":
      return ANSWERED
    default:
      return [pageOfStep[step]]
  }
}

/** The journey step a page's form answers (the `step` field it posts); the check page has no form. */
export const formStepOf: Partial<Record<StepPage, JourneyStep>> = {
  details: "details",
  income: "underwriting",
  choose: "choose",
  pay: "quote",
}

/** The page a form's step belongs to. */
export const pageOfForm = (step: string | null): StepPage | undefined =>
  (Object.entries(formStepOf) as ReadonlyArray<[StepPage, JourneyStep]>).find(([, s]) => s === step)?.[0]

/** The page after `page` in the order a renter answers them. */
export const nextPage = (page: StepPage): StepPage | undefined => {
  const at = ANSWERED.indexOf(page)
  return at < 0 ? undefined : ANSWERED[at + 1]
}

/** The page the Back link of `page` leads to; none on the first page and on a journey's end. */
export const previousPage = (page: StepPage): StepPage | undefined => {
  const at = ANSWERED.indexOf(page)
  return at <= 0 ? undefined : ANSWERED[at - 1]
}
