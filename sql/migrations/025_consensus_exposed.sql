-- 025_consensus_exposed.sql - when a consensus-checked run's hardware became exposures (server/fleet/consensus.c):
-- every run that ended with checked windows counts once as an exposure of each attested node and GPU it ran on, an
-- agreeing run too, so that a node's rate is its involvements over all its checked runs.

-- Set once the fleet wrote the run's exposures (or found its disagreement, whose evaluation writes them); NULL until.
ALTER TABLE consensus_runs ADD COLUMN IF NOT EXISTS exposed_at timestamptz;
-- What the fleet pass looks for: checked runs not yet exposed (few: the running ones and the just ended).
CREATE INDEX IF NOT EXISTS consensus_runs_unexposed ON consensus_runs (run_key) WHERE exposed_at IS NULL AND
    checked > 0;
