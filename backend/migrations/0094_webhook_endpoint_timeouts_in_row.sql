-- The endpoint's attempts that timed out in a row, as the process that recorded the bucket's latest outcome counted
-- them (null: no outcome in the bucket touched the count). Written by the statement that records outcomes, into the
-- health bucket it updates anyway, so the console can say why an endpoint is slowed at no cost per attempt.
alter table webhook_endpoint_health add column timeouts_in_row integer;
