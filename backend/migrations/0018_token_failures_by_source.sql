-- Failed token requests per client id and source (the caller's address; an IPv6 caller's /64), so that failures
-- from one place slow down only that place: a stranger who knows a client id cannot lock the client out.
drop table token_failures;

create table token_failures (
  client_id text not null,
  source text not null,
  failures integer not null,
  last_failure_at timestamptz not null,
  blocked_until timestamptz,
  primary key (client_id, source)
);
create index token_failures_last_failure on token_failures (last_failure_at);
