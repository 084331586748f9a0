import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { authService } from "../support/Auth.ts"
import {
  type BatchBody,
  createOwnerThroughApi,
  postBatch,
  postJson,
  postOwner,
  query,
  type RosterPartner,
  rosterPartner,
} from "../support/Roster.ts"
import { captureLogs } from "../support/Logs.ts"

/** Every line the service logs at every level, as production writes them. */
const { lines, layer: logs } = captureLogs("All")
const service = authService({ references: logs })

/**
 * Every account number of eight digits or more a test sent (shorter ones could occur in a log line by chance):
 * none may appear in a response or a log line.
 */
const sentAccountNumbers: Array<string> = []

let owners = 0
/** A fresh owner created through the API by a fresh partner. */
const ownerWithPartner = Effect.gen(function* () {
  const partner = yield* rosterPartner()
  owners++
  const slug = yield* createOwnerThroughApi(partner, {
    external_org_id: `org-bank-${owners}`,
    name: `Bank Owner ${owners}`,
  })
  return { partner, slug }
})

const account = (externalId: string, accountNumber: string, extra: Record<string, unknown> = {}) => {
  if (/^\d{8,}$/.test(accountNumber)) sentAccountNumbers.push(accountNumber)
  return {
    external_system_id: externalId,
    display_name: `Operating ${externalId}`,
    routing_number: "021000021",
    account_number: accountNumber,
    ...extra,
  }
}

/** The result of an applied account item as the contract shows it. */
const shown = (
  externalId: string,
  action: "created" | "updated",
  last4: string,
  isDefault: boolean,
  extra: Record<string, unknown> = {},
) => ({
  external_system_id: externalId,
  action,
  display_name: `Operating ${externalId}`,
  routing_number: "021000021",
  account_number_last4: last4,
  default: isDefault,
  ...extra,
})

const post = (partner: RosterPartner, slug: string, items: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const answer = yield* postJson<BatchBody>(partner, `/partners/${slug}/bank_accounts`, items)
    assert.strictEqual(answer.status, 200, answer.text)
    for (const number of sentAccountNumbers) assert.notInclude(answer.text, number)
    return answer.body
  })

const defaultAccountOf = (partner: RosterPartner, slug: string) =>
  Effect.gen(function* () {
    const [row] = yield* query(
      (sql) =>
        sql<Array<{ external_org_id: string }>>`select external_org_id from owners where slug = ${slug}`,
    )
    const answer = yield* postOwner(partner, { external_org_id: row!.external_org_id })
    return answer.body.property_owner.default_bank_account_external_id
  })

const storedAccounts = (slug: string) =>
  query(
    (sql) => sql<
      Array<{ external_system_id: string; display_name: string; account_number_last4: string }>
    >`select b.external_system_id, b.display_name, b.account_number_last4
      from bank_accounts b join owners o on o.id = b.owner_id where o.slug = ${slug} order by b.id`,
  ).pipe(Effect.map((rows) => [...rows]))

