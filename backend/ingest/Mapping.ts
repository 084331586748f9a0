import { FIELD_LIMITS, type LimitedField, textProblem } from "../contract/FieldLimits.ts"
import { isStorable, readInstant } from "../platform/Dates.ts"
import type { FieldErrors } from "../platform/Validation.ts"
import { type EventMapping, MAPPABLE_FIELDS, REQUIRED_MAPPED, type SourceMapping } from "./Domain.ts"

const EVENT_TYPE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/

/** Whether `pointer` is a JSON Pointer (RFC 6901): empty, or `/`-separated tokens with only `~0` / `~1` escapes. */
export const isPointer = (pointer: string) => pointer === "" || /^(\/([^~]|~[01])*)+$/.test(pointer)

/** A pointer's reference tokens, unescaped; pointers are few (a source's mappings), so each is split once. */
const tokensOf = (() => {
  const parsed = new Map<string, ReadonlyArray<string>>()
  return (pointer: string) => {
    let tokens = parsed.get(pointer)
    if (tokens === undefined) {
      tokens = pointer
        .slice(1)
        .split("/")
        .map((raw) => raw.replaceAll("~1", "/").replaceAll("~0", "~"))
      if (parsed.size < 10_000) parsed.set(pointer, tokens)
    }
    return tokens
  }
})()

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/

/** The value `pointer` names in `document`, or undefined when it names nothing. */
export const resolvePointer = (document: unknown, pointer: string): unknown => {
  if (pointer === "") return document
  let current = document
  for (const token of tokensOf(pointer)) {
    if (Array.isArray(current)) {
      if (!ARRAY_INDEX.test(token)) return undefined
      current = current[Number(token)]
    } else if (typeof current === "object" && current !== null && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token]
    } else {
      return undefined
    }
  }
  return current
}

/**
 * Checks an operator's mapping file: an object of event types, each an object of mappable fields to JSON
 * Pointers, locating at least the required fields. Returns every problem, or the mapping.
 */
export const parseMapping = (
  input: unknown,
): { readonly mapping: SourceMapping } | { readonly problems: ReadonlyArray<string> } => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { problems: ['the file must hold a JSON object of event types, e.g. {"ProspectUpdate": {...}}'] }
  }
  const problems: Array<string> = []
  if (Object.keys(input).length === 0) problems.push("the file maps no event type")
  for (const [eventType, fields] of Object.entries(input)) {
    if (!EVENT_TYPE.test(eventType)) {
      problems.push(`event type '${eventType}' must be letters, digits and _, starting with a letter`)
    }
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      problems.push(`${eventType}: must map fields to JSON Pointers`)
      continue
    }
    for (const [field, pointer] of Object.entries(fields)) {
      if (!MAPPABLE_FIELDS.includes(field)) problems.push(`${eventType}: '${field}' is not a prospect field`)
      if (typeof pointer !== "string" || !isPointer(pointer)) {
        problems.push(
          `${eventType}.${field}: ${JSON.stringify(pointer)} is not a JSON Pointer such as /applicant/phone`,
        )
      }
    }
    for (const field of REQUIRED_MAPPED) {
      if (!Object.hasOwn(fields, field)) problems.push(`${eventType}: ${field} must be mapped`)
    }
  }
  return problems.length > 0 ? { problems } : { mapping: input as SourceMapping }
}

/** The mapped fields found in `payload` (a field whose pointer names nothing is left out). */
export const extractFields = (mapping: EventMapping, payload: unknown): Record<string, unknown> => {
  const fields: Record<string, unknown> = {}
  for (const field in mapping) {
    const value = resolvePointer(payload, mapping[field]!)
    if (value !== undefined) fields[field] = value
  }
  return fields
}

/**
 * An event time as partners send it: an ISO 8601 timestamp with a zone, or Unix time in seconds or
 * milliseconds. Undefined when it is neither, names a date or time that does not exist, or is outside the
 * years 0001 to 9999.
 */
export const eventTime = (value: unknown): Date | undefined => {
  if (typeof value === "string") {
    const read = readInstant(value)
    return "at" in read ? read.at : undefined
  }
  const date =
    typeof value === "number" && Number.isFinite(value) && value > 0
      ? new Date(value < 1e11 ? value * 1000 : value)
      : undefined
  return date !== undefined && isStorable(date) ? date : undefined
}

const isLimited = (field: string): field is LimitedField => Object.hasOwn(FIELD_LIMITS, field)

/** A member of `authorized_members` carries text fields of its own. */
const MEMBER_FIELDS: ReadonlyArray<LimitedField> = ["first_name", "last_name", "email"]

/**
 * The text limits of the prospect endpoint applied to mapped fields (`extractFields`): each text field too long or
 * holding a control character, keyed by field and naming where the mapping found it. Identifiers sent as numbers
 * count as their text. Other checks (a phone of 10 digits, dates) stay with the ingest actor, as the spec wants
 * their refusal silent to the partner.
 */
export const mappedTextProblems = (mapping: EventMapping, fields: Record<string, unknown>): FieldErrors => {
  const problems: FieldErrors = {}
  const check = (key: string, field: LimitedField, value: unknown) => {
    const text = typeof value === "number" ? String(value) : value
    const problem = typeof text === "string" ? textProblem(field, text) : undefined
    if (problem !== undefined)
      (problems[key] ??= []).push(`${problem} (mapped from ${mapping[key.split(".")[0]!]})`)
  }
  for (const field in fields) {
    const value = fields[field]
    if (isLimited(field)) check(field, field, value)
    else if (field === "authorized_members" && Array.isArray(value)) {
      value.forEach((member: unknown, index) => {
        if (typeof member !== "object" || member === null) return
        for (const name of MEMBER_FIELDS) {
          check(`authorized_members.${index}.${name}`, name, (member as Record<string, unknown>)[name])
        }
      })
    }
  }
  return problems
}
