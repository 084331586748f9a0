import type { IssuerConfigShape } from "../policies/Config.ts"
import { script, stylesheet } from "./Assets.ts"
import { type Fragment, html, raw, type SafeHtml } from "./Html.ts"

/**
 * The page shell and the form parts of the renter's pages, after the GOV.UK Design System's patterns: labels
 * above inputs, hints and errors tied to their input with `aria-describedby`, and an error summary at the top
 * that links to each field.
 */

/** The service's name on the renter's pages (a neutral word stands in for the operator's brand). */
export const SERVICE_NAME = "Deposit protection"

/**
 * An email address that wraps before its `@` and its dots when the line is too short (a phone's width), rather
 * than mid-word; its class lets it break anywhere only when one part alone is still too long.
 */
export const emailText = (email: string) =>
  html`<span class="email"
    >${email.split(/(?=[@.])/).map((part, index) => [index === 0 ? undefined : raw("<wbr />"), part])}</span
  >`

/** A message about one field; `field` is the id of the input the summary links to. */
export interface FieldError {
  readonly field: string
  readonly message: string
}

/** The notice of how the service uses the renter's data, served by the enrollment host. */
export const PRIVACY_PATH = "/enrollment/privacy"

/** The terms of every product, served by the enrollment host; each product's terms are under it. */
export const TERMS_PATH = "/enrollment/terms"

/** A link that opens beside the form, so a renter who reads the terms keeps what they typed. */
export const newTabLink = (href: string, text: string) =>
  html`<a href="${href}" target="_blank" rel="noopener">${text} (opens in new tab)</a>`

export interface PageContent {
  readonly title: string
  readonly errors?: ReadonlyArray<FieldError>
  readonly body: SafeHtml
  /** Who stands behind the service: the footer names the insurer and a contact. */
  readonly issuer: IssuerConfigShape
  /** Where the renter is in the journey, shown above the heading ("Step 2 of 5"). */
  readonly progress?: { readonly step: number; readonly of: number }
  /** The HTTPS origins the page's script may tell its height and outcome (embedded flow only). */
  readonly parentOrigins?: ReadonlyArray<string>
  /** The owner whose renters the journey is for (their display name), shown in the header. */
  readonly ownerName?: string | undefined
}

const footer = (issuer: IssuerConfigShape) =>
  html`<footer class="footer">
    <div class="footer__inner">
      <p>
        Questions about your deposit protection? Email
        <a href="mailto:${issuer.supportEmail}">${emailText(issuer.supportEmail)}</a>${
          issuer.supportPhone === undefined
            ? undefined
            : html` or call
                <a href="tel:${issuer.supportPhone.replace(/[^\d+]/g, "")}">${issuer.supportPhone}</a>`
        }.
      </p>
      <p>Deposit insurance and the renter guarantee are issued by ${issuer.insurerName}.</p>
      <ul class="footer__links">
        <li><a href="${PRIVACY_PATH}">Privacy notice</a></li>
        <li><a href="${TERMS_PATH}">Terms</a></li>
      </ul>
    </div>
  </footer>`

