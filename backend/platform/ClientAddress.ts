import ipaddr from "ipaddr.js"
import type { AppConfigShape } from "./Config.ts"

type Networks = AppConfigShape["trustedProxies"]

/** An address as written by a socket or a proxy (`::ffff:1.2.3.4`, `[::1]:443`, `1.2.3.4:80`), if it is one. */
const parsed = (text: string) => {
  let bare = text.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(bare)
  if (bracketed) bare = bracketed[1]!
  else if (/^[\d.]+:\d+$/.test(bare)) bare = bare.slice(0, bare.indexOf(":"))
  return ipaddr.isValid(bare) ? ipaddr.process(bare) : undefined
}

const within = (address: ipaddr.IPv4 | ipaddr.IPv6, networks: Networks) =>
  networks.some(([network, bits]) => address.kind() === network.kind() && address.match(network, bits))

/**
 * The address a request came from, as every throttle keys on it: the socket's, unless the socket is one of
 * `TRUSTED_PROXIES`; then the right-most `X-Forwarded-For` entry that is not itself a trusted proxy (entries
 * further left were written by the client and prove nothing). An entry that is no address stops the walk at
 * the last trusted hop. IPv4-mapped IPv6 addresses are plain IPv4.
 */
export const clientAddress = (socketAddress: string, forwardedFor: string | null, trusted: Networks) => {
  const socket = parsed(socketAddress)
  if (socket === undefined) return socketAddress
  let client = socket
  if (trusted.length > 0 && forwardedFor !== null && within(socket, trusted)) {
    const hops = forwardedFor.split(",")
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parsed(hops[i]!)
      if (hop === undefined) break
      client = hop
      if (!within(hop, trusted)) break
    }
  }
  return client.toString()
}

/**
 * Where requests come from, as throttles count them: an IPv4 address, or an IPv6 address's /64 (one site's
 * network, whose addresses its owner has plenty of).
 */
export const throttleSource = (address: string): string => {
  if (!ipaddr.isValid(address)) return address
  const parsed = ipaddr.process(address)
  if (parsed.kind() === "ipv4") return parsed.toString()
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4)
  return `${parts.map((p) => p.toString(16)).join(":")}::/64`
}
