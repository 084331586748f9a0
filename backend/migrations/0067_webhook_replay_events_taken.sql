-- A replay's events leave it as they are sent (or when it ends canceled), so the table holds only what running
-- replays still have to send: no per-event mark, and the primary key serves the batches.
drop index if exists webhook_replay_events_unsent;
alter table webhook_replay_events drop column if exists sent_at;
