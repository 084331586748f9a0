-- When each workers process's background loops (the outbox relay, the retry scheduler, each actor) last completed
-- a pass, reported every few seconds by the process itself, so the console shows them whichever process serves it.
create table loop_passes (
  process text not null,
  loop text not null,
  passed_at timestamptz not null,
  reported_at timestamptz not null,
  primary key (process, loop)
);
