-- Failed console sign-ins per email and source (the caller's address; an IPv6 caller's /64): only the source that
-- failed is refused, so a stranger who knows an operator's email cannot lock the operator out. Failures of the
-- email from everywhere only slow its answers down.
alter table operator_sign_in_failures add column source text not null default '';
drop index operator_sign_in_failures_email;
create index operator_sign_in_failures_email on operator_sign_in_failures (email, failed_at desc);
create index operator_sign_in_failures_email_source on operator_sign_in_failures (email, source, failed_at desc);
