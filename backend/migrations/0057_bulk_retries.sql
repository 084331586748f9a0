-- Bulk retries started from the console: the filter, the ids that matched it when the job was created (taken in
-- batches, `snapshot_after` being where the next batch starts), and how many have been retried (`done`, which is
-- also the position of the next item). A worker holds a running job under a lease (`lease_owner` until
-- `lease_until`), renewed at every step, so a job whose process stopped is taken over once the lease runs out.
create table bulk_retries (
  id bigint generated always as identity primary key,
  filter jsonb not null,
  rate_per_second integer not null check (rate_per_second between 1 and 100),
  status text not null default 'running' check (status in ('running', 'completed', 'cancelled')),
  total integer not null default 0,
  done integer not null default 0,
  snapshot_complete boolean not null default false,
  snapshot_after text,
  created_by text not null,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  lease_owner text,
  lease_until timestamptz
);
create index bulk_retries_running on bulk_retries (id) where status = 'running';

create table bulk_retry_items (
  bulk_retry_id bigint not null references bulk_retries (id),
  position integer not null,
  delivery_id bigint not null,
  primary key (bulk_retry_id, position)
);
