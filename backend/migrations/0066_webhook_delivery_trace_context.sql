-- The trace context of the event a delivery was routed from, set only when the service exports traces: the
-- scheduler sends the delivery's retries with it, so every attempt of a delivery is in the event's trace.
alter table webhook_deliveries add column traceparent text;
