-- An operator may publish a dead letter again (the console's system page); the row keeps how often and when last.
alter table dead_letters
  add column retries integer not null default 0,
  add column retried_at timestamptz;
