-- webhook_rate_take stepped through the slots that left the window with an integer FOR loop, whose bounds
-- PL/pgSQL evaluates as int4: slots past 2^31 (epoch seconds from January 2038, or any shorter backoff unit today)
-- failed with "integer out of range". The loop now counts the slots stepped over (at most 60) and keeps the slot
-- itself in bigint.
create or replace function webhook_rate_take(
  counts integer[], total integer, latest_second bigint, now_second bigint, wanted integer, cap integer,
  out new_counts integer[], out new_total integer, out new_latest bigint, out granted integer
) language plpgsql immutable as $$
declare
  step integer;
  slot integer;
begin
  new_counts := counts;
  new_total := total;
  new_latest := greatest(latest_second, now_second);
  if new_latest - latest_second >= 61 then
    new_counts := array_fill(0, array[61]);
    new_total := 0;
  elsif new_latest > latest_second then
    for step in 1 .. (new_latest - latest_second)::integer loop
      slot := ((latest_second + step) % 61)::integer + 1;
      new_total := new_total - new_counts[slot];
      new_counts[slot] := 0;
    end loop;
  end if;
  granted := least(wanted, greatest(0, cap - new_total));
  slot := (new_latest % 61)::integer + 1;
  new_counts[slot] := new_counts[slot] + granted;
  new_total := new_total + granted;
end $$;
