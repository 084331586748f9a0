/**
 * Whether a nats-server version is older than 2.9.15. Those recount a filtered consumer's pending messages (a scan
 * of the stream block it is in) on every message they deliver, once the count was taken from partway through the
 * block that holds the whole backlog (by a consumer info call, such as our start-up's or an operator's, or when
 * the server loads its consumers), which slows the draining of a backlog several times over. Upstream fixed it in
 * 2.9.15 ("Do not re-calculate NumPending on consumer info calls"); Debian 12 packages 2.9.10. This check, and the
 * unfiltered consumers `Actor.ts` makes because of it, can go once no deployment runs a server older than 2.9.15.
 */
export const recountsPendingPerDelivery = (version: string) => {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version)
  if (match === null) return false
  const [major, minor, patch] = match.slice(1).map(Number) as [number, number, number]
  return major < 2 || (major === 2 && (minor < 9 || (minor === 9 && patch < 15)))
}
