-- Partners resend their whole roster, so most writes to buildings and units rewrite rows whose indexed columns
-- (identifiers, names, street keys) stay the same. Pages kept 30% free let Postgres write those as heap-only
-- updates: the new row version goes in the same page and none of the table's indexes is touched. Pages written
-- before this keep filling to the brim until they are rewritten.
alter table properties set (fillfactor = 70);
alter table units set (fillfactor = 70);