describe("POST /partners/{owner_slug}/bank_accounts", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    it.effect("makes the owner's first account its default", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        assert.isNull(yield* defaultAccountOf(partner, slug))
        const body = yield* post(partner, slug, [account("ba-1", "000123456789")])
        assert.deepStrictEqual(body, {
          status_code: 200,
          results: [shown("ba-1", "created", "6789", true)],
          meta: { created: 1, updated: 0, failed: 0 },
        })
        assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-1")
        const second = yield* post(partner, slug, [account("ba-2", "5550001111")])
        assert.deepStrictEqual(second.results, [shown("ba-2", "created", "1111", false)])
        assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-1")
      }),
    )

    it.effect("moves the default to a later account sent with default true", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* post(partner, slug, [account("ba-1", "11112222"), account("ba-2", "33334444")])
        const moved = yield* post(partner, slug, [account("ba-2", "33334444", { default: true })])
        assert.deepStrictEqual(moved.results, [shown("ba-2", "updated", "4444", true)])
        assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-2")
        const back = yield* post(partner, slug, [
          account("ba-3", "55556666", { default: true }),
          account("ba-1", "11112222", { default: true }),
        ])
        assert.deepStrictEqual(back.results, [
          shown("ba-3", "created", "6666", false),
          shown("ba-1", "updated", "2222", true),
        ])
        assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-1")
      }),
    )

    it.effect("rejects default false on the current default account, and the default stays", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* post(partner, slug, [account("ba-1", "11112222"), account("ba-2", "33334444")])
        const body = yield* post(partner, slug, [
          account("ba-1", "99990000", { default: false, display_name: "Renamed" }),
          account("ba-2", "33334444", { default: false }),
        ])
        assert.deepStrictEqual(body, {
          status_code: 200,
          results: [
            {
              external_system_id: "ba-1",
              action: "failed",
              errors: {
                default: [
                  "can't be false on the owner's default account: set default on another account to move it",
                ],
              },
            },
            shown("ba-2", "updated", "4444", false),
          ],
          meta: { created: 0, updated: 1, failed: 1 },
        })
        assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-1")
        assert.deepStrictEqual(yield* storedAccounts(slug), [
          { external_system_id: "ba-1", display_name: "Operating ba-1", account_number_last4: "2222" },
          { external_system_id: "ba-2", display_name: "Operating ba-2", account_number_last4: "4444" },
        ])
      }),
    )

    it.effect(
      "applies the same account sent in concurrent requests once: one account, created once, the default",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner
          const answers = yield* Effect.all(
            Array.from({ length: 8 }, () =>
              postJson<BatchBody>(partner, `/partners/${slug}/bank_accounts`, [
                account("ba-1", "000123456789"),
              ]),
            ),
            { concurrency: "unbounded" },
          )
          assert.deepStrictEqual(
            answers.map((answer) => answer.status),
            Array.from({ length: 8 }, () => 200),
            answers.map((answer) => answer.text).join("\n"),
          )
          const actions = answers.map((answer) => answer.body.results[0]!.action)
          assert.deepStrictEqual([...actions].sort(), [
            "created",
            ...Array.from({ length: 7 }, () => "updated"),
          ])
          assert.deepStrictEqual(
            answers.map((answer) => answer.body.results),
            actions.map((action) => [shown("ba-1", action as "created" | "updated", "6789", true)]),
          )
          assert.deepStrictEqual(yield* storedAccounts(slug), [
            { external_system_id: "ba-1", display_name: "Operating ba-1", account_number_last4: "6789" },
          ])
          assert.strictEqual(yield* defaultAccountOf(partner, slug), "ba-1")
        }),
    )

    it.effect("updates the existing account when it is sent again (upsert on external_system_id)", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const item = account("ba-1", "12345678")
        yield* post(partner, slug, [item])
        const again = yield* post(partner, slug, [item])
        assert.deepStrictEqual(again, {
          status_code: 200,
          results: [shown("ba-1", "updated", "5678", true)],
          meta: { created: 0, updated: 1, failed: 0 },
        })
        const changed = yield* post(partner, slug, [
          account("ba-1", "87654321", { display_name: "Payroll", routing_number: "011000015" }),
        ])
        assert.deepStrictEqual(changed.results, [
          shown("ba-1", "updated", "4321", true, { display_name: "Payroll", routing_number: "011000015" }),
        ])
        assert.deepStrictEqual(yield* storedAccounts(slug), [
          { external_system_id: "ba-1", display_name: "Payroll", account_number_last4: "4321" },
        ])
      }),
    )

    it.effect(
      "requires every field, a 9-digit routing number and an account number of at most 20 digits",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner
          sentAccountNumbers.push("123456789012345678901", "98765432109")
          const body = yield* post(partner, slug, [
            { external_system_id: "ba-missing" },
            account("ba-routing", "1234", { routing_number: "02100002" }),
            account("ba-routing-letters", "1234", { routing_number: "02100002X" }),
            account("ba-long", "123456789012345678901"),
            account("ba-dashes", "1234-5678"),
            { ...account("ba-number", "1234"), account_number: 98765432109 },
            account("ba-blank", "1234", { display_name: "" }),
            account("ba-default", "1234", { default: "yes" }),
            account("ba-twenty", "12345678901234567890"),
          ])
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [
              {
                external_system_id: "ba-missing",
                action: "failed",
                errors: {
                  display_name: ["is required"],
                  routing_number: ["is required"],
                  account_number: ["is required"],
                },
              },
              {
                external_system_id: "ba-routing",
                action: "failed",
                errors: { routing_number: ["must be 9 digits"] },
              },
              {
                external_system_id: "ba-routing-letters",
                action: "failed",
                errors: { routing_number: ["must be 9 digits"] },
              },
              {
                external_system_id: "ba-long",
                action: "failed",
                errors: { account_number: ["must be at most 20 digits"] },
              },
              {
                external_system_id: "ba-dashes",
                action: "failed",
                errors: { account_number: ["must be at most 20 digits"] },
              },
              {
                external_system_id: "ba-number",
                action: "failed",
                errors: { account_number: ["must be a string"] },
              },
              {
                external_system_id: "ba-blank",
                action: "failed",
                errors: { display_name: ["can't be blank"] },
              },
              {
                external_system_id: "ba-default",
                action: "failed",
                errors: { default: ["must be true or false"] },
              },
              shown("ba-twenty", "created", "7890", true),
            ],
            meta: { created: 1, updated: 0, failed: 8 },
          })
          assert.deepStrictEqual(
            (yield* storedAccounts(slug)).map((a) => a.external_system_id),
            ["ba-twenty"],
          )
        }),
    )

    it.effect("applies items in order; a failed item changes nothing and does not stop the others", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const body = yield* post(partner, slug, [
          account("ba-1", "10101010"),
          account("ba-2", "2020202", { routing_number: "bad" }),
          account("ba-3", "30303030"),
          account("ba-1", "40404040", { display_name: "Second write wins" }),
        ])
        assert.deepStrictEqual(
          body.results.map((r) => [r.external_system_id, r.action]),
          [
            ["ba-1", "created"],
            ["ba-2", "failed"],
            ["ba-3", "created"],
            ["ba-1", "updated"],
          ],
        )
        assert.deepStrictEqual(body.meta, { created: 2, updated: 1, failed: 1 })
        assert.deepStrictEqual(yield* storedAccounts(slug), [
          { external_system_id: "ba-1", display_name: "Second write wins", account_number_last4: "4040" },
          { external_system_id: "ba-3", display_name: "Operating ba-3", account_number_last4: "3030" },
        ])
      }),
    )

    it.effect("stores the account number sealed: the bank_accounts table never holds it in clear", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* post(partner, slug, [account("ba-sealed", "73918264550")])
        const [row] = yield* query(
          (sql) => sql<Array<{ sealed: Buffer; whole: string }>>`
            select b.account_number_sealed as sealed, row_to_json(b)::text as whole
            from bank_accounts b join owners o on o.id = b.owner_id
            where o.slug = ${slug} and b.external_system_id = 'ba-sealed'`,
        )
        assert.notInclude(row!.whole, "73918264550")
        assert.notInclude(row!.sealed.toString("latin1"), "73918264550")
        assert.notInclude(row!.sealed.toString("hex"), Buffer.from("73918264550").toString("hex"))
        const opened = yield* Effect.flatMap(Effect.service(Crypto), (crypto) =>
          crypto.open(row!.sealed),
        ).pipe(Effect.provide(Crypto.layer))
        assert.strictEqual(Buffer.from(opened).toString("utf8"), "73918264550")
      }),
    )

    it.effect("refuses a batch of 501 items whole with 422, writing nothing", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const items = Array.from({ length: 501 }, (_, i) => account(`ba-${i}`, `${100000 + i}`))
        const answer = yield* postJson(partner, `/partners/${slug}/bank_accounts`, items)
        assert.strictEqual(answer.status, 422)
        assert.strictEqual(
          answer.text,
          `{"status_code":422,"error":"A batch holds at most 500 items; this one has 501. Nothing was processed."}`,
        )
        assert.deepStrictEqual(yield* storedAccounts(slug), [])
        assert.isNull(yield* defaultAccountOf(partner, slug))
      }),
    )

    it.effect("takes a JSON array even for one item", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const answer = yield* postJson(partner, `/partners/${slug}/bank_accounts`, account("ba-1", "1234"))
        assert.strictEqual(answer.status, 422)
        assert.strictEqual(
          answer.text,
          `{"status_code":422,"error":"The body must be a JSON array of items (even for one item)."}`,
        )
        assert.deepStrictEqual(yield* storedAccounts(slug), [])
        const one = yield* postBatch(partner, slug, "bank_accounts", [account("ba-1", "1234")])
        assert.deepStrictEqual(one.meta, { created: 1, updated: 0, failed: 0 })
      }),
    )

    it.effect("never writes an account number in a log line", () =>
      Effect.sync(() => {
        // Runs last: every test above has sent its accounts by now.
        assert.isAbove(sentAccountNumbers.length, 0)
        assert.isTrue(
          lines.some((line) => line.includes("/bank_accounts")),
          "the capture holds the requests' lines",
        )
        for (const line of lines) {
          for (const number of sentAccountNumbers) assert.notInclude(line, number)
        }
      }),
    )
  })
})
