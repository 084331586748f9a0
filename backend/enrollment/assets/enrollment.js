// The pages work without this script; it only moves focus to errors, stops a form being sent twice, writes a
// card's expiry as MM/YY while it is typed and, in a frame, moves focus to the page's heading and tells the parent
// window where that heading is (so the parent scrolls the new page into view), the page's height and, on a
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

/** How long the height must hold still before it is posted: a page settling posts its final height once. */
const RESIZE_SETTLE_MS = 100

/** The page's content height: the bottom of the body's last box, never the frame's own height. */
const contentHeight = () => {
  let bottom = 0
  for (const child of document.body.children) {
    if (child.tagName === "SCRIPT") continue
    const box = child.getBoundingClientRect()
    if (box.height === 0 && box.width === 0) continue
    const margin = parseFloat(window.getComputedStyle(child).marginBottom) || 0
    bottom = Math.max(bottom, box.bottom + window.scrollY + margin)
  }
  return Math.ceil(bottom)
}

/** Where `element` starts in the page, in CSS px. */
const topOf = (element) => Math.max(0, Math.floor(element.getBoundingClientRect().top + window.scrollY))

/** How often a section still being prepared (`data-refresh`) asks the page again, and for how long. */
const REFRESH_EVERY_MS = 2000
const REFRESH_TRIES = 90

/**
 * Fills `section` from the same page fetched again once the server has it ready (the receipt's documents): the
 * page is not reloaded, so focus and scroll stay where they are, and the section's live region announces it.
 */
const refreshWhenReady = (section) => {
  let tries = 0
  const again = async () => {
    tries += 1
    try {
      const response = await window.fetch(window.location.href, {
        cache: "no-store",
        credentials: "same-origin",
      })
      if (response.ok) {
        const page = new window.DOMParser().parseFromString(await response.text(), "text/html")
        const fresh = page.getElementById(section.id)
        if (fresh && !fresh.hasAttribute("data-refresh")) {
          section.replaceChildren(...Array.from(fresh.childNodes, (node) => document.importNode(node, true)))
          section.removeAttribute("data-refresh")
          return
        }
      }
    } catch {
      // A network error: asked again at the next turn.
    }
    if (tries < REFRESH_TRIES) window.setTimeout(again, REFRESH_EVERY_MS)
  }
  window.setTimeout(again, REFRESH_EVERY_MS)
}

document.addEventListener("DOMContentLoaded", () => {
  for (const section of document.querySelectorAll("[data-refresh][id]")) {
    if (window.fetch && window.DOMParser) refreshWhenReady(section)
  }

  const framed = window.parent !== window
  const summary = document.querySelector(".error-summary")
  // In a frame the browser keeps the parent where it was, often scrolled past the new page's top: the page's
  // first thing to read (the errors, else the heading) takes focus without scrolling, and the parent is told
  // where it is.
  const start = summary || (framed ? document.querySelector("main h1") : null)
  if (start && framed) {
    if (!start.hasAttribute("tabindex")) start.setAttribute("tabindex", "-1")
    start.focus({ preventScroll: true })
  }
  if (summary) {
    if (!framed) summary.focus()
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

  if (!framed) return
  // The parent sizes its frame to the page: the content's height once it holds still (docs/enrollment.md).
  let height = 0
  let timer
  const post = () => {
    timer = undefined
    const now = contentHeight()
    if (now === height || now === 0) return
    height = now
    tellParent({ type: "enrollment.resize", height })
  }
  const resized = () => {
    if (timer !== undefined) window.clearTimeout(timer)
    timer = window.setTimeout(post, RESIZE_SETTLE_MS)
  }
  post()
  // The top of the main content: the Back link and the step's number above the heading stay in view with it.
  if (start) tellParent({ type: "enrollment.scroll", top: topOf(document.querySelector("main") || start) })
  if (window.ResizeObserver) new window.ResizeObserver(resized).observe(document.body)
  else window.addEventListener("resize", resized)

  const outcome = document.querySelector("[data-outcome]")
  if (outcome) tellParent(outcome.dataset.outcome)
})

// A page restored from the back-forward cache may be submitted again.
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form")) delete form.dataset.submitted
})
