import { ref, shallowRef } from "vue"

/**
 * A dialog that shows something once (a new signing secret): while it is on screen, Escape or a close button
 * first asks whether it was saved, and only "Yes, close" forgets it. The console's and the portal's rotations
 * share it, with `ShownOnceConfirm` for the question.
 */
export const useShownOnce = <A>() => {
  const open = ref(false)
  const shown = shallowRef<A>()
  /** Asked once the value is on screen and the dialog is being closed. */
  const confirming = ref(false)
  const openDialog = () => {
    shown.value = undefined
    confirming.value = false
    open.value = true
  }
  /** Escape or a close button: with the value shown, first ask whether it was saved. */
  const requestClose = () => {
    if (shown.value === undefined) open.value = false
    else confirming.value = true
  }
  /** "Yes, close": the value is forgotten with the dialog. */
  const discard = () => {
    shown.value = undefined
    confirming.value = false
    open.value = false
  }
  const keep = () => (confirming.value = false)
  return { open, shown, confirming, openDialog, requestClose, discard, keep }
}
