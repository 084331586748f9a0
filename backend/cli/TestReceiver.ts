import "reflect-metadata"
import type { webcrypto } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:https"
import { isIP, type AddressInfo } from "node:net"
import { dirname, join } from "node:path"
import * as x509 from "@peculiar/x509"
import { Clock, Effect, Queue } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { WebhookCommandRejected } from "../webhooks/Domain.ts"
import { testReceiverCaFile } from "../webhooks/delivery/Egress.ts"
import { Secrets } from "../webhooks/endpoints/Secrets.ts"
import type { Input } from "./CommandLine.ts"
import { CliIo } from "./Io.ts"
import { CliUsage } from "./Usage.ts"

/**
 * `webhooks test-receiver`: a local HTTPS receiver for a partner developer's first deliveries, the role
 * `stripe listen` plays for Stripe. Its certificate is signed by a CA kept in the data folder, which the service
 * trusts outside production (see `testReceiverCaFile`); each delivery is answered 200 and printed with whether its
 * signature verifies against the current secrets of the owner or provider it went to.
 */

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const
const DAY_MS = 86_400_000

interface Ca {
  readonly cert: x509.X509Certificate
  readonly key: webcrypto.CryptoKey
}

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trimEnd()}\n-----END ${label}-----\n`

/** The CA's certificate and key, failing when the data folder has none yet. */
const readCa = (caFile: string) =>
  Effect.tryPromise(async (): Promise<Ca> => {
    const keyPem = readFileSync(join(dirname(caFile), "ca.key"), "utf8")
    const der = Buffer.from(keyPem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64")
    return {
      cert: new x509.X509Certificate(readFileSync(caFile, "utf8")),
      key: await crypto.subtle.importKey("pkcs8", der, ALGORITHM, false, ["sign"]),
    }
  })

/** The data folder's CA, made on first use; two receivers starting together keep whichever was written first. */
const ensureCa = (caFile: string, now: number) =>
  Effect.gen(function* () {
    const existing = yield* readCa(caFile).pipe(Effect.option)
    if (existing._tag === "Some") return existing.value
    const made = yield* Effect.promise(async () => {
      const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"])
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        name: "CN=Partner service test receiver CA",
        keys,
        signingAlgorithm: ALGORITHM,
        notBefore: new Date(now - DAY_MS),
        notAfter: new Date(now + 3650 * DAY_MS),
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        ],
      })
      return { cert, der: await crypto.subtle.exportKey("pkcs8", keys.privateKey) }
    })
    const folder = dirname(caFile)
    mkdirSync(dirname(folder), { recursive: true })
    const staging = mkdtempSync(`${folder}-`)
    writeFileSync(join(staging, "ca.key"), pem("PRIVATE KEY", made.der), { mode: 0o600 })
    writeFileSync(join(staging, "ca.pem"), made.cert.toString("pem"))
    try {
      renameSync(staging, folder)
    } catch {
      rmSync(staging, { recursive: true, force: true })
    }
    return yield* readCa(caFile).pipe(Effect.orDie)
  })

/** A certificate for `host` (and 127.0.0.1, localhost), signed by the CA, with its private key. */
const serverCertificate = (ca: Ca, host: string, now: number) =>
  Effect.promise(async () => {
    const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"])
    const names = new Map<string, "ip" | "dns">([
      ["127.0.0.1", "ip"],
      ["localhost", "dns"],
      [host, isIP(host) === 0 ? "dns" : "ip"],
    ])
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${host}`,
      issuer: ca.cert.subject,
      publicKey: keys.publicKey,
      signingKey: ca.key,
      signingAlgorithm: ALGORITHM,
      notBefore: new Date(now - DAY_MS),
      notAfter: new Date(now + 30 * DAY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([...names].map(([value, type]) => ({ type, value }))),
      ],
    })
    return {
      cert: `${cert.toString("pem")}\n`,
      key: pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
    }
  })

interface Arrival {
  readonly event: string
  readonly deliveryId: string
  readonly signature: string
  readonly body: Buffer
}

const header = (value: string | Array<string> | undefined) => (Array.isArray(value) ? value[0] : value) ?? ""

const portOf = (value: string | undefined) =>
  value === undefined
    ? Effect.succeed(0)
    : /^\d{1,5}$/.test(value) && Number(value) <= 65_535
      ? Effect.succeed(Number(value))
      : Effect.fail(new CliUsage({ message: `--port must be a port number from 0 to 65535, not '${value}'` }))

export const testReceiver = Effect.fn("cli.webhooks.testReceiver")(function* (
  input: Input<"webhooks test-receiver">,
) {
  const config = yield* AppConfig
  if (config.serviceEnv === "production") {
    return yield* new WebhookCommandRejected({
      message:
        "webhooks test-receiver is for development and staging; it is refused with SERVICE_ENV=production",
    })
  }
  const port = yield* portOf(input.options.port)
  const host = input.options.host ?? "127.0.0.1"
  const io = yield* CliIo
  const secrets = yield* Secrets
  const now = yield* Clock.currentTimeMillis
  const ca = yield* ensureCa(testReceiverCaFile(config.dataDir), now)
  const tls = yield* serverCertificate(ca, host, now)
  const arrivals = yield* Queue.unbounded<Arrival>()

  const server = yield* Effect.acquireRelease(
    Effect.callback<ReturnType<typeof createServer>, WebhookCommandRejected>((resume) => {
      const server = createServer(tls, (request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          response.writeHead(200).end()
          Queue.offerUnsafe(arrivals, {
            event: header(request.headers["x-webhook-event"]) || "(no X-Webhook-Event)",
            deliveryId: header(request.headers["x-webhook-delivery"]) || "(no X-Webhook-Delivery)",
            signature: header(request.headers["x-webhook-signature"]),
            body: Buffer.concat(chunks),
          })
        })
      })
      server.once("error", (error) =>
        resume(
          Effect.fail(
            new WebhookCommandRejected({ message: `cannot listen on ${host}:${port}: ${error.message}` }),
          ),
        ),
      )
      server.listen(port, host, () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  )
  const bound = (server.address() as AddressInfo).port
  const shown = isIP(host) === 6 ? `[${host}]` : host
  io.stdout(`https://${shown}:${bound}/\n`)
  io.stderr(`test receiver: register the URL above as an endpoint's destination_url; ctrl-C to stop\n`)
  return yield* Effect.forever(
    Effect.gen(function* () {
      const arrival = yield* Queue.take(arrivals)
      const valid = yield* secrets.verifyDelivery(arrival.deliveryId, arrival.signature, arrival.body)
      io.stdout(`${arrival.event} ${arrival.deliveryId} signature ${valid ? "valid" : "invalid"}\n`)
    }),
  )
})
