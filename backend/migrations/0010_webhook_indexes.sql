-- `webhook_deliveries_due` (0008) serves no query: the scheduler's queries use `webhook_deliveries_scheduled`
-- (0009), whose predicate covers every status the scheduler looks at. Dropping it spares an index update for
-- every delivery that enters `retrying` or `rate_limited`.
drop index if exists webhook_deliveries_due;
