-- Each endpoint's attempts per 5 minutes, kept by the statement that records attempt outcomes, so the console's
-- health figures (last hour, last day) read at most 288 rows and never the attempts. `latency` counts attempts
-- per duration slot (bounds in backend/webhooks/HealthBuckets.ts), from which p50 and p95 are estimated. No foreign
-- key: endpoints are never deleted (a soft delete), and the check would cost every record a look-up.
create table webhook_endpoint_health (
  endpoint_id bigint not null,
  bucket_start timestamptz not null,
  attempts integer not null,
  succeeded integer not null,
  failed integer not null,
  latency integer[] not null,
  primary key (endpoint_id, bucket_start)
);
