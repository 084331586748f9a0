import escapeHtml from "escape-html"

/** Markup that is already safe to send: built by `html` or `raw`, never from a bare string. */
export class SafeHtml {
  readonly markup: string
  constructor(markup: string) {
    this.markup = markup
  }
  toString() {
    return this.markup
  }
}

/** A value a template may hold: text is escaped, markup is kept, lists are joined, absent values vanish. */
export type Fragment = SafeHtml | string | number | undefined | null | false | ReadonlyArray<Fragment>

const render = (fragment: Fragment): string => {
  if (fragment === undefined || fragment === null || fragment === false) return ""
  if (fragment instanceof SafeHtml) return fragment.markup
  if (Array.isArray(fragment)) return fragment.map(render).join("")
  return escapeHtml(String(fragment))
}

/**
 * A template whose interpolations are escaped unless they are markup themselves, so text from a prospect or a
 * link can never become markup. Attribute values must be quoted in the template.
 */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Fragment>): SafeHtml => {
  let markup = strings[0]!
  values.forEach((value, index) => {
    markup += render(value) + strings[index + 1]!
  })
  return new SafeHtml(markup)
}

/** Markup written in this codebase and known to be safe (a constant), kept as it is. */
export const raw = (markup: string) => new SafeHtml(markup)
