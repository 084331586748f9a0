-- The audit log of every operator action (console, CLI, operator API): where it came from and the target's state
-- before and after. Append-only: a trigger refuses every UPDATE, DELETE and TRUNCATE, whoever asks.
alter table audit_log
  add column channel text not null default 'cli' check (channel in ('console', 'cli', 'api')),
  add column before jsonb,
  add column after jsonb;

-- The console's audit page: newest first, by actor or action.
create index audit_log_newest on audit_log (id desc);
create index audit_log_actor on audit_log (actor, id desc);
create index audit_log_action on audit_log (action, id desc);

create function audit_log_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'audit_log is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
end $$;

create trigger audit_log_no_change before update or delete on audit_log
  for each row execute function audit_log_append_only();
create trigger audit_log_no_truncate before truncate on audit_log
  for each statement execute function audit_log_append_only();
