/**
 * When framed, the portal tells its parent its height (`{type: "portal.resize", height}`, posted to the session's
 * parent origin only) whenever it changes, as the renter's enrollment pages post `enrollment.resize`.
 */
export const RESIZE_MESSAGE = "portal.resize"

export const postHeightTo = (parentOrigin: string) => {
  if (window.parent === window) return
  let height = 0
  const resized = () => {
    const now = Math.ceil(document.documentElement.getBoundingClientRect().height)
    if (now === height) return
    height = now
    window.parent.postMessage({ type: RESIZE_MESSAGE, height }, parentOrigin)
  }
  resized()
  new ResizeObserver(resized).observe(document.documentElement)
}
