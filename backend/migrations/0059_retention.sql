-- Indexes for the retention sweep's age predicates, so each of its batches is an index range however large the
-- table. Finished deliveries need none: (status, created_at) leads webhook_deliveries_status_created (0055).
create index dead_letters_created on dead_letters (created_at);
create index bulk_retries_finished on bulk_retries (finished_at) where status <> 'running';
create index operator_sessions_created on operator_sessions (created_at);
create index operator_sign_in_failures_failed on operator_sign_in_failures (failed_at);
