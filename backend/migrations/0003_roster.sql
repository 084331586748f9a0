-- The rest of a property owner.
alter table owners
  add column purchase_flow_enabled boolean not null default false,
  add column max_coverage_amount_cents bigint,
  add column embedded_frame_ancestors text[] not null default '{}',
  add column guarantor_coverage_capable boolean not null default false,
  add column default_bank_account_id bigint;

-- For an owner with an existing relationship: the buildings (PMS property ids) granted to a client; null grants
-- every building.
alter table client_owner_grants add column buildings text[];

-- Payout accounts. The account number is sealed under MASTER_KEY; only its last four digits are kept in clear.
create table bank_accounts (
  id bigint generated always as identity primary key,
  owner_id bigint not null references owners (id),
  external_system_id text not null,
  display_name text not null,
  routing_number text not null,
  account_number_sealed bytea not null,
  account_number_last4 text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (owner_id, external_system_id)
);
alter table owners add constraint owners_default_bank_account
  foreign key (default_bank_account_id) references bank_accounts (id);

-- Buildings. `external_system_id` is the partner's identifier once linked; a building the service created
-- (for an owner with an existing relationship) may have none yet and be adopted by (pms_type, pms_property_id).
create table properties (
  id bigint generated always as identity primary key,
  owner_id bigint not null references owners (id),
  external_system_id text,
  building_name text not null,
  -- normalized street line (USPS Pub 28 key) and zip: with the building name, the match key of rule 3
  street_key text not null,
  street text not null,
  city text not null,
  state text not null,
  zip text not null,
  type text not null default 'multifamily',
  policy_holder_name text,
  pms_type text,
  pms_property_id text,
  default_coverage_type text not null default 'multiplier',
  default_coverage_value numeric not null default 1.0,
  bank_account_id bigint references bank_accounts (id),
  active boolean not null default true,
  renter_guarantee_enabled boolean not null default false,
  -- set once the street was derived from the building's units: a resent seed address no longer replaces it
  street_derived boolean not null default false,
  -- set when service staff corrected the address or a policy exists: derivation stops
  address_locked boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (owner_id, external_system_id)
);
create index properties_match on properties (owner_id, lower(building_name), street_key, zip);
create index properties_pms on properties (owner_id, pms_type, pms_property_id);

create table units (
  id bigint generated always as identity primary key,
  property_id bigint not null references properties (id),
  external_system_id text,
  name text not null,
  line_one text,
  line_two text,
  city text,
  state text,
  zip text,
  pms_unit_id text,
  default_coverage_type text,
  default_coverage_value numeric,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (property_id, external_system_id)
);
create index units_name on units (property_id, lower(name));
create index units_pms on units (property_id, pms_unit_id);

-- Disagreements between a locked building address and the one its units derive, for operators.
create table address_disagreements (
  id bigint generated always as identity primary key,
  property_id bigint not null references properties (id),
  stored_street text not null,
  derived_street text not null,
  created_at timestamptz not null default now()
);
