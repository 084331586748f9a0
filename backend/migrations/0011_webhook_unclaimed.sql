-- Deliveries the router made and announced (`dispatched_at`) that no attempt has claimed yet. Their attempt
-- message is their only way forward: if it is lost (the stream dropped it past its age limit, or an operator
-- recreated the stream), the scheduler publishes it again after an hour unclaimed.
create index webhook_deliveries_unclaimed on webhook_deliveries (dispatched_at)
  where status = 'pending' and next_retry_at is null;
