-- A bulk retry's number, as the console shows it ("Bulk retry #3"): given when the job starts, so the previews an
-- operator looks at and never starts use none of them. The id stays the API's key.
create sequence bulk_retry_numbers;
alter table bulk_retries add column number bigint unique;
update bulk_retries b set number = numbered.number
  from (select id, row_number() over (order by id) as number from bulk_retries where status <> 'previewed') numbered
  where b.id = numbered.id;
select setval('bulk_retry_numbers', coalesce((select max(number) from bulk_retries), 0) + 1, false);
