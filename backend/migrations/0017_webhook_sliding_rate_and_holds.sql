-- The rate limit over any 60 seconds (not clock minutes), and deliveries held while their endpoint is suspended.

-- Attempts started per endpoint in each of the last 61 seconds: slot `second % 61 + 1` of `counts` holds the
-- count of a second no older than `latest_second - 60`, `total` their sum. Counting the second 60 seconds back as
-- well keeps every window of 60 seconds within the limit, whatever the fraction of a second it starts at (the
-- price: at most one second's attempts refused early). One row per endpoint, locked by the claim's upsert, so
-- concurrent claims from any process count in turn. `granted` hands the claim its share back.
create table webhook_rate_limits (
  endpoint_id bigint primary key references webhook_endpoints (id),
  latest_second bigint not null,
  counts integer[] not null,
  total integer not null,
  granted integer not null
);

drop table webhook_rate_windows;

-- Takes up to `wanted` attempts from an endpoint's window at `now_second` with `cap` per 60 seconds: the slots of
-- seconds that left the window are emptied first. A `now_second` behind `latest_second` (another process's clock)
-- counts in the latest second.
create function webhook_rate_take(
  counts integer[], total integer, latest_second bigint, now_second bigint, wanted integer, cap integer,
  out new_counts integer[], out new_total integer, out new_latest bigint, out granted integer
) language plpgsql immutable as $$
declare
  s bigint;
begin
  new_counts := counts;
  new_total := total;
  new_latest := greatest(latest_second, now_second);
  if new_latest - latest_second >= 61 then
    new_counts := array_fill(0, array[61]);
    new_total := 0;
  elsif new_latest > latest_second then
    for s in latest_second + 1 .. new_latest loop
      new_total := new_total - new_counts[s % 61 + 1];
      new_counts[s % 61 + 1] := 0;
    end loop;
  end if;
  granted := least(wanted, greatest(0, cap - new_total));
  new_counts[new_latest % 61 + 1] := new_counts[new_latest % 61 + 1] + granted;
  new_total := new_total + granted;
end $$;

-- A delivery whose endpoint was suspended when its attempt came: it keeps its status and attempt, with no attempt
-- scheduled, until the endpoint is active again (or disabled or deleted, which fail it). The scheduler looks for
-- held deliveries whose endpoint changed.
alter table webhook_deliveries add column held_since timestamptz;
create index webhook_deliveries_held on webhook_deliveries (endpoint_id) where held_since is not null;
