-- A partner portal session: opened by a partner's one-time link for one owner or one provider, then carried by a
-- cookie. Only hashes of the code and of the cookie's token are kept, so a copy of the table opens nothing. The
-- code is single use: its hash is cleared when it is exchanged for the token.
create table portal_sessions (
  id bigint generated always as identity primary key,
  owner_id bigint references owners (id),
  provider_id bigint references providers (id),
  read_only boolean not null,
  -- The origin allowed to frame the portal (one of the owner's embedded_frame_ancestors); none, and nobody may.
  parent_origin text,
  code_hash bytea unique,
  token_hash bytea unique,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  exchanged_at timestamptz,
  ended_at timestamptz,
  constraint portal_sessions_one_holder check ((owner_id is null) <> (provider_id is null)),
  constraint portal_sessions_token_at_exchange check ((token_hash is null) = (exchanged_at is null))
);
-- Ending every live session of an owner or a provider at once.
create index portal_sessions_owner on portal_sessions (owner_id) where ended_at is null;
create index portal_sessions_provider on portal_sessions (provider_id) where ended_at is null;
-- The retention sweep's pick: sessions expired a while ago.
create index portal_sessions_expires on portal_sessions (expires_at);
