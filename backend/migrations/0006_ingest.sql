-- Where each field of a partner's inbound event lives in its payload, per source and event type: a JSON
-- object mapping prospect fields (and `occurred_at`) to JSON Pointers (RFC 6901).
create table source_event_mappings (
  source_code text not null references sources (code),
  event_type text not null,
  fields jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (source_code, event_type)
);

-- The event time of the newest inbound event applied to a prospect: an older one does not revert it.
alter table prospects add column last_event_at timestamptz;

-- Every inbound event the ingest actor consumed, with what became of it, for operators (pruned by age).
create table ingest_log (
  id bigint generated always as identity primary key,
  -- the event's message id: a hash of source, event type and payload
  event_id text not null,
  received_at timestamptz not null,
  source text not null,
  event_type text not null,
  source_prospect_id text,
  occurred_at timestamptz,
  outcome text not null check (outcome in ('applied', 'stale', 'duplicate', 'ignored')),
  reason text,
  prospect_id bigint,
  stream_seq bigint not null,
  created_at timestamptz not null default now()
);
create index ingest_log_event on ingest_log (event_id) where outcome in ('applied', 'stale');
create index ingest_log_source on ingest_log (source, id desc);
create index ingest_log_prospect on ingest_log (source, source_prospect_id, id desc);
create index ingest_log_outcome on ingest_log (outcome, id desc);
create index ingest_log_created on ingest_log (created_at);
