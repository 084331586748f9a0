-- Change notifications for the caches processes keep. Every change to clients, grants or owners notifies
-- `auth_changed`: each process LISTENs and forgets whom it trusted, so a revocation or a new grant counts at once.
create function notify_auth_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth_changed', '');
  return null;
end
$$;

create trigger clients_auth_changed after insert or update or delete on clients
  for each statement execute function notify_auth_changed();
create trigger grants_auth_changed after insert or update or delete on client_owner_grants
  for each statement execute function notify_auth_changed();
create trigger owners_auth_changed after insert or update or delete on owners
  for each statement execute function notify_auth_changed();

-- Likewise for a source's ingest mappings: processes forget their copy of the source's mappings.
create function notify_mappings_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('mappings_changed', coalesce(new.source_code, old.source_code));
  return null;
end
$$;

create trigger source_event_mappings_changed after insert or update or delete on source_event_mappings
  for each row execute function notify_mappings_changed();
