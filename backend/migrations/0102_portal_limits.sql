-- A portal session ends after PORTAL_IDLE_MINUTES without a request: when it was last used, renewed at most once
-- a minute. A session exchanged before this column was last used when it was exchanged, as far as is known.
alter table portal_sessions add column last_seen_at timestamptz;
update portal_sessions set last_seen_at = exchanged_at where exchanged_at is not null;

