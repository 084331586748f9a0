-- Replays of an endpoint's missed events: what was asked (the time range and event names), and the events found
-- on `EVENTS` for it when it was asked, each with its body as stored, sent in stream order a batch at a time.
-- `next_batch_at` paces a running replay across every worker process (one batch per second at most); a replay
-- survives a restart because everything it still has to send is here.
create table webhook_replays (
  id bigint generated always as identity primary key,
  endpoint_id bigint not null references webhook_endpoints (id),
  since timestamptz not null,
  until timestamptz not null,
  events text[] not null,
  status text not null default 'running' check (status in ('running', 'completed', 'canceled')),
  total integer not null,
  sent integer not null default 0,
  next_batch_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  ended_at timestamptz
);
create index webhook_replays_endpoint on webhook_replays (endpoint_id, id);
create index webhook_replays_running on webhook_replays (next_batch_at) where status = 'running';

create table webhook_replay_events (
  replay_id bigint not null references webhook_replays (id) on delete cascade,
  seq bigint not null,
  event_id text not null,
  event text not null,
  owner_slug text not null,
  payload bytea not null,
  sent_at timestamptz,
  primary key (replay_id, seq)
);
create index webhook_replay_events_unsent on webhook_replay_events (replay_id, seq) where sent_at is null;
