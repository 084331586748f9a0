import { Effect } from "effect"
import { Db, type Sql } from "../../backend/platform/Db.ts"
import { relayOnce } from "../../backend/platform/Outbox.ts"
import { createClient, type CreatedClient, gatewayPort, httpRequest, obtainToken } from "./Auth.ts"

/** Every scope the roster routes need. */
export const ROSTER_SCOPES = ["owners:write", "bank_accounts:write", "properties:write", "units:write"]

/** A partner client holding every roster scope (and owners granted to it, if any), with a real token. */
export interface RosterPartner extends CreatedClient {
  readonly token: string
}

export const rosterPartner = (owners: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "partner", scopes: ROSTER_SCOPES, owners })
    return { ...client, token: yield* obtainToken("partner", client) } satisfies RosterPartner
  })

export interface Posted<B> {
  readonly status: number
  /** The body as sent, to check that a value never appears in it. */
  readonly text: string
  readonly body: B
}

/** `POST path` on the partner gateway with `body` as JSON and the partner's token; the answer parsed. */
export const postJson = <B = Record<string, unknown>>(partner: RosterPartner, path: string, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("partner-api"), path, {
      method: "POST",
      headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    return {
      status: answer.status,
      text: answer.text,
      body: JSON.parse(answer.text) as B,
    } satisfies Posted<B>
  })

export interface ItemResult {
  readonly external_system_id: string
  readonly action: "created" | "updated" | "failed"
  readonly errors?: Record<string, Array<string>>
  readonly [field: string]: unknown
}

export interface BatchBody {
  readonly status_code: number
  readonly results: Array<ItemResult>
  readonly meta: { readonly created: number; readonly updated: number; readonly failed: number }
}

export type BatchKind = "bank_accounts" | "properties" | "units"

/** `POST /partners/{slug}/{kind}` with `items`; dies unless the gateway answered 200, so callers read results. */
export const postBatch = (
  partner: RosterPartner,
  slug: string,
  kind: BatchKind,
  items: ReadonlyArray<unknown>,
) =>
  Effect.gen(function* () {
    const answer = yield* postJson<BatchBody>(partner, `/partners/${slug}/${kind}`, items)
    if (answer.status !== 200) {
      return yield* Effect.die(new Error(`${kind} batch answered ${answer.status}: ${answer.text}`))
    }
    return answer.body
  })

/** The owner fields of `POST /partners/property_owners` as the response carries them. */
export interface OwnerBody {
  readonly status_code: number
  readonly owner_slug: string
  readonly property_owner: Record<string, unknown>
}

export const postOwner = (partner: RosterPartner, owner: Record<string, unknown>) =>
  postJson<OwnerBody>(partner, "/partners/property_owners", owner)

/** An owner created through the API by `partner` (which is then granted it); its slug. */
export const createOwnerThroughApi = (partner: RosterPartner, owner: Record<string, unknown>) =>
  Effect.gen(function* () {
    const answer = yield* postOwner(partner, owner)
    if (answer.status !== 200 || answer.body.status_code !== 201) {
      return yield* Effect.die(new Error(`owner creation answered ${answer.status}: ${answer.text}`))
    }
    return answer.body.owner_slug
  })

/** A query against the service's database, for what the API does not show. */
export const query = <A>(run: (sql: Sql) => Promise<A>) =>
  Effect.flatMap(Effect.service(Db), (db) => db.query(run))

/** Runs the outbox relay until no partition has pending rows, as the workers role would. */
export const drainOutbox = Effect.gen(function* () {
  while ((yield* relayOnce()) !== undefined) {
    /* keep going */
  }
})
