import { Schema } from "effect"
import { AttemptMessage } from "/work/main/backend/webhooks/Messages.ts"
const a = Schema.decodeUnknownResult(Schema.fromJsonString(AttemptMessage))
const b = Schema.decodeUnknownResult(AttemptMessage)
const s = '{"delivery_id":123456,"series":1,"attempt":1}'
const time = (name: string, f: () => unknown) => {
  for (let i = 0; i < 100000; i++) f()
  const t = performance.now()
  for (let i = 0; i < 500000; i++) f()
  console.log(name, ((performance.now() - t) * 1000 / 500000).toFixed(3), "µs")
}
time("fromJsonString", () => a(s))
time("parse+struct", () => b(JSON.parse(s)))
time("parse only", () => JSON.parse(s))
