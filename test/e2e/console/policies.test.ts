import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { openConsole, operatorAccount, promise, screenshot, signIn, signOut } from "../../support/Console.ts"
import { enrollmentService } from "../../support/Enrollment.ts"
import { awaitDeliveries, type Delivered, issuePolicy, lifecycleOwner } from "../../support/Lifecycle.ts"
import { startReceiver } from "../../support/Receiver.ts"

// The partner side issues the policy (enrollment, workers); the console role serves the page and its API.
const service = enrollmentService({
  ROLES: "partner-api,enrollment,workers,console",
  CONSOLE_PORT: "0",
  SERVICE_ENV: "development",
})
const TIMEOUT = 300_000

const documentLinks = (received: ReadonlyArray<Delivered>, id: unknown) =>
  received
    .filter((d) => d.event === "policy.documents_updated" && d.payload.id === id)
    .map((d) => d.payload.policy_url as string)

describe("console: a policy's page", () => {
  layer(service.layer, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "an operator opens the admin_policy_url, signs in, revises the coverage and sees the change, the new documents and the audit entry; a viewer cannot change it; the operator cancels it",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "console-page-org", "console-page", "/e2e")
          const issued = yield* issuePolicy(owner, "page-renter", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          const first = yield* awaitDeliveries(
            receiver,
            "/e2e",
            (r) => documentLinks(r, issued.id).length === 1,
          )
          const adminUrl = first.find((d) => d.event === "policy.created")!.payload.admin_policy_url as string
          const operator = yield* operatorAccount(service.env, "operator")
          const { page, origin } = yield* openConsole

          // The link partners get leads, through the sign-in page, to the policy.
          yield* promise(() => page.goto(`${origin}${new URL(adminUrl).pathname}`))
          yield* promise(() => page.getByLabel("Email").fill(operator.email))
          yield* promise(() => page.getByLabel("Password").fill(operator.password))
          yield* promise(() => page.getByRole("button", { name: "Sign in" }).click())
          yield* promise(() =>
            page.getByRole("heading", { level: 1, name: `Policy ${issued.policyNumber}` }).waitFor(),
          )
          const coverage = page.getByTestId("policy-coverage")
          const before = yield* promise(() => coverage.textContent())
          assert.include(before ?? "", (issued.coverageAmountCents / 100).toLocaleString("en-US"))
          const documents = page.getByTestId("policy-documents")
          assert.strictEqual(
            yield* promise(() => documents.getAttribute("href")),
            documentLinks(first, issued.id)[0],
          )
          yield* screenshot(page, "policy")

          // The revision: the button waits for a change; the keyboard submits the form.
          const submit = page.getByRole("button", { name: "Revise policy" })
          assert.isTrue(yield* promise(() => submit.isDisabled()))
          const field = page.getByLabel("Coverage amount (USD)")
          yield* promise(() => field.fill("3456.78"))
          yield* promise(() => field.press("Enter"))
          yield* promise(() =>
            page.getByRole("status").filter({ hasText: "Policy revised" }).first().waitFor(),
          )
          yield* promise(() => coverage.filter({ hasText: "3,456.78" }).waitFor())
          const revision = page.getByTestId("policy-revision")
          yield* promise(() => revision.filter({ hasText: operator.email }).waitFor())
          assert.include(yield* promise(() => revision.first().textContent()), "policies.revise")
          assert.include(yield* promise(() => revision.first().textContent()), "console")

          // The partner hears of it, and the page follows its new documents link.
          const after = yield* awaitDeliveries(
            receiver,
            "/e2e",
            (r) => documentLinks(r, issued.id).length === 2,
          )
          assert.strictEqual(
            after.find((d) => d.event === "policy.updated")!.payload.coverage_amount_cents,
            345_678,
          )
          const newLink = documentLinks(after, issued.id)[1]!
          yield* promise(() => page.locator(`[data-testid="policy-documents"][href="${newLink}"]`).waitFor())
          yield* screenshot(page, "policy-revised")

          // The audit log has the revision as this operator on the console.
          yield* promise(() => page.getByRole("link", { name: "See its entries in the audit log" }).click())
          yield* promise(() => page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor())
          const entry = page.getByTestId("audit-entry").filter({ hasText: "policies.revise" })
          yield* promise(() => entry.waitFor())
          const text = (yield* promise(() => entry.textContent())) ?? ""
          assert.include(text, operator.email)
          assert.include(text, "console")
          assert.include(text, `policy:${issued.policyNumber}`)
          yield* screenshot(page, "policy-audit")

          // A viewer finds it by number and sees the same page without the buttons that change it.
          const viewer = yield* operatorAccount(service.env, "viewer")
          yield* signOut(page)
          yield* signIn(page, origin, viewer)
          yield* promise(() => page.getByRole("link", { name: "Policies", exact: true }).click())
          yield* promise(() => page.getByLabel("Policy number").fill(issued.policyNumber))
          yield* promise(() => page.getByRole("button", { name: "Find" }).click())
          yield* promise(() => page.getByRole("link", { name: issued.policyNumber }).click())
          yield* promise(() => coverage.filter({ hasText: "3,456.78" }).waitFor())
          for (const name of ["Revise policy", "Cancel policy", "Resolve"]) {
            assert.strictEqual(yield* promise(() => page.getByRole("button", { name }).count()), 0, name)
          }

          // The operator cancels it with a reason, in the dialog; the page shows it canceled.
          yield* signOut(page)
          yield* signIn(page, origin, operator)
          yield* promise(() => page.goto(`${origin}${new URL(adminUrl).pathname}`))
          yield* promise(() => page.getByRole("button", { name: "Cancel policy" }).click())
          const dialog = page.getByRole("dialog", { name: "Cancel policy" })
          yield* promise(() => dialog.getByLabel("Reason").fill("The renter bought cover elsewhere"))
          yield* screenshot(page, "policy-cancel")
          yield* promise(() => dialog.getByRole("button", { name: "Cancel this policy" }).click())
          yield* promise(() => page.locator("h1 .badge", { hasText: "canceled" }).waitFor())
          yield* promise(() => page.locator("dd", { hasText: "The renter bought cover elsewhere" }).waitFor())
          assert.strictEqual(
            yield* promise(() => page.getByRole("button", { name: "Revise policy" }).count()),
            0,
          )
          yield* awaitDeliveries(receiver, "/e2e", (r) => r.some((d) => d.event === "policy.canceled"))
        }).pipe(Effect.scoped),
      TIMEOUT,
    )
  })
})
