const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  )

const page = (title: string, body: string) =>
  `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head>
<body><main>
${body}
</main></body>
</html>
`

/** What a link that cannot open a session shows, whatever the reason: nothing about why. */
export const linkNoLongerValidPage = () =>
  page(
    "Link no longer valid",
    `<h1>This link is no longer valid</h1>
<p>Open the webhooks portal again from your partner's app.</p>`,
  )

/**
 * What a link shows when its address may not open links for now: like a link that is no longer valid, it says
 * nothing of why, only to come back later (`Retry-After` says when).
 */
export const linkCannotOpenNowPage = () =>
  page(
    "Link cannot be opened now",
    `<h1>This link cannot be opened now</h1>
<p>Wait a few minutes, then open the webhooks portal again from your partner's app.</p>`,
  )

/** The portal's page while its app is not built (`npm start` builds it when missing). */
export const notBuiltPage = () =>
  page(
    "Webhooks portal",
    `<h1>Webhooks portal</h1>
<p>The portal's app is not built: run <code>npm run build</code>. Try again in a moment.</p>`,
  )

/** The portal's page without a session: how to open it. */
export const noSessionPage = () =>
  page(
    "Webhooks portal",
    `<h1>Webhooks portal</h1>
<p>Your session has ended. Open the webhooks portal again from your partner's app.</p>`,
  )
