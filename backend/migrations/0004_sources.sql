-- Source codes issued to partners. A prospect names its source, and the source decides which enrollment flow
-- its links use, whether three underwriting fields may be left out, and where an expedited link may send the
-- renter afterwards. The code appears in enrollment URLs, so it is kept to a short URL-safe form.
create table sources (
  code text primary key check (code ~ '^[a-z0-9_-]{1,40}$'),
  flow text not null check (flow in ('embedded', 'expedited')),
  -- when true, screening_result, employment_status and yearly_income are not required on its prospects
  -- (partners whose systems never hold them)
  optional_ingest_fields boolean not null default false,
  -- hostnames a `redirect_url` on an expedited link may point to, themselves or a subdomain; any other
  -- redirect_url is ignored, so a link cannot be made to send renters to an arbitrary site
  redirect_domains text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The clients that may submit prospects (and ingestion events) for a source. A code travels in URLs and
-- payloads and is no secret: without this list any partner could write into another partner's prospects by
-- naming its code.
create table source_clients (
  source_code text not null references sources (code),
  client_id text not null references clients (id),
  created_at timestamptz not null default now(),
  primary key (source_code, client_id)
);
create index source_clients_client on source_clients (client_id);
