import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/**
 * The SQL of the console's owners, prospects and search: reads of the roster, auth, prospects, policies and
 * webhooks tables, as the delivery queries read the engine's (the console's read model, never a write). A bank
 * account's number is never selected, only its last four digits.
 */

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

export interface OwnerRow {
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

export interface ProspectRecordRow {
  readonly id: string
  readonly owner_slug: string
  readonly owner_name: string
  readonly source: string
  readonly source_prospect_id: string
  readonly status: string
  readonly version: number
  readonly fields: Record<string, unknown>
  readonly created_at: Date
  readonly updated_at: Date
}

export interface EventDeliveryRow {
  readonly event_id: string
  readonly id: number
  readonly endpoint_id: number
  readonly endpoint_name: string
  readonly status: string
  readonly attempt_number: number
  readonly delivered_at: Date | null
}

/** A row the search found: what it is, the id its page takes, and what the list shows of it. */
export interface FoundRow {
  readonly id: string
  readonly label: string
  readonly detail: string
}

/** `text` as a LIKE pattern matching it anywhere, its wildcards and escape character taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** Columns of a prospect the page lists as its fields: everything but keys, bookkeeping and the sealed SSN. */
const NOT_FIELDS = [
  "id",
  "owner_id",
  "property_id",
  "unit_id",
  "source",
  "source_prospect_id",
  "status",
  "version",
  "created_at",
  "updated_at",
  "social_security_number_sealed",
]

export class DirectoryRepo extends Context.Service<DirectoryRepo>()(
  "partner-service/operator/DirectoryRepo",
  {
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
              (sql) => sql<Array<OwnerRow>>`
              select id::text, slug, name, external_org_id, managed_by_service, purchase_flow_enabled,
                max_coverage_amount_cents::text, created_at, updated_at
              from owners where slug = ${slug}`,
            )
            .pipe(Effect.map(([row]) => row)),
        bankAccounts: (ownerId: string) =>
          db.query(
            (sql) => sql<
              Array<{
                external_system_id: string
                display_name: string | null
                routing_number: string | null
                account_number_last4: string | null
                is_default: boolean
              }>
            >`
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
        clients: (ownerId: string) =>
          db.query(
            (sql) => sql<
              Array<{
                id: string
                name: string | null
                gateway: string
                scopes: Array<string>
                buildings: Array<string> | null
                granted_at: Date
                revoked_at: Date | null
              }>
            >`
            select c.id, c.name, c.gateway, c.scopes, g.buildings, g.created_at as granted_at, c.revoked_at
            from client_owner_grants g join clients c on c.id = g.client_id
            where g.owner_id = ${ownerId}::bigint order by g.created_at, c.id`,
          ),
        /** Providers covering the owner, whole or by some of its buildings. */
        providers: (ownerId: string) =>
          db.query(
            (sql) => sql<Array<{ id: string; name: string; coverage: "owner" | "properties" }>>`
            select pr.id::text, pr.name, 'owner' as coverage
            from provider_owners po join providers pr on pr.id = po.provider_id
            where po.owner_id = ${ownerId}::bigint
            union
            select pr.id::text, pr.name, 'properties' as coverage
            from provider_properties pp join providers pr on pr.id = pp.provider_id
              join properties p on p.id = pp.property_id
            where p.owner_id = ${ownerId}::bigint
            order by name, coverage`,
          ),
        /** Endpoints (not deleted) of the owner and of the providers given. */
        endpoints: (ownerId: string, providerIds: ReadonlyArray<string>) =>
          db.query(
            (sql) => sql<
              Array<{
                id: number
                name: string
                destination_url: string
                status: string
                events: Array<string>
                provider_name: string | null
              }>
            >`
            select e.id::int, e.name, e.destination_url, e.status, e.events, pr.name as provider_name
            from webhook_endpoints e join webhook_subscribers s on s.id = e.subscriber_id
              left join providers pr on pr.id = s.provider_id
            where e.deleted_at is null
              and (s.owner_id = ${ownerId}::bigint or s.provider_id = any(${providerIds as Array<string>}::bigint[]))
            order by e.id`,
          ),

        prospect: (id: string) =>
          db
            .query(
              (sql) => sql<Array<ProspectRecordRow>>`
              select p.id::text, o.slug as owner_slug, o.name as owner_name, p.source, p.source_prospect_id,
                p.status, p.version, to_jsonb(p) - ${NOT_FIELDS}::text[] as fields, p.created_at, p.updated_at
              from prospects p join owners o on o.id = p.owner_id where p.id = ${id}::bigint`,
            )
            .pipe(Effect.map(([row]) => row)),
        enrollment: (prospectId: string) =>
          db
            .query(
              (sql) => sql<
                Array<{
                  details_confirmed_at: Date | null
                  inputs_supplied_at: Date | null
                  blocked_reason: string | null
                  created_at: Date
                }>
              >`
              select details_confirmed_at, inputs_supplied_at, blocked_reason, created_at
              from enrollments where prospect_id = ${prospectId}::bigint`,
            )
            .pipe(Effect.map(([row]) => row)),
        applications: (prospectId: string) =>
          db.query(
            (sql) => sql<
              Array<{
                id: number
                status: string
                outcome: string | null
                product_type: string | null
                cadence: string | null
                coverage_amount_cents: number | null
                premium_cents: number | null
                declined_rules: Array<string> | null
                submitted_at: Date | null
                created_at: Date
              }>
            >`
            select id::int, status, outcome, product_type, cadence, coverage_amount_cents::float8 as coverage_amount_cents,
              premium_cents::float8 as premium_cents, declined_rules, submitted_at, created_at
            from policy_applications where prospect_id = ${prospectId}::bigint order by id`,
          ),
        policies: (prospectId: string) =>
          db.query(
            (sql) => sql<
              Array<{
                id: string
                policy_number: string
                status: string
                product_type: string
                coverage_amount_cents: number
                coverage_start_date: string
                coverage_end_date: string
              }>
            >`
            select 'policy_' || id as id, policy_number, status, product_type,
              coverage_amount_cents::float8 as coverage_amount_cents,
              coverage_start_date::text, coverage_end_date::text
            from policies where prospect_id = ${prospectId}::bigint order by id`,
          ),
        /** The deliveries of the events, each with its endpoint's name. */
        deliveriesOf: (eventIds: ReadonlyArray<string>) =>
          eventIds.length === 0
            ? Effect.succeed([] as Array<EventDeliveryRow>)
            : db.query(
                (sql) => sql<Array<EventDeliveryRow>>`
                select d.event_id, d.id::int, d.endpoint_id::int, e.name as endpoint_name, d.status,
                  d.attempt_number, d.delivered_at
                from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
                where d.event_id = any(${eventIds as Array<string>}::text[]) order by d.id`,
              ),

        findOwners: (q: string, limit: number) =>
          db.query(
            (sql) => sql<Array<FoundRow>>`
            select slug as id, name as label, slug as detail from owners
            where slug like lower(${containing(q)}) or name ilike ${containing(q)}
            order by (slug = lower(${q})) desc, name limit ${limit}`,
          ),
        /** Prospects by service id, partner's id or email (any of them given). */
        findProspects: (
          by: { readonly id?: string; readonly sourceProspectId?: string; readonly email?: string },
          limit: number,
        ) =>
          db.query((sql) => {
            const conditions = [
              by.id === undefined ? undefined : sql`p.id = ${by.id}::bigint`,
              by.sourceProspectId === undefined
                ? undefined
                : sql`p.source_prospect_id = ${by.sourceProspectId}`,
              by.email === undefined ? undefined : sql`lower(p.email) = lower(${by.email})`,
            ].filter((condition) => condition !== undefined)
            if (conditions.length === 0) return Promise.resolve([] as Array<FoundRow>)
            const where = conditions.reduce((all, condition) => sql`${all} or ${condition}`)
            return sql<Array<FoundRow>>`
            select 'tpp_' || p.id as id,
              concat_ws(' ', 'tpp_' || p.id, nullif(concat_ws(' ', p.first_name, p.last_name), '')) as label,
              concat_ws(' · ', o.slug, p.source || '/' || p.source_prospect_id, p.email, p.status) as detail
            from prospects p join owners o on o.id = p.owner_id
            where ${where} order by p.id desc limit ${limit}`
          }),
        findDelivery: (id: string) =>
          db.query(
            (sql) => sql<Array<FoundRow>>`
            select d.id::text as id, 'Delivery ' || d.id as label,
              concat_ws(' · ', d.event, d.owner_slug, e.name, d.status) as detail
            from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
            where d.id = ${id}::bigint`,
          ),
        findEndpoint: (id: string) =>
          db.query(
            (sql) => sql<Array<FoundRow>>`
            select id::text, 'Endpoint ' || id || ' ' || name as label,
              concat_ws(' · ', destination_url, status) as detail
            from webhook_endpoints where id = ${id}::bigint and deleted_at is null`,
          ),
        findPolicy: (policyNumber: string) =>
          db.query(
            (sql) => sql<Array<FoundRow>>`
            select 'policy_' || id as id, policy_number as label,
              concat_ws(' · ', insured_name, product_type, status) as detail
            from policies where policy_number = upper(${policyNumber})`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(DirectoryRepo, DirectoryRepo.make)
}
