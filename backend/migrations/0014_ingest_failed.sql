-- An event the ingest actor gave up on (kept in dead_letters) is logged too, with outcome `failed` and the reason.
alter table ingest_log drop constraint ingest_log_outcome_check;
alter table ingest_log add constraint ingest_log_outcome_check
  check (outcome in ('applied', 'stale', 'duplicate', 'ignored', 'failed'));
