import { type LookupAddress, V4MAPPED } from "node:dns"
import { assert, describe, it } from "@effect/vitest"
import {
  DestinationRefused,
  guardedLookup,
  isForbiddenAddress,
  isLocalhostName,
} from "../../backend/webhooks/delivery/Egress.ts"

describe("a destination address", () => {
  it("is refused in every internal IPv4 range, at both ends", () => {
    for (const address of [
      "0.0.0.0",
      "0.255.255.255",
      "10.0.0.0",
      "10.255.255.255",
      "100.64.0.0",
      "100.127.255.255",
      "127.0.0.1",
      "127.255.255.255",
      "169.254.169.254",
      "172.16.0.0",
      "172.31.255.255",
      "192.0.0.1",
      "192.0.2.1",
      "192.168.0.1",
      "192.168.255.255",
      "198.18.0.0",
      "198.19.255.255",
      "198.51.100.7",
      "203.0.113.9",
      "224.0.0.1",
      "239.255.255.255",
      "240.0.0.1",
      "255.255.255.255",
    ])
      assert.isTrue(isForbiddenAddress(address), address)
  })

  it("is allowed for public IPv4 addresses, next to the internal ranges too", () => {
    for (const address of [
      "8.8.8.8",
      "1.1.1.1",
      "9.255.255.255",
      "11.0.0.0",
      "100.63.255.255",
      "100.128.0.0",
      "172.15.255.255",
      "172.32.0.0",
      "192.167.255.255",
      "192.169.0.0",
      "198.17.255.255",
      "198.20.0.0",
      "223.255.255.255",
    ])
      assert.isFalse(isForbiddenAddress(address), address)
  })

  it("is refused in every internal IPv6 range", () => {
    for (const address of [
      "::",
      "::1",
      "::a00:1",
      "100::1",
      "2001:db8::1",
      "fc00::1",
      "fd00:ec2::254",
      "64:ff9b:1::8.8.8.8",
      "fe80::1",
      "febf:ffff::1",
      "fec0::1",
      "ff02::1",
    ])
      assert.isTrue(isForbiddenAddress(address), address)
  })

  it("is allowed for public IPv6 addresses", () => {
    for (const address of ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::200e"])
      assert.isFalse(isForbiddenAddress(address), address)
  })

  it("is judged by the IPv4 address an IPv6 one carries, wherever its form puts it", () => {
    const carried = [
      ["::ffff:10.0.0.1", "::ffff:8.8.8.8"],
      ["::ffff:0:192.168.1.1", "::ffff:0:8.8.8.8"],
      ["64:ff9b::10.0.0.1", "64:ff9b::8.8.8.8"],
      ["2002:c0a8:101::1", "2002:808:808::1"],
      // Teredo: the server in bits 32-63, the client inverted in the last 32 bits.
      ["2001:0:a00:1::", "2001:0:808:808::f7f7:f7f7"],
      ["2001:0:808:808::f5ff:fffe", "2001:0:808:808::f7f7:f7f7"],
    ] as const
    for (const [internal, external] of carried) {
      assert.isTrue(isForbiddenAddress(internal), internal)
      assert.isFalse(isForbiddenAddress(external), external)
    }
  })

  it("is refused when it is no IP address at all", () => {
    for (const address of ["", "example.com", "999.1.1.1", "::g"])
      assert.isTrue(isForbiddenAddress(address), address)
  })
})

describe("a destination's host name", () => {
  it("is localhost, or a subdomain of it, in any case and with the root's trailing dots", () => {
    for (const name of [
      "localhost",
      "LOCALHOST",
      "localhost.",
      "LocalHost..",
      "api.localhost",
      "a.b.LOCALHOST.",
    ])
      assert.isTrue(isLocalhostName(name), name)
  })

  it("is not localhost when localhost is only part of a label or not the last one", () => {
    for (const name of [
      "localhost.example.com",
      "mylocalhost",
      "localhostx",
      "local.host",
      "example.com.",
      "",
    ])
      assert.isFalse(isLocalhostName(name), name)
  })
})

interface Lookup {
  readonly error: NodeJS.ErrnoException | null
  readonly address: string | Array<LookupAddress>
  readonly family: number | undefined
}

const lookup = (hostname: string, options: { all?: boolean; family?: number; hints?: number } = {}) =>
  new Promise<Lookup>((resolve) =>
    guardedLookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
  )

describe("resolving a destination", () => {
  it("refuses a host that resolves to an internal address, naming host and address", async () => {
    const { error, address } = await lookup("localhost", { all: true })
    assert.instanceOf(error, DestinationRefused)
    assert.strictEqual(error?.name, "DestinationRefused")
    assert.match(error?.message ?? "", /^Destination refused: localhost resolves to 127\.0\.0\.1, a private/)
    assert.strictEqual(address, "")
    assert.instanceOf((await lookup("10.1.2.3")).error, DestinationRefused)
  })

  it("hands back the addresses checked: all of them, or the first with its family", async () => {
    assert.deepStrictEqual(await lookup("8.8.8.8", { all: true }), {
      error: null,
      address: [{ address: "8.8.8.8", family: 4 }],
      family: undefined,
    })
    assert.deepStrictEqual(await lookup("2606:4700:4700::1111"), {
      error: null,
      address: "2606:4700:4700::1111",
      family: 6,
    })
  })

  it("resolves in the family and with the hints asked for", async () => {
    // localhost in IPv6: ::1, or where only its IPv4 address is known, that address mapped (V4MAPPED).
    const { error } = await lookup("localhost", { family: 6, hints: V4MAPPED })
    assert.instanceOf(error, DestinationRefused)
    assert.match(
      error?.message ?? "",
      /^Destination refused: localhost resolves to (::1|::ffff:127\.0\.0\.1), /,
    )
    const v4 = await lookup("localhost", { family: 4 })
    assert.match(v4.error?.message ?? "", /^Destination refused: localhost resolves to 127\.0\.0\.1, /)
  })

  it("passes a failed resolution on as it came", async () => {
    const { error, address } = await lookup("no-such-host.invalid")
    assert.isNotNull(error)
    assert.notInstanceOf(error, DestinationRefused)
    assert.strictEqual(address, "")
  })
})
