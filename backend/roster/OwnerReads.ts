import { Context, Effect, Layer } from "effect"
import type { FoundRow } from "../contract/Search.ts"
import { containing, Db, escapeLike } from "../platform/Db.ts"
import { ownersMatching } from "./OwnerMatch.ts"

export interface OwnerListRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly external_org_id: string
  readonly purchase_flow_enabled: boolean
  readonly properties: number
  readonly units: number
  readonly created_at: Date
}

export interface OwnerRecordRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly external_org_id: string
  readonly managed_by_service: boolean
  readonly purchase_flow_enabled: boolean
  readonly max_coverage_amount_cents: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface OwnerFramingRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly embedded_frame_ancestors: ReadonlyArray<string>
  /** How the partner portal shows the owner; each null when the owner set none. */
  readonly brand_name: string | null
  readonly brand_logo_url: string | null
  readonly brand_accent_color: string | null
}

export interface BuildingRow {
  readonly id: string
  readonly external_system_id: string | null
  readonly building_name: string | null
  readonly street: string | null
  readonly city: string | null
  readonly state: string | null
  readonly zip: string | null
  readonly active: boolean
  readonly bank_account: string | null
  readonly unit_count: number
}

export interface UnitRow {
  readonly property_id: string
  readonly external_system_id: string | null
  readonly name: string | null
  readonly line_one: string | null
  readonly line_two: string | null
}

export interface BankAccountRow {
  readonly external_system_id: string
  readonly display_name: string | null
  readonly routing_number: string | null
  readonly account_number_last4: string | null
  readonly is_default: boolean
}

/**
 * What the roster lets others read of its owners, bank accounts, buildings and units: the console's owner list,
 * owner page, search and owner suggestions. A bank account's number is never selected, only its last four
 * digits. The rows are the roster's; readers take these types as they are.
 */
export class OwnerReads extends Context.Service<OwnerReads>()("partner-service/roster/OwnerReads", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      /** Owners newest first, older than `before` (an owner's id), matching `q` in slug or name when given. */
      owners: (q: string | undefined, before: string | undefined, limit: number) =>
        db.query((sql) => {
          const pattern = q === undefined ? undefined : containing(q)
          return sql<Array<OwnerListRow>>`
        select o.id::text, o.slug, o.name, o.external_org_id, o.purchase_flow_enabled, o.created_at,
          (select count(*) from properties p where p.owner_id = o.id)::int as properties,
          (select count(*) from units u join properties p on p.id = u.property_id
           where p.owner_id = o.id)::int as units
        from owners o
        where true
          ${pattern === undefined ? sql`` : sql`and (o.slug like lower(${pattern}) or o.name ilike ${pattern})`}
          ${before === undefined ? sql`` : sql`and o.id < ${before}::bigint`}
        order by o.id desc limit ${limit}`
        }),
      owner: (slug: string) =>
        db
          .query(
            (sql) => sql<Array<OwnerRecordRow>>`
          select id::text, slug, name, external_org_id, managed_by_service, purchase_flow_enabled,
            max_coverage_amount_cents::text, created_at, updated_at
          from owners where slug = ${slug}`,
          )
          .pipe(Effect.map(([row]) => row)),
      /** The owner a portal session is for: its slug, name, the origins that may frame its pages and its brand. */
      ownerFraming: (owner: { readonly slug: string } | { readonly id: string }) =>
        db
          .query(
            (sql) => sql<Array<OwnerFramingRow>>`
          select id::text, slug, name, embedded_frame_ancestors, brand_name, brand_logo_url, brand_accent_color
          from owners
          where ${"slug" in owner ? sql`slug = ${owner.slug}` : sql`id = ${owner.id}::bigint`}`,
          )
          .pipe(Effect.map(([row]) => row)),
      bankAccounts: (ownerId: string) =>
        db.query(
          (sql) => sql<Array<BankAccountRow>>`
        select b.external_system_id, b.display_name, b.routing_number, b.account_number_last4,
          coalesce(b.id = o.default_bank_account_id, false) as is_default
        from bank_accounts b join owners o on o.id = b.owner_id
        where b.owner_id = ${ownerId}::bigint order by b.id`,
        ),
      /** The owner's first `limit` buildings, each with its unit count and bank account's external id. */
      buildings: (ownerId: string, limit: number) =>
        db.query(
          (sql) => sql<Array<BuildingRow>>`
        select p.id::text, p.external_system_id, p.building_name, p.street, p.city, p.state, p.zip, p.active,
          b.external_system_id as bank_account,
          (select count(*) from units u where u.property_id = p.id)::int as unit_count
        from properties p left join bank_accounts b on b.id = p.bank_account_id
        where p.owner_id = ${ownerId}::bigint order by p.id limit ${limit}`,
        ),
      /** The first `limit` units of the buildings, by building. */
      units: (propertyIds: ReadonlyArray<string>, limit: number) =>
        propertyIds.length === 0
          ? Effect.succeed([] as Array<UnitRow>)
          : db.query(
              (sql) => sql<Array<UnitRow>>`
            select property_id::text, external_system_id, name, line_one, line_two from units
            where property_id = any(${propertyIds as Array<string>}::bigint[])
            order by property_id, id limit ${limit}`,
            ),
      findOwners: (q: string, limit: number) =>
        db.query(
          (sql) => sql<Array<FoundRow>>`
        select slug as id, name as label, slug as detail from owners
        where slug like lower(${containing(q)}) or name ilike ${containing(q)}
        order by (slug = lower(${q})) desc, name limit ${limit}`,
        ),
      /** Owners whose slug starts with `text` or whose name contains it (every owner without one), by slug. */
      suggestions: (text: string | undefined, limit: number) =>
        db.query((sql) =>
          text === undefined
            ? sql<
                Array<{ slug: string; name: string }>
              >`select slug, name from owners order by slug limit ${limit}`
            : // Slugs that start with the text first, then names that hold it.
              sql<Array<{ slug: string; name: string }>>`
              select slug, name from (${ownersMatching(sql, text)}) m
              order by lower(slug) like lower(${`${escapeLike(text)}%`}) desc, slug limit ${limit}`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(OwnerReads, OwnerReads.make)
}
