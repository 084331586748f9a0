-- A portal session ends after PORTAL_IDLE_MINUTES without a request: when it was last used, renewed at most once
-- a minute. A session exchanged before this column was last used when it was exchanged, as far as is known.
alter table portal_sessions add column last_seen_at timestamptz;
update portal_sessions set last_seen_at = exchanged_at where exchanged_at is not null;

-- The renter's enrollment links and the portal's one-time links are throttled alike per source address
-- (platform/AddressThrottle.ts): one table of failures, each throttle counting under its own scope.
alter table enrollment_link_failures rename to address_failures;
alter table address_failures add column scope text not null default 'enrollment_link';
alter table address_failures alter column scope drop default;
alter table address_failures drop constraint enrollment_link_failures_pkey;
alter table address_failures add primary key (scope, source);
alter index enrollment_link_failures_last_failure rename to address_failures_last_failure;
