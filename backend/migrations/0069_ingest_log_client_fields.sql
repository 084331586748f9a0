-- The ingest log keeps who sent each event (the API client) and the fields its mapping read from the payload,
-- for the console's ingest page. Rows logged before this migration have neither.
alter table ingest_log add column client_id text, add column fields jsonb;
-- The console filters the log by a partner's prospect id without naming the source.
create index ingest_log_source_prospect_id on ingest_log (source_prospect_id, id desc);
