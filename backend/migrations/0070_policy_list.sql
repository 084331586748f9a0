-- The operators' policy list, newest first (`id desc`) under each of its filters: each filter leads an index that
-- ends in the sort, so a page (first or after a cursor) is one index range.
create index policies_owner_newest on policies (owner_id, id desc);
create index policies_status_newest on policies (status, id desc);
create index policies_product_newest on policies (product_type, id desc);
