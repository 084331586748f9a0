-- One spelling of a stopped job everywhere, the contract's: `canceled`, as replays and policies have it.
alter table bulk_retries drop constraint bulk_retries_status_check;
update bulk_retries set status = 'canceled' where status = 'cancelled';
alter table bulk_retries add constraint bulk_retries_status_check
  check (status in ('previewed', 'running', 'completed', 'canceled'));
