-- A bulk retry's preview is the job itself, not yet started: its snapshot of ids is taken when the operator asks
-- how many deliveries match, and starting it retries exactly those, so the count shown and the job's total are
-- one number. No worker claims a `previewed` job (they claim `running` ones only).
alter table bulk_retries drop constraint bulk_retries_status_check;
alter table bulk_retries add constraint bulk_retries_status_check
  check (status in ('previewed', 'running', 'completed', 'cancelled'));
