// The pages work without this script; it only moves focus to errors, stops a form being sent twice, writes a
// card's expiry as MM/YY while it is typed and, in a frame, tells the parent window the page's height and, on a
// terminal page, how the enrollment ended.
"use strict"

/** The origins the parent window may be, from the page: the owner's frame ancestors (embedded pages only). */
const parentOrigins = () => (document.body.dataset.parentOrigins || "").split(" ").filter(Boolean)

/** Posts `message` to the parent window, when the parent's origin is one the owner allows. */
const tellParent = (message) => {
  const allowed = parentOrigins()
  const ancestors = window.location.ancestorOrigins
  if (ancestors && ancestors.length > 0) {
    // The parent's origin is known: the message goes to it alone, and only when the owner allows it.
    if (allowed.includes(ancestors[0])) window.parent.postMessage(message, ancestors[0])
  } else {
    // Browsers without ancestorOrigins: the browser delivers it only to the one allowed origin that is the parent.
    for (const origin of allowed) window.parent.postMessage(message, origin)
  }
}

/** `1229`, `12 / 29` or `1/29` as `12/29`, keeping what the renter deletes deleted. */
const formatExpiry = (input, event) => {
  if (event.inputType && event.inputType.startsWith("delete")) return
  let digits = input.value.replace(/\D/g, "").slice(0, 6)
  if (/^\d\s*\//.test(input.value) || /^[2-9]/.test(digits)) digits = `0${digits}`.slice(0, 6)
  input.value = digits.length >= 2 ? `${digits.slice(0, 2)}/${digits.slice(2)}` : digits
}

document.addEventListener("DOMContentLoaded", () => {
  const summary = document.querySelector(".error-summary")
  if (summary) {
    summary.focus()
    // A link of the summary moves focus to its field (a fragment alone only scrolls to it).
    summary.addEventListener("click", (event) => {
      const link = event.target.closest("a[href^='#']")
      const field = link && document.getElementById(link.getAttribute("href").slice(1))
      if (!field) return
      event.preventDefault()
      const fieldset = field.closest("fieldset")
      const heading =
        (fieldset && fieldset.querySelector("legend")) || document.querySelector(`label[for="${field.id}"]`)
      ;(heading || field).scrollIntoView()
      field.focus({ preventScroll: true })
    })
  }

  for (const form of document.querySelectorAll("form")) {
    form.addEventListener("submit", (event) => {
      if (form.dataset.submitted === "true") event.preventDefault()
      else form.dataset.submitted = "true"
    })
  }

  for (const expiry of document.querySelectorAll("input[autocomplete='cc-exp']")) {
    expiry.addEventListener("input", (event) => formatExpiry(expiry, event))
  }

  if (window.parent === window) return
  // The parent sizes its frame to the page: every change of height is posted (docs/enrollment.md).
  let height = 0
  const resized = () => {
    const now = Math.ceil(document.documentElement.getBoundingClientRect().height)
    if (now === height) return
    height = now
    tellParent({ type: "enrollment.resize", height })
  }
  resized()
  if (window.ResizeObserver) new window.ResizeObserver(resized).observe(document.documentElement)
  else window.addEventListener("resize", resized)

  const outcome = document.querySelector("[data-outcome]")
  if (outcome) tellParent(outcome.dataset.outcome)
})

// A page restored from the back-forward cache may be submitted again.
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form")) delete form.dataset.submitted
})