export const page = (content: PageContent): string => {
  const errors = content.errors ?? []
  const title = `${errors.length > 0 ? "Error: " : ""}${content.title} - ${SERVICE_NAME}`
  const progress = content.progress
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex, nofollow" />
        <title>${title}</title>
        <link rel="stylesheet" href="${stylesheet.href}" />
        <script src="${script.href}" defer></script>
      </head>
      <body data-parent-origins="${(content.parentOrigins ?? []).join(" ")}">
        <a class="skip-link" href="#main">Skip to main content</a>
        <header class="header">
          ${SERVICE_NAME}${
            content.ownerName === undefined || content.ownerName === ""
              ? undefined
              : html`<span class="header__owner">Offered by ${content.ownerName}</span>`
          }
        </header>
        <main class="main" id="main">
          ${errorSummary(errors)}
          ${progress === undefined ? undefined : html`<p class="caption">Step ${progress.step} of ${progress.of}</p>`}
          ${content.body}
        </main>
        ${footer(content.issuer)}
      </body>
    </html> `.markup
}

const errorSummary = (errors: ReadonlyArray<FieldError>) =>
  errors.length === 0
    ? undefined
    : html`<div class="error-summary" role="alert" tabindex="-1" aria-labelledby="error-summary-title">
        <h2 id="error-summary-title">There is a problem</h2>
        <ul>
          ${errors.map((error) => html`<li><a href="#${error.field}">${error.message}</a></li>`)}
        </ul>
      </div>`

/** The error of field `id`, if any. */
export const errorOf = (errors: ReadonlyArray<FieldError> | undefined, id: string) =>
  errors?.find((error) => error.field === id)?.message

const describedBy = (...ids: ReadonlyArray<string | undefined>) => {
  const present = ids.filter((id): id is string => id !== undefined)
  return present.length > 0 ? html` aria-describedby="${present.join(" ")}"` : undefined
}

const hintOf = (id: string, hint: Fragment | undefined) =>
  hint === undefined ? undefined : html`<div class="hint" id="${id}-hint">${hint}</div>`

const errorMessageOf = (id: string, error: string | undefined) =>
  error === undefined
    ? undefined
    : html`<p class="error-message" id="${id}-error"><span class="visually-hidden">Error:</span> ${error}</p>`

export interface TextInput {
  readonly id: string
  readonly name: string
  readonly label: string
  readonly hint?: Fragment
  readonly error?: string | undefined
  readonly value?: string | undefined
  readonly type?: "text" | "email" | "tel"
  readonly inputmode?: "numeric" | "decimal" | "tel" | "email"
  readonly autocomplete?: string
  /** A unit shown before the input, such as `$`. */
  readonly prefix?: string
  readonly short?: boolean
  readonly spellcheck?: false
}

export const textInput = (input: TextInput) => {
  const classes = ["input", input.short ? "input--short" : "", input.error ? "input--error" : ""]
    .filter(Boolean)
    .join(" ")
  const field = html`<input
    class="${classes}"
    id="${input.id}"
    name="${input.name}"
    type="${input.type ?? "text"}"
    value="${input.value ?? ""}"
    ${input.inputmode ? html` inputmode="${input.inputmode}"` : undefined}${
      input.autocomplete ? html` autocomplete="${input.autocomplete}"` : undefined
    }${input.spellcheck === false ? html` spellcheck="false"` : undefined}${describedBy(
      input.hint === undefined ? undefined : `${input.id}-hint`,
      input.error === undefined ? undefined : `${input.id}-error`,
    )}
  />`
  return html`<div class="form-group${input.error ? " form-group--error" : ""}">
    <label class="label" for="${input.id}">${input.label}</label>
    ${hintOf(input.id, input.hint)} ${errorMessageOf(input.id, input.error)}
    ${
      input.prefix === undefined
        ? field
        : html`<div class="input-prefixed">
            <span class="input-prefix" aria-hidden="true">${input.prefix}</span>${field}
          </div>`
    }
  </div>`
}

export interface Choice {
  readonly value: string
  readonly label: string
  readonly hint?: Fragment
}

export interface Radios {
  /** The fieldset's id prefix; the first radio's id is `id` itself, so the error summary can link to it. */
  readonly id: string
  readonly name: string
  readonly legend: string
  /** The legend as the page's heading (one question on the page). */
  readonly legendIsHeading?: boolean
  readonly hint?: Fragment
  readonly error?: string | undefined
  readonly choices: ReadonlyArray<Choice>
  readonly checked?: string | undefined
}

export const radios = (input: Radios) => {
  const legend = input.legendIsHeading
    ? html`<legend class="legend"><h1>${input.legend}</h1></legend>`
    : html`<legend class="legend">${input.legend}</legend>`
  return html`<div class="form-group${input.error ? " form-group--error" : ""}">
    <fieldset${describedBy(
      input.hint === undefined ? undefined : `${input.id}-hint`,
      input.error === undefined ? undefined : `${input.id}-error`,
    )}>
      ${legend} ${hintOf(input.id, input.hint)} ${errorMessageOf(input.id, input.error)}
      ${input.choices.map((choice, index) => {
        const id = index === 0 ? input.id : `${input.id}-${index + 1}`
        return html`<div class="radio">
          <input
            class="radio__input"
            id="${id}"
            name="${input.name}"
            type="radio"
            value="${choice.value}"
            ${
              choice.value === input.checked ? html` checked` : undefined
            }${choice.hint === undefined ? undefined : html` aria-describedby="${id}-item-hint"`}
          />
          <label class="radio__label" for="${id}">${choice.label}</label>
          ${
            // Not `${id}-hint`: the first radio's id is the group's, whose hint has that id.
            choice.hint === undefined
              ? undefined
              : html`<span class="radio__hint" id="${id}-item-hint">${choice.hint}</span>`
          }
        </div>`
      })}
    </fieldset>
  </div>`
}

export interface Checkbox {
  readonly id: string
  readonly name: string
  readonly label: Fragment
  readonly error?: string | undefined
  readonly checked?: boolean
}

/** One checkbox that must be ticked (agreeing to terms). */
export const checkbox = (input: Checkbox) =>
  html`<div class="form-group${input.error ? " form-group--error" : ""}">
    ${errorMessageOf(input.id, input.error)}
    <div class="checkbox">
      <input
        class="checkbox__input"
        id="${input.id}"
        name="${input.name}"
        type="checkbox"
        value="yes"
        ${
          input.checked ? html` checked` : undefined
        }${input.error === undefined ? undefined : html` aria-describedby="${input.id}-error"`}
      />
      <label class="checkbox__label" for="${input.id}">${input.label}</label>
    </div>
  </div>`

export interface SummaryRow {
  readonly key: string
  readonly value: Fragment
}

export const summaryList = (rows: ReadonlyArray<SummaryRow>) =>
  html`<dl class="summary-list">
    ${rows.map(
      (row) =>
        html`<div class="summary-list__row">
          <dt class="summary-list__key">${row.key}</dt>
          <dd class="summary-list__value">${row.value}</dd>
        </div>`,
    )}
  </dl>`

/**
 * A form posting to the link's own address (a form without an action posts to the page's URL, path and query)
 * with the CSRF token and
 * the step it answers, so an answer to a step the journey has left is recognized.
 */
export const form = (input: { readonly token: string; readonly step: string; readonly body: Fragment }) =>
  html`<form method="post" novalidate>
    <input type="hidden" name="csrf_token" value="${input.token}" />
    <input type="hidden" name="step" value="${input.step}" />
    ${input.body}
  </form>`

export const button = (text: string) => html`<button class="button" type="submit">${text}</button>`
