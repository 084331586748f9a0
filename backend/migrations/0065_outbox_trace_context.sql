-- The W3C trace context (`traceparent`) of the transaction that wrote the row, set only when the service exports
-- traces: the relay publishes it as the message's `traceparent` header, so the consumer continues the trace.
alter table outbox add column traceparent text;
