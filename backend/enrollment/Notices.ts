import type { IssuerConfigShape } from "../policies/Config.ts"
import { html } from "./Html.ts"
import { page } from "./Layout.ts"

/**
 * The pages that show no journey: the neutral page of a link that is not valid, a form that could not be
 * accepted, an address the host does not serve, and a failure of ours. Each is one body for every link.
 */

/**
 * The one answer to a link that names no prospect, a prospect that is not eligible, or an `email` that is not the
 * prospect's: the same status and the same bytes for all of them, so the page tells nobody which it was.
 */
export const NEUTRAL_STATUS = 404
export const neutralPage = (issuer: IssuerConfigShape) =>
  page({
    title: "This link is not valid",
    issuer,
    body: html`<h1>This link is not valid</h1>
      <p>The link you followed may be incomplete, or it may have been replaced by a newer one.</p>
      <p>Ask the company that sent you the link for a new one.</p>`,
  })

/**
 * The answer to every link and document from an address that opened too many links that were not valid lately,
 * valid or not, or that has too many of them being looked up at once: nothing was looked up, so it tells nothing
 * about the link; `Retry-After` says when to come back.
 */
export const THROTTLED_STATUS = 429
export const throttledPage = (issuer: IssuerConfigShape, reason: "failures" | "in_progress") =>
  reason === "in_progress"
    ? page({
        title: "Too many pages opened at once",
        issuer,
        body: html`<h1>Too many pages opened at once</h1>
          <p>Too many enrollment pages were opened at once from your network. Nothing has been changed.</p>
          <p>Wait a moment, then reload the page.</p>`,
      })
    : page({
        title: "Too many links that are not valid",
        issuer,
        body: html`<h1>Too many links that are not valid</h1>
          <p>
            Too many links that are not valid were opened from your network, so links from it are paused for a
            while.
          </p>
          <p>Wait a few minutes, then follow the link you were sent again.</p>`,
      })

/** An address of the renter's host that serves nothing: its root, a document that does not exist. */
export const notFoundPage = (issuer: IssuerConfigShape) =>
  page({
    title: "Page not found",
    issuer,
    body: html`<h1>Page not found</h1>
      <p>If you typed the web address, check it is correct. If you pasted it, check you copied all of it.</p>
      <p>
        To protect your deposit, follow the link the company renting you the home sent you. Your policy
        documents are linked from the page that confirmed your payment.
      </p>`,
  })

/** A form post that did not come from this page, or a page left open for more than a day. */
export const formRefusedPage = (issuer: IssuerConfigShape, linkPath: string) =>
  page({
    title: "Your answers were not sent",
    issuer,
    body: html`<h1>Your answers were not sent</h1>
      <p>This page was open for too long, or the form did not come from it. Nothing has been changed.</p>
      <p><a href="${linkPath}">Go back to your enrollment</a> and try again.</p>`,
  })

/** A request the pages could not read (too large, malformed). */
export const badRequestPage = (issuer: IssuerConfigShape) =>
  page({
    title: "Your answers could not be read",
    issuer,
    body: html`<h1>Your answers could not be read</h1>
      <p>Nothing has been changed. Go back, check your answers and send them again.</p>`,
  })

/** A failure of the service itself; the renter's answers are kept only if they had been accepted. */
export const unavailablePage = (issuer: IssuerConfigShape) =>
  page({
    title: "Sorry, there is a problem with the service",
    issuer,
    body: html`<h1>Sorry, there is a problem with the service</h1>
      <p>Try again in a few minutes. Answers you had already sent have been saved.</p>`,
  })
