-- Outbound webhooks: providers, subscribers and their signing secrets, endpoints, deliveries and attempts.

-- A platform provider: one subscriber covering every owner granted to it, or only named properties.
create table providers (
  id bigint generated always as identity primary key,
  name text not null unique,
  created_at timestamptz not null default now()
);

create table provider_owners (
  provider_id bigint not null references providers (id),
  owner_id bigint not null references owners (id),
  primary key (provider_id, owner_id)
);
create index provider_owners_owner on provider_owners (owner_id);

-- A provider covering named properties receives only the events of those buildings.
create table provider_properties (
  provider_id bigint not null references providers (id),
  property_id bigint not null references properties (id),
  primary key (provider_id, property_id)
);
create index provider_properties_property on provider_properties (property_id);

-- Who receives deliveries and holds a signing secret: one owner (created on first use) or one provider
-- (provisioned by operators). Custom headers are operator-configured and sent with every delivery.
create table webhook_subscribers (
  id bigint generated always as identity primary key,
  owner_id bigint unique references owners (id),
  provider_id bigint unique references providers (id),
  custom_headers jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  check ((owner_id is null) <> (provider_id is null))
);

-- Signing secrets, sealed under MASTER_KEY. The current secret has no `expires_at`; a rotation gives the
-- previous ones an `expires_at` (now + overlap), and every secret not yet expired signs each delivery.
create table webhook_secrets (
  id bigint generated always as identity primary key,
  subscriber_id bigint not null references webhook_subscribers (id),
  secret_sealed bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz
);
create index webhook_secrets_subscriber on webhook_secrets (subscriber_id, created_at desc);

-- `id` is the integer the published API returns. A deleted endpoint keeps its row (deliveries point to it)
-- but no route or delivery sees it again.
create table webhook_endpoints (
  id bigint generated always as identity primary key,
  subscriber_id bigint not null references webhook_subscribers (id),
  name text not null,
  destination_url text not null,
  events text[] not null,
  status text not null default 'active' check (status in ('active', 'suspended', 'disabled')),
  suspension_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index webhook_endpoints_subscriber on webhook_endpoints (subscriber_id) where deleted_at is null;

-- One delivery per (event, endpoint): `event_id` is the event's Nats-Msg-Id (its outbox id), so a router
-- that sees an event twice records it once. `payload` is the exact body, sent byte for byte on every attempt.
-- `series` counts manual retries: each starts a new series of attempts at attempt 1.
create table webhook_deliveries (
  id bigint generated always as identity primary key,
  endpoint_id bigint not null references webhook_endpoints (id),
  event_id text not null,
  event text not null,
  owner_slug text not null,
  payload bytea not null,
  status text not null default 'pending'
    check (status in ('pending', 'delivering', 'delivered', 'retrying', 'rate_limited', 'failed')),
  series integer not null default 1,
  attempt_number integer not null default 1,
  last_attempted_at timestamptz,
  next_retry_at timestamptz,
  duration_ms integer,
  last_attempt_failure_reason text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (event_id, endpoint_id)
);
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id desc);
create index webhook_deliveries_endpoint_status on webhook_deliveries (endpoint_id, status, id desc);
create index webhook_deliveries_due on webhook_deliveries (next_retry_at)
  where status in ('retrying', 'rate_limited');

-- Every attempt made: what came back (the first 4 KB of the body) or why nothing did.
create table webhook_attempts (
  delivery_id bigint not null references webhook_deliveries (id),
  series integer not null,
  attempt_number integer not null,
  started_at timestamptz not null,
  status_code integer,
  duration_ms integer,
  failure_reason text,
  response_body text,
  primary key (delivery_id, series, attempt_number)
);

-- Operator actions worth a trace (showing or rotating a signing secret, and the console's actions later).
create table audit_log (
  id bigint generated always as identity primary key,
  actor text not null,
  action text not null,
  target text not null,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index audit_log_target on audit_log (target, created_at desc);
