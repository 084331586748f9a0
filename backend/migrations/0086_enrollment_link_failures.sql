-- Enrollment links that named no journey, and unknown document names, per source (the caller's address; an IPv6
-- caller's /64): guessing from one place is slowed down and then refused there alone, whichever process serves
-- the renter's pages.
create table enrollment_link_failures (
  source text primary key,
  failures integer not null,
  last_failure_at timestamptz not null,
  blocked_until timestamptz
);
create index enrollment_link_failures_last_failure on enrollment_link_failures (last_failure_at);
