import { Effect } from "effect"
import { grantOwner } from "../auth/Grants.ts"
import { Db } from "../platform/Db.ts"
import type { OwnerRow } from "./Domain.ts"

/** Serializes roster writes per owner across processes, so a batch reads and writes a consistent roster. */
const ROSTER_LOCK = 7_239_100
/** Serializes the choice of a slug among owners whose names give the same one. */
const SLUG_LOCK = 7_239_101

/** The columns of an `OwnerRow`. */
const OWNER_COLUMNS = [
  "id",
  "slug",
  "name",
  "external_org_id",
  "managed_by_service",
  "purchase_flow_enabled",
  "max_coverage_amount_cents",
  "embedded_frame_ancestors",
  "guarantor_coverage_capable",
  "default_bank_account_id",
  "brand_name",
  "brand_logo_url",
  "brand_accent_color",
] as const

/** The columns of an `OwnerRow` qualified for a query that calls the owners table `o`. */
const OWNER_SELECT = OWNER_COLUMNS.map((column) => `o.${column}`).join(", ")

/** The roster's SQL of owners, their locks and their clients' grants. */
export const makeOwnersRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    lockOwner: (ownerId: string) =>
      db.query((sql) => sql`select pg_advisory_xact_lock(${ROSTER_LOCK}, ${Number(ownerId)})`),
    /** Serializes first writes of one external_org_id (two requests creating the same owner at once). */
    lockExternalOrgId: (externalOrgId: string) =>
      db.query((sql) => sql`select pg_advisory_xact_lock(${ROSTER_LOCK}, hashtext(${externalOrgId}))`),
    /** Held until commit, so the next owner of that name sees this one's slug taken. */
    lockSlug: (base: string) =>
      db.query((sql) => sql`select pg_advisory_xact_lock(${SLUG_LOCK}, hashtext(${base}))`),
    ownerBySlug: (slug: string) =>
      db
        .query((sql) => sql<Array<OwnerRow>>`select ${sql(OWNER_COLUMNS)} from owners where slug = ${slug}`)
        .pipe(Effect.map(([row]) => row)),
    ownerByExternalOrgId: (externalOrgId: string) =>
      db
        .query(
          (sql) =>
            sql<
              Array<OwnerRow>
            >`select ${sql(OWNER_COLUMNS)} from owners where external_org_id = ${externalOrgId}`,
        )
        .pipe(Effect.map(([row]) => row)),
    slugsLike: (base: string) =>
      db
        .query(
          (sql) => sql<Array<{ slug: string }>>`
            select slug from owners where slug = ${base} or slug ~ ${`^${base}-[0-9]+$`}`,
        )
        .pipe(Effect.map((rows) => new Set(rows.map((r) => r.slug)))),
    insertOwner: (owner: {
      readonly slug: string
      readonly name: string
      readonly external_org_id: string | null
      readonly managed_by_service: boolean
      readonly max_coverage_amount_cents: number | null
      readonly embedded_frame_ancestors: ReadonlyArray<string>
      readonly guarantor_coverage_capable: boolean
      readonly brand_name: string | null
      readonly brand_logo_url: string | null
      readonly brand_accent_color: string | null
    }) =>
      db
        .query(
          (sql) => sql<Array<OwnerRow>>`
            insert into owners (slug, name, external_org_id, managed_by_service, max_coverage_amount_cents,
                                embedded_frame_ancestors, guarantor_coverage_capable, brand_name, brand_logo_url,
                                brand_accent_color)
            values (${owner.slug}, ${owner.name}, ${owner.external_org_id}, ${owner.managed_by_service},
                    ${owner.max_coverage_amount_cents}, ${sql.array([...owner.embedded_frame_ancestors])},
                    ${owner.guarantor_coverage_capable}, ${owner.brand_name}, ${owner.brand_logo_url},
                    ${owner.brand_accent_color})
            returning ${sql(OWNER_COLUMNS)}`,
        )
        .pipe(Effect.map(([row]) => row!)),
    updateOwner: (owner: OwnerRow) =>
      db.query(
        (sql) => sql`
          update owners set name = ${owner.name}, purchase_flow_enabled = ${owner.purchase_flow_enabled},
            max_coverage_amount_cents = ${owner.max_coverage_amount_cents},
            embedded_frame_ancestors = ${sql.array([...owner.embedded_frame_ancestors])},
            guarantor_coverage_capable = ${owner.guarantor_coverage_capable},
            default_bank_account_id = ${owner.default_bank_account_id}, brand_name = ${owner.brand_name},
            brand_logo_url = ${owner.brand_logo_url}, brand_accent_color = ${owner.brand_accent_color},
            updated_at = now()
          where id = ${owner.id}`,
      ),
    /** The buildings (PMS property ids) a client is granted for an owner; undefined: every building. */
    grantedBuildings: (ownerId: string, clientId: string) =>
      db
        .query(
          (sql) => sql<Array<{ buildings: Array<string> | null }>>`
            select buildings from client_owner_grants where owner_id = ${ownerId} and client_id = ${clientId}`,
        )
        .pipe(Effect.map(([row]) => row?.buildings ?? undefined)),
    /**
     * For each (client, PMS property id) asked, the owners granted to the client that have a building with that
     * id, by slug; keyed `JSON.stringify([clientId, pmsPropertyId])`.
     */
    ownersWithProperties: (
      asked: ReadonlyArray<{ readonly clientId: string; readonly pmsPropertyId: string }>,
    ) =>
      asked.length === 0
        ? Effect.succeed(new Map<string, Array<OwnerRow>>())
        : db
            .query(
              (sql) => sql<
                Array<OwnerRow & { readonly asked_client: string; readonly asked_property: string }>
              >`
                select q.client_id as asked_client, q.pms_property_id as asked_property, ${sql.unsafe(OWNER_SELECT)}
                from unnest(${sql.array(asked.map((a) => a.clientId))}::text[],
                            ${sql.array(asked.map((a) => a.pmsPropertyId))}::text[]) as q(client_id, pms_property_id)
                join client_owner_grants g on g.client_id = q.client_id
                  and (g.buildings is null or q.pms_property_id = any(g.buildings))
                join owners o on o.id = g.owner_id
                where exists (
                  select 1 from properties p where p.owner_id = g.owner_id and p.pms_property_id = q.pms_property_id)
                order by o.slug`,
            )
            .pipe(
              Effect.map((rows) => {
                const out = new Map<string, Array<OwnerRow>>()
                for (const { asked_client, asked_property, ...owner } of rows) {
                  const key = JSON.stringify([asked_client, asked_property])
                  out.set(key, [...(out.get(key) ?? []), owner])
                }
                return out
              }),
            ),
    grant: (ownerId: string, clientId: string, buildings: ReadonlyArray<string> | null) =>
      grantOwner(db, ownerId, clientId, buildings),
  }
})
