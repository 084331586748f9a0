-- Console operators, their server-side sessions, and failed sign-ins (for throttling guessing per email).

create table operators (
  id bigint generated always as identity primary key,
  email text not null,
  role text not null check (role in ('viewer', 'operator', 'admin')),
  password_hash text not null,
  disabled boolean not null default false,
  created_at timestamptz not null default now(),
  last_sign_in_at timestamptz
);
-- Emails are compared case-insensitively: Ops@x.io and ops@x.io are one operator.
create unique index operators_email on operators (lower(email));

-- The cookie's token is stored only as its SHA-256 hash: a copy of this table signs no one in.
create table operator_sessions (
  id bigint generated always as identity primary key,
  operator_id bigint not null references operators (id),
  token_hash bytea not null unique,
  csrf_token text not null,
  created_at timestamptz not null,
  last_seen_at timestamptz not null,
  revoked_at timestamptz
);
create index operator_sessions_operator on operator_sessions (operator_id) where revoked_at is null;

-- One row per failed sign-in of an email (lower-cased, known or not); old rows are pruned as new ones come.
create table operator_sign_in_failures (
  email text not null,
  failed_at timestamptz not null
);
create index operator_sign_in_failures_email on operator_sign_in_failures (email, failed_at desc);
