-- 015_scoped_groups.sql - twin group names scoped to their attested owner; runs set aside when an owner claims a group; who reads a group, and which group a name read means.

-- A group's key (twin_groups.twin_group, runs.twin_group and every table keyed by group) and the name its owner
-- typed. The key is the name while no other group holds it, else OWNER/NAME (server/rules/group_rule.h). Every
-- group made before keeps its key, which is its name: reachable as before, and as OWNER/NAME once its owner is
-- attested.
ALTER TABLE twin_groups ADD COLUMN IF NOT EXISTS name text;
UPDATE twin_groups SET name = twin_group WHERE name IS NULL;
ALTER TABLE twin_groups ALTER COLUMN name SET NOT NULL;
-- An attested owner has one group of a name (the registration looks it up under this index).
CREATE UNIQUE INDEX IF NOT EXISTS twin_groups_owned ON twin_groups (owner, name) WHERE owner_attested;
CREATE INDEX IF NOT EXISTS twin_groups_name ON twin_groups (name);

-- A run set aside from a group when its owner claimed it (its run was attested, the run's was not, or not as the
-- owner): it left the group (twin_group NULL), so it counts in no comparison and no hardware evidence; it is kept,
-- and says from which group, why and when.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS set_aside_from text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS set_aside_reason text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS set_aside_at timestamptz;
CREATE INDEX IF NOT EXISTS runs_set_aside ON runs (set_aside_from, run_key) WHERE set_aside_from IS NOT NULL;
