-- The renter's enrollment journey, policy applications, payments, policies and their document archives.

-- What the journey publishes on the prospect (the published GET shape): the offers once the renter supplied the
-- last underwriting inputs, whether an application was submitted, and the latest coverage once documented.
-- Partner writes never touch these columns.
alter table prospects
  add column offered_products jsonb not null default '[]'::jsonb,
  add column percent_savings numeric(5, 1),
  add column application_submitted boolean not null default false,
  add column latest_coverage jsonb;

-- One journey per prospect: what the renter confirmed and answered, and the application under way.
create table enrollments (
  prospect_id bigint primary key references prospects (id) on delete cascade,
  details_confirmed_at timestamptz,
  -- the phone as the renter corrected it on the details step (the partner's stays on the prospect)
  phone text,
  -- the last underwriting inputs as the renter gave them (whole dollars a year)
  yearly_income bigint,
  employment_status text,
  has_ssn boolean,
  terms_accepted_at timestamptz,
  inputs_supplied_at timestamptz,
  -- the products offered after the inputs, priced (the journey's Offer shape)
  offers jsonb,
  application_id bigint,
  blocked_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- `status` is the record's (created or canceled); `outcome` is where underwriting and payment left it.
create table policy_applications (
  id bigint generated always as identity primary key,
  prospect_id bigint not null references prospects (id) on delete cascade,
  owner_id bigint not null references owners (id),
  property_id bigint references properties (id),
  unit_id bigint references units (id),
  status text not null default 'created' check (status in ('created', 'canceled')),
  outcome text not null default 'underwriting'
    check (outcome in ('underwriting', 'quoted', 'declined', 'submitted')),
  product_type text not null
    check (product_type in ('security_deposit_insurance', 'cash_deposit', 'renter_guarantee_insurance')),
  product_version text,
  cadence text not null check (cadence in ('upfront', 'monthly')),
  coverage_amount_cents bigint not null,
  -- per payment: the whole premium upfront, one month's on a monthly cadence
  premium_cents bigint not null,
  payments integer not null,
  coverage_start_date date not null,
  coverage_end_date date not null,
  -- the underwriting rules that declined it, for operators (never sent to partners)
  declined_rules text[],
  pms_type text,
  pms_property_id text,
  pms_unit_id text,
  pms_resident_id text,
  source_prospect_id text,
  submitted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((product_type = 'renter_guarantee_insurance') = (product_version is not null))
);
create index policy_applications_prospect on policy_applications (prospect_id);

-- A card as the payment provider keeps it: its reference and the last four digits, never the number.
create table payment_methods (
  id bigint generated always as identity primary key,
  provider text not null,
  reference text not null,
  last4 text not null check (last4 ~ '^[0-9]{4}$'),
  brand text,
  created_at timestamptz not null default now(),
  unique (provider, reference)
);

create sequence policy_number_seq;

create table policies (
  id bigint generated always as identity primary key,
  policy_number text not null unique,
  application_id bigint unique references policy_applications (id) on delete set null,
  prospect_id bigint references prospects (id) on delete set null,
  owner_id bigint not null references owners (id),
  property_id bigint references properties (id),
  unit_id bigint references units (id),
  status text not null check (status in ('active', 'upcoming', 'pending', 'expired', 'canceled')),
  product_type text not null
    check (product_type in ('security_deposit_insurance', 'renter_guarantee_insurance', 'service_deposit')),
  product_version text,
  cadence text not null check (cadence in ('upfront', 'monthly')),
  premium_cents bigint not null,
  payments integer not null,
  coverage_amount_cents bigint not null,
  coverage_start_date date not null,
  coverage_end_date date not null,
  payment_method_id bigint not null references payment_methods (id),
  pms_type text,
  pms_property_id text,
  pms_unit_id text,
  pms_resident_id text,
  source_prospect_id text,
  -- what the documents state about the parties and premises, as of the last issue or revision
  insured_name text not null,
  premises text not null,
  unit_name text not null,
  policy_holder_name text not null,
  -- monthly billing: the day the next premium is due (null when nothing more is due)
  next_charge_on date,
  canceled_at timestamptz,
  expired_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((product_type = 'renter_guarantee_insurance') = (product_version is not null))
);
create index policies_owner_status on policies (owner_id, status);
create index policies_prospect on policies (prospect_id);

-- Every charge asked of the provider, with the key that makes a retry of it the same charge.
create table charges (
  id bigint generated always as identity primary key,
  application_id bigint references policy_applications (id) on delete set null,
  policy_id bigint references policies (id),
  payment_method_id bigint not null references payment_methods (id),
  kind text not null check (kind in ('initial', 'monthly')),
  amount_cents bigint not null,
  status text not null check (status in ('succeeded', 'declined')),
  provider_reference text,
  failure_reason text,
  idempotency_key text not null unique,
  created_at timestamptz not null default now()
);
create index charges_policy on charges (policy_id);

-- Each generation of a policy's archive: a new object, never overwritten or deleted. `requested` until the
-- document actor stored it.
create table policy_documents (
  id bigint generated always as identity primary key,
  policy_id bigint not null references policies (id),
  generation integer not null,
  object_name text not null unique,
  status text not null default 'requested' check (status in ('requested', 'stored')),
  requested_at timestamptz not null default now(),
  stored_at timestamptz,
  unique (policy_id, generation)
);

-- Once a policy exists against a building, its address no longer follows its units (spec: address derivation).
create function lock_policy_building_address() returns trigger language plpgsql as $$
begin
  update properties set address_locked = true, updated_at = now()
  where id = new.property_id and not address_locked;
  return new;
end $$;
create trigger policies_lock_building_address after insert on policies
  for each row execute function lock_policy_building_address();
