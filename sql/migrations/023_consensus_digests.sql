-- 023_consensus_digests.sql - a run's consensus digests (common/consensus.h) as they arrive, until every member of
-- their group has reported and lockstepd judged the window (server/consensus/); how many windows each run had
-- checked; what finishing a divergence needs.

-- One rank's digest of one window of one (step, key): kept until its window is judged (then deleted: the count in
-- consensus_runs stays), or until retention when a member never reports.
CREATE TABLE IF NOT EXISTS consensus_digests (
    run_key     bigint NOT NULL,
    comm_key    bigint NOT NULL,                -- cons_key of the group's sorted world ranks
    step        bigint NOT NULL,
    win         int NOT NULL,                   -- the window (consensus index / CONS_WINDOW)
    rank        int NOT NULL,                   -- the world rank that reported it
    n           int NOT NULL,                   -- consensus records it folds
    fold        bigint NOT NULL,                -- their cons_fold
    received_on date NOT NULL DEFAULT current_date,
    PRIMARY KEY (run_key, comm_key, step, win, rank)
);

-- A run's groups as their digests named them (the first word for a key counts): the member count that completes
-- a window, and the sorted world ranks when listed ('{}' for more than REC_COMM_LIST_MAX). consensus_digests has no
-- foreign key (a check per digest, as step_digests has none); these rows go with their run.
CREATE TABLE IF NOT EXISTS consensus_comms (
    run_key  bigint NOT NULL REFERENCES runs (run_key) ON DELETE CASCADE,
    comm_key bigint NOT NULL,
    size     int NOT NULL,
    ranks    int[] NOT NULL,
    PRIMARY KEY (run_key, comm_key)
);

-- How many windows of a run were judged (agreeing or not).
CREATE TABLE IF NOT EXISTS consensus_runs (
    run_key    bigint PRIMARY KEY REFERENCES runs (run_key) ON DELETE CASCADE,
    checked    bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The members that reported the first disagreement and how many records each folded: its row is finished (name,
-- occ, site) once each member's records of the window are stored (asked for in digest streaming); `idx` is the
-- consensus index of the first differing record.
ALTER TABLE consensus_divergences ADD COLUMN IF NOT EXISTS members int[] NOT NULL DEFAULT '{}';
ALTER TABLE consensus_divergences ADD COLUMN IF NOT EXISTS member_n int[] NOT NULL DEFAULT '{}';
ALTER TABLE consensus_divergences ADD COLUMN IF NOT EXISTS idx int;
ALTER TABLE consensus_divergences ADD COLUMN IF NOT EXISTS odd_rank int; -- the rank whose record names it

-- The batch writes take the consensus digests now (sql/functions/write.sql): their former signatures go.
DROP FUNCTION IF EXISTS lockstep_store_batch(bigint, int, bigint, int, boolean, bigint[], bigint[], int[], smallint[],
                                             bytea[], bigint[], int[], bigint[], bigint, bigint, bigint, bigint,
                                             bigint[]);
DROP FUNCTION IF EXISTS lockstep_store_batches(bigint[], int[], bigint[], int[], boolean[], bigint[], bigint[],
                                               bigint[], bigint[], int[], bigint[], bigint[], int[], smallint[],
                                               bytea[], int[], bigint[], int[], bigint[], bigint[]);
