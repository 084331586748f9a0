-- A recovery is a bulk retry a portal session starts for one of its holder's endpoints: every failed delivery of
-- that endpoint created at or after `recovery_since`. The columns scope it (the portal reads a recovery only
-- through its endpoint, which must be the holder's); the console's own bulk retries leave them null. One recovery
-- of an endpoint runs at a time.
alter table bulk_retries
  add column recovery_endpoint_id bigint,
  add column recovery_since timestamptz,
  add constraint bulk_retries_recovery_check check ((recovery_endpoint_id is null) = (recovery_since is null));

create unique index bulk_retries_one_running_recovery on bulk_retries (recovery_endpoint_id)
  where status = 'running' and recovery_endpoint_id is not null;

-- The live views hear of a recovery's progress with what the portal shows of it; the console reads only the
-- fields it did before.
create or replace function console_live_bulk_retry() returns trigger language plpgsql as $$
begin
  perform pg_notify(
    'console_live',
    json_build_object('kind', 'bulk_retry', 'id', new.id::text, 'status', new.status, 'total', new.total,
                      'done', new.done, 'endpoint_id', new.recovery_endpoint_id,
                      'since', new.recovery_since, 'created_at', new.created_at,
                      'finished_at', new.finished_at)::text);
  return null;
end $$;
