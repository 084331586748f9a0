-- A change made in the partner portal is audited with channel `portal`, its actor the portal session.
alter table audit_log drop constraint audit_log_channel_check;
alter table audit_log add constraint audit_log_channel_check
  check (channel in ('console', 'cli', 'api', 'portal'));
