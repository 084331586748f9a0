import { containing, escapeLike, type Sql } from "../platform/Db.ts"

/**
 * How operators' owner filters read what was typed, wherever they filter (deliveries, bulk retries, endpoints,
 * policies): case-insensitively, an owner whose slug starts with the text or whose name contains it. A text that
 * is an owner's slug exactly names that owner alone, so a chosen suggestion (or a link) never takes in
 * `acme-west` beside `acme`. The text's `%`, `_` and `\` are matched as themselves.
 */

/** Owners (`id`, `slug`, `name`) whose slug starts with `text` or whose name contains it. */
export const ownersMatching = (sql: Sql, text: string) => sql`
  select o.id, o.slug, o.name from owners o
  where lower(o.slug) like lower(${`${escapeLike(text)}%`})
     or lower(o.name) like lower(${containing(text)})`

/** The owners an owner filter of `text` names: the owner whose slug it is, otherwise those it matches. */
export const ownersFiltered = (sql: Sql, text: string) => sql`
  select o.id, o.slug, o.name from owners o where lower(o.slug) = lower(${text})
  union all
  select m.id, m.slug, m.name from (${ownersMatching(sql, text)}) m
  where not exists (select 1 from owners x where lower(x.slug) = lower(${text}))`
