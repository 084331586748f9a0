-- How far an actor's work on a durable consumer is known to be in Postgres: every message of `stream` the
-- consumer took at or below `stream_seq` was acknowledged, and so committed, before this row was written. Written
-- by the one process leading the actor's checkpoints; after a failover to a standby that lost the last commits,
-- the messages above it are read back from the stream and handled again (platform/ConsumerCheckpoints.ts).
create table consumer_checkpoints (
  stream text not null,
  consumer text not null,
  stream_seq bigint not null,
  updated_at timestamptz not null,
  primary key (stream, consumer)
);

-- Prospects waiting for their eligibility decision, oldest first: one left `processing` for long (its decision
-- lost with the commits a failover lost, while its request was acknowledged) is asked for again.
create index prospects_processing on prospects (updated_at) where status = 'processing';
