import { Effect } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import { isoText } from "./LifecycleSql.ts"

export interface MoveOutRow {
  readonly id: string
  readonly owner_id: string
  readonly external_id: string
  readonly policy_id: string
  readonly policy_number: string
  readonly property_id: string | null
  readonly move_out_date: string
  readonly status: "initiated"
  readonly created_at: string
  readonly updated_at: string
}

const MOVE_OUT_COLUMNS = (sql: Sql) => sql`
  m.id::text, m.owner_id::text, m.external_id, m.policy_id::text, p.policy_number, p.property_id::text,
  to_char(m.move_out_date, 'YYYY-MM-DD') as move_out_date, m.status,
  ${isoText(sql, "m.created_at")} as created_at, ${isoText(sql, "m.updated_at")} as updated_at`

/** The SQL of an owner's move-outs. */
export const makeMoveOutsRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    /** A policy of this owner by its number (another owner's is no different from none). */
    policyOfOwner: (ownerId: string, policyNumber: string) =>
      db
        .query(
          (sql) => sql<Array<{ id: string }>>`
          select id::text from policies where owner_id = ${ownerId} and policy_number = ${policyNumber}`,
        )
        .pipe(Effect.map((rows) => rows[0]?.id)),
    /** Creates the move-out unless the owner has one with this `external_id`; the new id, if created. */
    insertMoveOut: (write: {
      readonly owner_id: string
      readonly external_id: string
      readonly policy_id: string
      readonly move_out_date: string
    }) =>
      db
        .query(
          (sql) => sql<Array<{ id: string }>>`
          insert into move_outs ${sql(write as never)}
          on conflict (owner_id, external_id) do nothing
          returning id::text`,
        )
        .pipe(Effect.map((rows) => rows[0]?.id)),
    /** The owner's move-out with this `external_id`, locked until the transaction ends. */
    lockMoveOut: (ownerId: string, externalId: string) =>
      db
        .query(
          (sql) => sql<Array<MoveOutRow>>`
          select ${MOVE_OUT_COLUMNS(sql)}
          from move_outs m join policies p on p.id = m.policy_id
          where m.owner_id = ${ownerId} and m.external_id = ${externalId}
          for update of m`,
        )
        .pipe(Effect.map((rows) => rows[0])),
    moveOut: (id: string) =>
      db
        .query(
          (sql) => sql<Array<MoveOutRow>>`
          select ${MOVE_OUT_COLUMNS(sql)} from move_outs m join policies p on p.id = m.policy_id
          where m.id = ${id}`,
        )
        .pipe(Effect.map((rows) => rows[0]!)),
    setMoveOutDate: (id: string, date: string) =>
      db.query(
        (sql) => sql`
        update move_outs set move_out_date = ${date}::date, updated_at = now()
        where id = ${id} and move_out_date <> ${date}::date`,
      ),
    moveOutsOf: (policyId: string) =>
      db.query(
        (sql) => sql<Array<MoveOutRow>>`
        select ${MOVE_OUT_COLUMNS(sql)} from move_outs m join policies p on p.id = m.policy_id
        where m.policy_id = ${policyId} order by m.id`,
      ),
  }
})
