import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { Offer } from "./Domain.ts"

/** Serializes the calls of one renter's journey (a double submit waits, then sees the first one's result). */
const JOURNEY_LOCK = 7_239_400

/** A journey as stored; bigints as strings, timestamps ISO 8601. */
export interface EnrollmentRow {
  readonly prospect_id: string
  readonly details_confirmed_at: string | null
  readonly phone: string | null
  readonly yearly_income: string | null
  readonly employment_status: string | null
  readonly has_ssn: boolean | null
  readonly terms_accepted_at: string | null
  readonly inputs_supplied_at: string | null
  readonly offers: ReadonlyArray<Offer> | null
  readonly application_id: string | null
}

export class EnrollmentRepo extends Context.Service<EnrollmentRepo>()(
  "partner-service/enrollment/EnrollmentRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        lock: (prospectId: string) =>
          db.query((sql) => sql`select pg_advisory_xact_lock(${JOURNEY_LOCK}, hashtext(${prospectId}))`),
        find: (prospectId: string) =>
          db
            .query(
              (sql) => sql<Array<EnrollmentRow>>`
                select prospect_id::text, details_confirmed_at::text, phone, yearly_income::text, employment_status,
                       has_ssn, terms_accepted_at::text, inputs_supplied_at::text, offers, application_id::text
                from enrollments where prospect_id = ${prospectId}`,
            )
            .pipe(Effect.map(([row]) => row)),
        confirmDetails: (prospectId: string, phone: string | null) =>
          db.query(
            (sql) => sql`
              insert into enrollments (prospect_id, details_confirmed_at, phone)
              values (${prospectId}, now(), ${phone})
              on conflict (prospect_id) do update
              set details_confirmed_at = now(), phone = coalesce(excluded.phone, enrollments.phone),
                  updated_at = now()`,
          ),
        supplyInputs: (
          prospectId: string,
          inputs: {
            readonly yearlyIncome: number
            readonly employmentStatus: string
            readonly hasSsn: boolean
            readonly offers: ReadonlyArray<Offer>
          },
        ) =>
          db.query(
            (sql) => sql`
              update enrollments
              set yearly_income = ${inputs.yearlyIncome}, employment_status = ${inputs.employmentStatus},
                  has_ssn = ${inputs.hasSsn}, terms_accepted_at = now(), inputs_supplied_at = now(),
                  offers = ${sql.json(inputs.offers as never)}, updated_at = now()
              where prospect_id = ${prospectId}`,
          ),
        /** The offers still open after underwriting refused one. */
        setOffers: (prospectId: string, offers: ReadonlyArray<Offer>) =>
          db.query(
            (sql) => sql`
              update enrollments set offers = ${sql.json(offers as never)}, updated_at = now()
              where prospect_id = ${prospectId}`,
          ),
        setApplication: (prospectId: string, applicationId: string | null) =>
          db.query(
            (sql) => sql`
              update enrollments set application_id = ${applicationId}, updated_at = now()
              where prospect_id = ${prospectId}`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(EnrollmentRepo, EnrollmentRepo.make)
}
