import { assert, describe, it } from "@effect/vitest"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import {
  EXPIRY_EXAMPLE,
  INCOME_EXAMPLE,
  parseCard,
  parseDetails,
  parseExpiry,
  parseUnderwriting,
} from "../../backend/enrollment/Inputs.ts"

const TODAY = "2026-11-26"

const card = (overrides: Record<string, string> = {}) => ({
  cardNumber: TEST_CARDS.ok,
  expiry: "12/29",
  cvc: "123",
  nameOnCard: "John Doe",
  ...overrides,
})

const fieldsOf = <A>(parsed: { readonly ok: A } | { readonly fields: Readonly<Record<string, string>> }) =>
  "fields" in parsed ? parsed.fields : {}

describe("the renter's answers, as typed", () => {
  it("reads an expiry typed as MM/YY, MMYY, MM / YY, M/YY or MM/YYYY", () => {
    for (const typed of ["12/29", "1229", "12 / 29", " 12/29 ", "12/2029", "122029"]) {
      assert.deepStrictEqual(parseExpiry(typed), { month: 12, year: 2029 }, typed)
    }
    assert.deepStrictEqual(parseExpiry("1/29"), { month: 1, year: 2029 })
    for (const typed of ["13/29", "00/29", "129", "12/2", "12-29x", ""]) {
      assert.isUndefined(parseExpiry(typed), typed)
    }
  })

  it("takes a card whose expiry was typed without a slash, and refuses one already expired", () => {
    const paid = parseCard(card({ expiry: "1229" }), TODAY)
    assert.isTrue("ok" in paid && paid.ok.expMonth === 12 && paid.ok.expYear === 2029)
    assert.include(fieldsOf(parseCard(card({ expiry: "1025" }), TODAY)).expiry ?? "", "expired")
    assert.isTrue("ok" in parseCard(card({ expiry: "11/26" }), TODAY), "this month is still to come")
  })

  it("asks for a card number that is empty, and for the expiry the way its hint shows it", () => {
    const fields = fieldsOf(parseCard(card({ cardNumber: "", expiry: "" }), TODAY))
    assert.strictEqual(fields.card_number, "Enter your card number")
    assert.include(fields.expiry ?? "", EXPIRY_EXAMPLE)
    assert.include(fieldsOf(parseCard(card({ expiry: "soon" }), TODAY)).expiry ?? "", EXPIRY_EXAMPLE)
    assert.notStrictEqual(
      fieldsOf(parseCard(card({ cardNumber: "4242 4242 4242 4241" }), TODAY)).card_number,
      "Enter your card number",
    )
  })

  it("takes a security code of 3 or 4 digits, as its message says", () => {
    assert.isTrue("ok" in parseCard(card({ cvc: "1234" }), TODAY))
    assert.include(fieldsOf(parseCard(card({ cvc: "12" }), TODAY)).cvc ?? "", "3 or 4 digits")
  })

  it("gives the income's error the example its hint gives", () => {
    const fields = fieldsOf(
      parseUnderwriting({
        yearlyIncome: "lots",
        employmentStatus: "employed",
        hasSsn: "yes",
        termsAccepted: true,
      }),
    )
    assert.include(fields.yearly_income ?? "", INCOME_EXAMPLE)
  })

  it("keeps the phone shown when the field is not sent, and refuses one that was cleared", () => {
    assert.deepStrictEqual(parseDetails({}), { ok: { phone: null } })
    assert.deepStrictEqual(parseDetails({ phone: "(555) 987-6543" }), { ok: { phone: "5559876543" } })
    assert.include(fieldsOf(parseDetails({ phone: "  " })).phone ?? "", "Enter your phone number")
  })
})
