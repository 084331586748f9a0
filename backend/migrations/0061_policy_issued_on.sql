-- The date a policy was issued: its owner's date at the sale (the test clock's in staging and development), which
-- monthly premiums count from when the coverage had already begun. Policies issued before it: their UTC day.
alter table policies add column issued_on date;
update policies set issued_on = (created_at at time zone 'UTC')::date;
alter table policies alter column issued_on set not null;
