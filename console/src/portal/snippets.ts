import type { SigningHeaders } from "../../../backend/portal/Api.ts"

/*
 * The "verify signatures" snippets: for each language a function a partner's receiver can paste, checking the
 * service's `t=<timestamp>,v1=<hex>[,v1=<hex>]` header (the lowercase hex HMAC-SHA256 of `<t>.<raw body>`, keyed
 * with the secret string) under the header names the session gives. Each takes the raw body exactly as received:
 * a body parsed and serialised again no longer matches.
 */

export const SNIPPET_LANGUAGES = ["node", "python", "ruby", "php", "go"] as const
export type SnippetLanguage = (typeof SNIPPET_LANGUAGES)[number]

export const SNIPPET_LABELS: Readonly<Record<SnippetLanguage, string>> = {
  node: "Node.js",
  python: "Python",
  ruby: "Ruby",
  php: "PHP",
  go: "Go",
}

/** How old a signature a receiver accepts, in seconds: it refuses a delivery replayed later than this. */
export const TOLERANCE_SECONDS = 300

/** `X-Webhook-Signature` as a CGI variable (Rack, PHP): `HTTP_X_WEBHOOK_SIGNATURE`. */
const cgiName = (header: string) => `HTTP_${header.toUpperCase().replaceAll("-", "_")}`

const node = (headers: SigningHeaders) => `const crypto = require("node:crypto")

// rawBody: the request body as received (a Buffer), before any JSON parsing.
// headers: Node's req.headers (names lowercased).
function verifyWebhook(rawBody, headers, secret, toleranceSeconds = ${TOLERANCE_SECONDS}) {
  const header = headers["${headers.signature.toLowerCase()}"]
  if (typeof header !== "string") return false
  const parts = header.split(",").map((part) => part.trim())
  const t = parts.find((part) => part.startsWith("t="))?.slice(2)
  if (!t || !/^\\d+$/.test(t)) return false
  if (Math.abs(Date.now() / 1000 - Number(t)) > toleranceSeconds) return false
  const expected = crypto.createHmac("sha256", secret).update(\`\${t}.\`).update(rawBody).digest()
  return parts
    .filter((part) => part.startsWith("v1="))
    .map((part) => Buffer.from(part.slice(3), "hex"))
    .some((signature) => signature.length === expected.length && crypto.timingSafeEqual(signature, expected))
}
`

const python = (headers: SigningHeaders) => `import hashlib
import hmac
import time


# raw_body: the request body as received (bytes), before any JSON parsing.
# headers: the request's headers (Flask's request.headers, Django's request.headers).
def verify_webhook(raw_body: bytes, headers, secret: str, tolerance_seconds: int = ${TOLERANCE_SECONDS}) -> bool:
    header = headers.get("${headers.signature}")
    if not header:
        return False
    parts = [part.strip() for part in header.split(",")]
    t = next((part[2:] for part in parts if part.startswith("t=")), "")
    if not (t.isascii() and t.isdigit()):
        return False
    if abs(time.time() - int(t)) > tolerance_seconds:
        return False
    expected = hmac.new(secret.encode(), t.encode() + b"." + raw_body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(part[3:], expected) for part in parts if part.startswith("v1="))
`

const ruby = (headers: SigningHeaders) => `require "openssl"

# raw_body: request.body.read, before any JSON parsing; env: the Rack env (request.env).
def verify_webhook(raw_body, env, secret, tolerance_seconds = ${TOLERANCE_SECONDS})
  header = env["${cgiName(headers.signature)}"] or return false
  parts = header.split(",").map(&:strip)
  t = parts.find { |part| part.start_with?("t=") }&.delete_prefix("t=")
  return false unless t&.match?(/\\A\\d+\\z/)
  return false if (Time.now.to_i - t.to_i).abs > tolerance_seconds
  expected = OpenSSL::HMAC.hexdigest("SHA256", secret, "#{t}.#{raw_body}")
  parts.any? { |part| part.start_with?("v1=") && OpenSSL.secure_compare(part.delete_prefix("v1="), expected) }
end
`

const php = (headers: SigningHeaders) => `<?php
// $rawBody = file_get_contents('php://input'); before any json_decode.
function verify_webhook(string $rawBody, string $secret, int $toleranceSeconds = ${TOLERANCE_SECONDS}): bool
{
    $header = $_SERVER['${cgiName(headers.signature)}'] ?? '';
    $t = null;
    $signatures = [];
    foreach (array_map('trim', explode(',', $header)) as $part) {
        if (str_starts_with($part, 't=')) {
            $t = substr($part, 2);
        } elseif (str_starts_with($part, 'v1=')) {
            $signatures[] = substr($part, 3);
        }
    }
    if ($t === null || !ctype_digit($t) || abs(time() - (int) $t) > $toleranceSeconds) {
        return false;
    }
    $expected = hash_hmac('sha256', $t . '.' . $rawBody, $secret);
    foreach ($signatures as $signature) {
        if (hash_equals($expected, $signature)) {
            return true;
        }
    }
    return false;
}
`

const go = (headers: SigningHeaders) => `import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// rawBody: the request body as read (io.ReadAll(r.Body)), before any JSON decoding.
func VerifyWebhook(r *http.Request, rawBody []byte, secret string) bool {
	var t string
	var signatures []string
	for _, part := range strings.Split(r.Header.Get("${headers.signature}"), ",") {
		part = strings.TrimSpace(part)
		if value, ok := strings.CutPrefix(part, "t="); ok {
			t = value
		} else if value, ok := strings.CutPrefix(part, "v1="); ok {
			signatures = append(signatures, value)
		}
	}
	sent, err := strconv.ParseUint(t, 10, 63)
	if err != nil {
		return false
	}
	if age := time.Now().Unix() - int64(sent); age > ${TOLERANCE_SECONDS} || age < -${TOLERANCE_SECONDS} {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t + "."))
	mac.Write(rawBody)
	expected := hex.EncodeToString(mac.Sum(nil))
	for _, signature := range signatures {
		if hmac.Equal([]byte(signature), []byte(expected)) {
			return true
		}
	}
	return false
}
`

const WRITERS: Readonly<Record<SnippetLanguage, (headers: SigningHeaders) => string>> = {
  node,
  python,
  ruby,
  php,
  go,
}

/** The snippet of `language` checking deliveries signed under these header names. */
export const verificationSnippet = (language: SnippetLanguage, headers: SigningHeaders) =>
  WRITERS[language](headers)

/** What a delivery's signature header looks like during a rotation's overlap, and what it means. */
export const overlapExample = (headers: SigningHeaders) =>
  `${headers.signature}: t=1767225600,v1=<signed with the new secret>,v1=<signed with the previous secret>`
