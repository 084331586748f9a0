-- An event's timeline (the console's delivery page): when the work behind an outbox row was accepted (null: when
-- its transaction began, `created_at`) and when the row was written, just before its transaction committed. The
-- relay publishes both as headers; the router keeps them, with JetStream's time of storing the event, on each
-- delivery it makes, since the outbox row itself is pruned an hour after it is sent.
alter table outbox
  add column accepted_at timestamptz,
  add column written_at timestamptz not null default clock_timestamp();
alter table webhook_deliveries
  add column event_accepted_at timestamptz,
  add column event_committed_at timestamptz,
  add column event_published_at timestamptz;
