-- The operator console's delivery list, newest first (`created_at desc, id desc`) under each of its filters:
-- each filter leads an index that ends in the sort, so a page (first or after a cursor) is one index range.
-- A provider's deliveries are read endpoint by endpoint through `webhook_deliveries_endpoint_created`, and a
-- delivery id is the primary key. Held deliveries are few: a partial index keeps them apart.
create index webhook_deliveries_created on webhook_deliveries (created_at desc, id desc);
create index webhook_deliveries_endpoint_created on webhook_deliveries (endpoint_id, created_at desc, id desc);
create index webhook_deliveries_owner_created on webhook_deliveries (owner_slug, created_at desc, id desc);
create index webhook_deliveries_event_created on webhook_deliveries (event, created_at desc, id desc);
create index webhook_deliveries_status_created on webhook_deliveries (status, created_at desc, id desc);
create index webhook_deliveries_held_created on webhook_deliveries (created_at desc, id desc)
  where held_since is not null;
