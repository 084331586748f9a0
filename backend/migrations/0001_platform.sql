-- Messages to publish to JetStream, written in the same transaction as the state they describe.
-- `id` is the Nats-Msg-Id (JetStream drops a republished id inside its duplicate window);
-- `seq` orders the rows of one key, so one key's messages are published in commit order.
create table outbox (
  seq bigint generated always as identity primary key,
  id uuid not null unique default gen_random_uuid(),
  key text not null,
  partition smallint not null,
  subject text not null,
  headers jsonb not null default '{}'::jsonb,
  payload bytea not null,
  created_at timestamptz not null default now(),
  sent_at timestamptz
);
create index outbox_unsent on outbox (partition, seq) where sent_at is null;
create index outbox_sent on outbox (sent_at) where sent_at is not null;

-- One row per outbox partition; a relay holds a row lock while it publishes that partition, so two relays
-- never publish the same partition at once.
create table outbox_partitions (partition smallint primary key);
insert into outbox_partitions (partition) select generate_series(0, 15);

-- Messages an actor terminated (undecodable, or given up on), kept for operators.
create table dead_letters (
  id bigint generated always as identity primary key,
  actor text not null,
  stream text not null,
  stream_seq bigint not null,
  subject text not null,
  headers jsonb not null default '{}'::jsonb,
  payload bytea not null,
  reason text not null,
  delivery_count integer not null,
  created_at timestamptz not null default now(),
  unique (actor, stream, stream_seq)
);
