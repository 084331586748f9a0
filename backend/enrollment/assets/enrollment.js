// The pages work without this script; it only moves focus to errors, stops a form being sent twice and, on an
// embedded terminal page, tells the parent window how the enrollment ended.
"use strict"

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

  const outcome = document.querySelector("[data-outcome]")
  if (outcome && window.parent !== window) {
    const allowed = (outcome.dataset.parentOrigins || "").split(" ").filter(Boolean)
    const ancestors = window.location.ancestorOrigins
    if (ancestors && ancestors.length > 0) {
      // The parent's origin is known: the message goes to it alone, and only when the owner allows it.
      if (allowed.includes(ancestors[0])) window.parent.postMessage(outcome.dataset.outcome, ancestors[0])
    } else {
      // Browsers without ancestorOrigins: the browser delivers it only to the one allowed origin that is the parent.
      for (const origin of allowed) window.parent.postMessage(outcome.dataset.outcome, origin)
    }
  }
})

// A page restored from the back-forward cache may be submitted again.
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form")) delete form.dataset.submitted
})
