-- A console sign-in waits in its address's own lane for a hash slot until that address has failed a few times in
-- the window, whatever the emails: the count is read by source alone on every sign-in.
create index operator_sign_in_failures_source on operator_sign_in_failures (source, failed_at desc);
