-- Whether the service derived a unit's name. A name the partner sent is kept by updates that omit it; a derived
-- one follows the unit's address. Units stored before this column existed keep their names as if sent.
alter table units add column name_derived boolean not null default false;

-- A building's policy holder defaults to its owner's name followed by ", LLC" (spec, Property).
update properties p set policy_holder_name = o.name || ', LLC'
from owners o
where o.id = p.owner_id and p.policy_holder_name is null;
