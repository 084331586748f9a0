-- The delivery engine's bookkeeping: when an attempt message was last published for a delivery, the scheduler's
-- index, and the per-endpoint attempt counters of the rate limit.

-- When the scheduler (or the router) last published an attempt message for the delivery's current attempt. A due
-- row is published once; it is published again only if it is still not claimed long after (a lost message).
alter table webhook_deliveries add column dispatched_at timestamptz;

-- Rows the scheduler looks at: a due attempt (pending after a manual retry, retrying, rate_limited) or a claimed
-- attempt whose lease (`next_retry_at` while `delivering`) may run out.
create index webhook_deliveries_scheduled on webhook_deliveries (next_retry_at)
  where status in ('pending', 'retrying', 'rate_limited', 'delivering') and next_retry_at is not null;

-- Attempts started per endpoint in each clock minute, shared by every worker process.
create table webhook_rate_windows (
  endpoint_id bigint not null references webhook_endpoints (id),
  window_start timestamptz not null,
  attempts integer not null,
  primary key (endpoint_id, window_start)
);
