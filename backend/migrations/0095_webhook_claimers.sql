-- The workers processes making webhook attempts, each alive while it renews `alive_until` (every second, a few
-- seconds ahead), and which of them claimed each delivery: a claim whose process stopped renewing is taken over as
-- soon as its message comes back, rather than when its lease (the attempt's whole timeout) runs out.
create table webhook_claimers (
  id uuid primary key,
  alive_until timestamptz not null
);
alter table webhook_deliveries add column claimed_by uuid;
