import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  scrypt as scryptCallback,
  type ScryptOptions,
  timingSafeEqual,
} from "node:crypto"
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "./Config.ts"

const scrypt = (secret: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCallback(secret, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  )

/**
 * scrypt with r=8, p=1 and N=2^SECRET_HASH_COST (2^15 by default, 32 MiB a hash: slow enough to resist
 * guessing; tests take a cheaper N, which each stored hash names). `maxmem` is twice what the highest cost needs.
 */
const SCRYPT = { r: 8, p: 1, maxmem: 256 * 1024 * 1024 } as const
const HASH_BYTES = 32
const SEALED_VERSION = 1

/** Random bytes as URL-safe text, for identifiers and secrets. */
export const randomToken = (bytes: number) => randomBytes(bytes).toString("base64url")

/** Constant-time comparison of two strings (different lengths compare unequal without early exit on content). */
export const constantTimeEqual = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** `scrypt$<N>$<r>$<p>$<salt>$<hash>`, so parameters can be raised later without breaking stored hashes. */
const hashWithCost = (cost: number) => (secret: string) =>
  Effect.promise(async () => {
    const salt = randomBytes(16)
    const N = 2 ** cost
    const hash = await scrypt(secret, salt, HASH_BYTES, { N, ...SCRYPT })
    return ["scrypt", N, SCRYPT.r, SCRYPT.p, salt.toString("base64"), hash.toString("base64")].join("$")
  })

export const verifySecret = (secret: string, stored: string) =>
  Effect.promise(async () => {
    const [scheme, n, r, p, salt, hash] = stored.split("$")
    if (scheme !== "scrypt" || !salt || !hash) return false
    const expected = Buffer.from(hash, "base64")
    const actual = await scrypt(secret, Buffer.from(salt, "base64"), expected.length, {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: SCRYPT.maxmem,
    })
    return timingSafeEqual(actual, expected)
  })

export interface CryptoShape {
  /** AES-256-GCM under MASTER_KEY: version byte, 12-byte IV, 16-byte tag, ciphertext. */
  readonly seal: (plaintext: Uint8Array) => Effect.Effect<Buffer>
  readonly open: (sealed: Uint8Array) => Effect.Effect<Buffer>
  /**
   * HMAC-SHA256 of `message` (base64url) under a key derived from MASTER_KEY for `purpose` alone, so a tag made
   * for one purpose is worthless for another and every process of a deployment makes the same tags.
   */
  readonly mac: (purpose: string, message: string) => string
  /** A client secret's or password's hash, at the configured cost. */
  readonly hashSecret: (secret: string) => Effect.Effect<string>
}

/**
 * MASTER_KEY, or in development (where Config lets it be absent) a key generated once into the data folder
 * and reused, so local secrets survive restarts without anyone handling a key.
 */
const masterKey = Effect.gen(function* () {
  const config = yield* AppConfig
  if (Option.isSome(config.masterKey)) return Buffer.from(Redacted.value(config.masterKey.value), "base64")
  const file = `${config.dataDir}/master.key`
  return yield* Effect.promise(async () => {
    await mkdir(config.dataDir, { recursive: true })
    const fresh = randomBytes(32).toString("base64")
    // `wx`: when two processes start at once, the first writes and both read the same key.
    await writeFile(file, fresh, { mode: 0o600, flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error
    })
    return Buffer.from((await readFile(file, "utf8")).trim(), "base64")
  })
})

export class Crypto extends Context.Service<Crypto, CryptoShape>()("partner-service/platform/Crypto") {
  static readonly layer = Layer.effect(
    Crypto,
    Effect.gen(function* () {
      const key = yield* masterKey
      const seal = (plaintext: Uint8Array) =>
        Effect.sync(() => {
          const iv = randomBytes(12)
          const cipher = createCipheriv("aes-256-gcm", key, iv)
          const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
          return Buffer.concat([Buffer.from([SEALED_VERSION]), iv, cipher.getAuthTag(), body])
        })
      const open = (sealed: Uint8Array) =>
        Effect.try({
          try: () => {
            const bytes = Buffer.from(sealed)
            if (bytes[0] !== SEALED_VERSION) throw new Error(`unknown sealed format ${bytes[0]}`)
            const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(1, 13))
            decipher.setAuthTag(bytes.subarray(13, 29))
            return Buffer.concat([decipher.update(bytes.subarray(29)), decipher.final()])
          },
          catch: (cause) =>
            new Error(
              "a secret stored in the database could not be opened: MASTER_KEY is not the key it was sealed " +
                "with (or the data is damaged)",
              { cause },
            ),
        }).pipe(Effect.orDie)
      const purposeKeys = new Map<string, Buffer>()
      const mac = (purpose: string, message: string) => {
        let purposeKey = purposeKeys.get(purpose)
        if (purposeKey === undefined) {
          purposeKey = Buffer.from(
            hkdfSync("sha256", key, Buffer.alloc(0), `partner-service mac ${purpose}`, 32),
          )
          purposeKeys.set(purpose, purposeKey)
        }
        return createHmac("sha256", purposeKey).update(message).digest("base64url")
      }
      return Crypto.of({ seal, open, mac, hashSecret: hashWithCost((yield* AppConfig).secretHashCost) })
    }),
  )
}
