import { randomBytes } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { databaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"
import { freePort } from "../support/Net.ts"
import {
  awaitProspect,
  completeProspect,
  postProspect,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { baseDatabaseUrl } from "../support/TestPlatform.ts"

const base = databaseUrl(baseDatabaseUrl)
/** A former primary that no longer answers, listed first as a failover leaves it. */
const gone = `127.0.0.1:${await freePort()}`
const hostList = [gone, ...base.hosts.map(({ host, port }) => `${host}:${port ?? 5432}`)].join(",")
const service = prospectService({
  DATABASE_URL: withDatabase(
    { ...base, hostList, query: "target_session_attrs=primary" },
    `ps_test_${randomBytes(5).toString("hex")}`,
  ),
})

describe("a DATABASE_URL of several hosts with target_session_attrs=primary", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("starts on the host that answers as primary, stores prospects and decides them", () =>
      Effect.gen(function* () {
        const source = "vero-hosts"
        const { partner, slug } = yield* prospectSetUp("org-hosts", source)
        const created = yield* postProspect(partner, slug, completeProspect(source, "two-hosts"))
        assert.strictEqual(created.status, 200, created.text)
        assert.strictEqual(created.body.status_code, 201, created.text)
        yield* awaitProspect(partner, slug, source, "two-hosts")
      }),
    )
  })
})
