-- The console's search finds a prospect by the renter's first or last name, by its start and ignoring case.
create index prospects_first_name_search on prospects (lower(first_name) text_pattern_ops);
create index prospects_last_name_search on prospects (lower(last_name) text_pattern_ops);

-- A prospect's page lists its applications' payment attempts, declined ones with the processor's reason.
create index charges_application on charges (application_id);
