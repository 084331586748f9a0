-- An operator may publish a dead letter again (the console's system page); the row keeps how often and when last.
-- Repeatable: a database may have run it under its earlier numbers (0063, 0066).
alter table dead_letters
  add column if not exists retries integer not null default 0,
  add column if not exists retried_at timestamptz;
