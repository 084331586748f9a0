-- A policy's life after issue: revisions and cancellation, activation and expiry, monthly billing and
-- delinquencies, move-outs, and the test clock of staging and development.

alter table policies
  -- why an operator canceled it (never sent to partners)
  add column cancellation_reason text,
  -- how many premiums were asked for so far (the first at enrollment); the next is number + 1
  add column installments_billed integer not null default 1;

-- The lifecycle job's scans: policies due to start, to end, or to be charged.
create index policies_starting on policies (coverage_start_date) where status = 'upcoming';
create index policies_ending on policies (coverage_end_date) where status in ('active', 'upcoming', 'pending');
create index policies_charge_due on policies (next_charge_on) where next_charge_on is not null;

-- Which premium a monthly charge asked for (2 is the first after enrollment's).
alter table charges add column installment integer;

-- A missed premium: `amount_cents` is what is outstanding. One active delinquency per policy; a later miss adds
-- to it, a later successful charge or an operator resolves it.
create table delinquencies (
  id bigint generated always as identity primary key,
  policy_id bigint not null references policies (id),
  status text not null default 'active' check (status in ('active', 'resolved')),
  amount_cents bigint not null check (amount_cents >= 0),
  missed_installments integer[] not null,
  -- what was outstanding when it was resolved (`amount_cents` is then 0)
  resolved_amount_cents bigint,
  resolution text check (resolution in ('charge', 'operator')),
  resolved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((status = 'resolved') = (resolution is not null))
);
create unique index delinquencies_one_active on delinquencies (policy_id) where status = 'active';

-- Move-outs partners report; `external_id` is the partner's upsert key within the owner.
create table move_outs (
  id bigint generated always as identity primary key,
  owner_id bigint not null references owners (id),
  external_id text not null,
  policy_id bigint not null references policies (id),
  move_out_date date not null,
  status text not null default 'initiated' check (status in ('initiated')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (owner_id, external_id)
);
create index move_outs_policy on move_outs (policy_id);

-- Staging and development: how many days an owner's policies live ahead of the real date (expiry, activation,
-- billing). Production never reads it.
create table test_clocks (
  owner_id bigint primary key references owners (id) on delete cascade,
  offset_days integer not null check (offset_days >= 0),
  updated_at timestamptz not null default now()
);

-- A revision that moves a policy to a unit of another building locks that building's address too.
create trigger policies_lock_moved_building_address after update of property_id on policies
  for each row when (new.property_id is distinct from old.property_id)
  execute function lock_policy_building_address();
