-- The console's live view (`GET /api/live`) hears of endpoint changes and bulk-retry progress through NOTIFY on
-- `console_live`, whichever process or path made the change (console, CLI, workers). The payload names the row and
-- what the view shows of it; the page reads anything more from the API. Delivery status changes come over NATS
-- (`webhooks.status.*`) instead: a NOTIFY per delivery would serialize the delivery actor's commits.
create function console_live_endpoint() returns trigger language plpgsql as $$
begin
  perform pg_notify('console_live', json_build_object('kind', 'endpoint', 'id', new.id::text)::text);
  return null;
end $$;

create trigger webhook_endpoints_console_live
  after insert or update on webhook_endpoints
  for each row execute function console_live_endpoint();

create function console_live_bulk_retry() returns trigger language plpgsql as $$
begin
  perform pg_notify(
    'console_live',
    json_build_object('kind', 'bulk_retry', 'id', new.id::text, 'status', new.status, 'total', new.total,
                      'done', new.done)::text);
  return null;
end $$;

create trigger bulk_retries_console_live
  after insert or update on bulk_retries
  for each row execute function console_live_bulk_retry();
