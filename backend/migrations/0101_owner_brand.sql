-- How the partner portal shows an owner: a display name, a logo (an HTTPS image URL) and an accent colour
-- (`#rrggbb`, dark enough for white text). Each is optional; without them the portal shows the owner's name and
-- its own colours.
alter table owners
  add column brand_name text,
  add column brand_logo_url text,
  add column brand_accent_color text;
