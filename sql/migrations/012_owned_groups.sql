-- 012_owned_groups.sql - twin groups with owners; facts about job steps attested by slurmstepd (or the admin); what the comparison knew when it last compared a group's rank.

-- A twin group belongs to the user who created it; runs of other users join only when it is shared with them.
CREATE TABLE IF NOT EXISTS twin_groups (
    twin_group     text PRIMARY KEY,
    owner          text NOT NULL,                 -- the creating run's user
    owner_attested boolean NOT NULL,              -- attested (SPANK plugin or admin) or only reported by the job
    shared_with    text[] NOT NULL DEFAULT '{}',  -- users whose runs may join as well; '*' = anyone
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- Groups that existed before: the user of their first run owns them (as reported).
INSERT INTO twin_groups (twin_group, owner, owner_attested)
SELECT DISTINCT ON (twin_group) twin_group, user_name, false FROM runs WHERE twin_group IS NOT NULL
ORDER BY twin_group, run_key ON CONFLICT DO NOTHING;

-- The user slurmstepd (or the admin) attested for the run's job; NULL when only the job said who it is.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS attested_user text;

-- What slurmstepd saw of one job step on one node: which global ranks ran there, for which user, in which
-- node list, with which GPUs. Written with a credential the job never sees.
CREATE TABLE IF NOT EXISTS attestations (
    job_id      text NOT NULL,
    step_id     text NOT NULL,
    node        text NOT NULL,
    node_index  int,
    ranks       int[] NOT NULL,
    user_name   text NOT NULL,
    nodes       text NOT NULL DEFAULT '',
    gpus        text NOT NULL DEFAULT '',
    attested_by text NOT NULL,                    -- slurmstepd | admin
    attested_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, step_id, node)
);

-- The comparison of one group's rank: how far (NULL: nothing compared), up to where it meant to go (target;
-- NULL: nothing to compare), which runs it compared (members), and when.
ALTER TABLE group_checks ALTER COLUMN checked_upto DROP NOT NULL;
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS target bigint;
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS members bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS checked_at timestamptz NOT NULL DEFAULT '-infinity';
-- A run still running that has not come to this rank (or to the shared start) yet: the rank's comparison may
-- still change, so the fleet does not count it as settled (docs/suspects.md).
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false;

-- lockstep_cmp_ranks now also returns what a rank's check records (from_step, waiting): a new return type, which
-- CREATE OR REPLACE cannot give, so the old function goes (sql/functions/compare.sql makes the new one).
DROP FUNCTION IF EXISTS lockstep_cmp_ranks(text, int[], int);
