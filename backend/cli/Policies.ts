import { Effect } from "effect"
import { Billing } from "../policies/Billing.ts"
import { Revisions } from "../policies/Revisions.ts"
import { CliUsage, parse, printJson } from "./Usage.ts"
import { cliActor } from "./Webhooks.ts"

const HELP = {
  show:
    "usage: policies show POLICY_NUMBER\n\n" +
    "The policy as the webhooks carry it, with its newest documents link (policy_url), the date its owner's\n" +
    "policies live on (owner_today: the test clock's in staging and development), its billing (cadence,\n" +
    "premium_cents, payments, installments_billed, next_charge_on), a cancellation's reason, its delinquencies\n" +
    "and its move-outs.\n",
  revise:
    "usage: policies revise POLICY_NUMBER [--coverage-cents N] [--start YYYY-MM-DD] [--end YYYY-MM-DD]\n" +
    "                       [--unit UNIT_EXTERNAL_ID [--property PROPERTY_EXTERNAL_ID]]\n\n" +
    "Changes a policy in force (audited): its coverage amount (at most the owner's ceiling), its coverage dates, or\n" +
    "its unit (the partner's external_system_id; --property picks the building when several have that unit).\n" +
    "Emits policy.updated, then the documents are made again and policy.documents_updated carries a new\n" +
    "policy_url. A revision whose end comes before its start also cancels the policy (policy.canceled). The\n" +
    "premium stays as sold. A revision that changes nothing emits nothing. Prints\n" +
    '{"changed", "canceled", "policy", "documents_generation"}.\n',
  cancel:
    "usage: policies cancel POLICY_NUMBER --reason TEXT\n\n" +
    "Cancels a policy in force (audited, with the reason, which partners never see): policy.canceled, and no\n" +
    "more premiums are charged. Prints the policy as policy.canceled carries it.\n",
  resolve:
    "usage: delinquencies resolve DELINQUENCY_ID\n\n" +
    "Clears an active delinquency (a payment received another way; audited): delinquency.resolved with nothing\n" +
    "outstanding. The ids are on policies show and on delinquency.created (delinquency_<n>).\n",
} as const

/** `--help` anywhere on the command line prints the command's help instead of running it. */
const wantsHelp = (args: ReadonlyArray<string>) => args.includes("--help") || args.includes("-h")

const printHelp = (text: string) => Effect.sync(() => process.stdout.write(text))

/** The one positional argument a command takes, or CliUsage with its usage. */
const single = (positionals: ReadonlyArray<string>, help: string) =>
  positionals.length === 1 ? Effect.succeed(positionals[0]!) : Effect.fail(new CliUsage({ message: help }))

/** `policies show|revise|cancel`: operators' view of a policy and their changes to it. */
export const policies = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    if (command !== "show" && command !== "revise" && command !== "cancel") {
      return yield* new CliUsage({ message: `unknown policies command: ${command ?? "(none)"}` })
    }
    if (wantsHelp(rest)) return yield* printHelp(HELP[command])
    const revisions = yield* Revisions
    switch (command) {
      case "show": {
        const { positionals } = yield* parse(rest, {})
        return yield* printJson(yield* revisions.show(yield* single(positionals, HELP.show)))
      }
      case "revise": {
        const { positionals, values } = yield* parse(rest, {
          "coverage-cents": { type: "string" },
          start: { type: "string" },
          end: { type: "string" },
          unit: { type: "string" },
          property: { type: "string" },
        })
        const policyNumber = yield* single(positionals, HELP.revise)
        const revised = yield* revisions.revise(
          policyNumber,
          {
            coverageCents: values["coverage-cents"],
            start: values.start,
            end: values.end,
            unit: values.unit,
            property: values.property,
          },
          cliActor(),
        )
        return yield* printJson(revised)
      }
      case "cancel": {
        const { positionals, values } = yield* parse(rest, { reason: { type: "string" } })
        const policyNumber = yield* single(positionals, HELP.cancel)
        if (values.reason === undefined) return yield* new CliUsage({ message: HELP.cancel })
        return yield* printJson(yield* revisions.cancel(policyNumber, values.reason, cliActor()))
      }
    }
  })

/** `delinquencies resolve`: an operator clears a delinquency. */
export const delinquencies = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    if (command !== "resolve") {
      return yield* new CliUsage({ message: `unknown delinquencies command: ${command ?? "(none)"}` })
    }
    if (wantsHelp(rest)) return yield* printHelp(HELP.resolve)
    const { positionals } = yield* parse(rest, {})
    const id = yield* single(positionals, HELP.resolve)
    return yield* printJson(yield* Billing.use((billing) => billing.resolve(id, cliActor())))
  })
