-- Property owners, as far as authentication needs them (a slug to resolve, grants to check); the roster
-- migrations add the rest of an owner's fields.
create table owners (
  id bigint generated always as identity primary key,
  slug text not null unique,
  name text not null,
  external_org_id text unique,
  -- an owner with an existing relationship with the service: created and granted by operators
  managed_by_service boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- API clients: one gateway each; the secret is stored only as a slow hash.
create table clients (
  id text primary key,
  gateway text not null check (gateway in ('partner', 'ingest')),
  name text not null,
  secret_hash text not null,
  scopes text[] not null,
  provider text,
  source text,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

create table client_owner_grants (
  client_id text not null references clients (id),
  owner_id bigint not null references owners (id),
  created_at timestamptz not null default now(),
  primary key (client_id, owner_id)
);
create index client_owner_grants_owner on client_owner_grants (owner_id);

-- Keys that sign access tokens. The newest unretired key signs; a retired key still verifies the tokens it
-- signed until they expire. The private key is sealed under MASTER_KEY.
create table signing_keys (
  kid text primary key,
  algorithm text not null,
  public_jwk jsonb not null,
  private_jwk_sealed bytea not null,
  created_at timestamptz not null default now(),
  retired_at timestamptz
);

-- Failed token requests per client id (known or not), to slow down guessing.
create table token_failures (
  client_id text primary key,
  failures integer not null,
  last_failure_at timestamptz not null,
  blocked_until timestamptz
);
