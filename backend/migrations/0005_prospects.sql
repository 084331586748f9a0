-- Renter prospects, keyed on (source, source_prospect_id). `id` is the integer the published API returns;
-- webhooks carry it as `tpp_<id>`. Every field a partner may omit is nullable: a prospect missing a required
-- one is stored `incomplete` rather than refused.
create table prospects (
  id bigint generated always as identity primary key,
  owner_id bigint not null references owners (id),
  source text not null references sources (code),
  source_prospect_id text not null,
  status text not null check (status in ('incomplete', 'processing', 'ready', 'error')),
  email text,
  phone text,
  first_name text,
  last_name text,
  birthdate date,
  lease_start_date date,
  lease_end_date date,
  monthly_rent_cents bigint,
  deposit_amount_cents bigint,
  screening_result text,
  employment_status text,
  yearly_income bigint,
  has_ssn boolean,
  citizenship text,
  education_level text,
  terms_accepted_at timestamptz,
  -- null until the partner first sends the array; replaced whole, never merged
  authorized_members jsonb,
  -- sealed under MASTER_KEY like bank account numbers; never returned
  social_security_number_sealed bytea,
  guarantor_coverage boolean not null default false,
  pms_type text,
  pms_property_id text,
  pms_unit_id text,
  pms_prospect_id text,
  -- the partner's identifiers of the building and unit, as sent or as nested items named them
  property_external_id text,
  unit_external_id text,
  -- what those references resolved to on the owner's roster when the prospect was last written
  property_id bigint references properties (id),
  unit_id bigint references units (id),
  -- bumped by every write; an eligibility decision lands only on the version it was asked for
  version integer not null default 1,
  decided_version integer,
  effective_coverage_amount_cents bigint,
  sdi_ineligibility_reasons text[],
  cd_ineligibility_reasons text[],
  rg_eligibility_status text check (rg_eligibility_status in ('eligible', 'ineligible')),
  rg_ineligibility_reasons text[],
  eligible boolean,
  -- why the last eligibility check of this version could not finish (status `error`), for operators
  error_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (source, source_prospect_id)
);
create index prospects_owner_email on prospects (owner_id, lower(email));
create index prospects_property on prospects (property_id);
create index prospects_unit on prospects (unit_id);
