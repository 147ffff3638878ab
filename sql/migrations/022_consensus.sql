-- 022_consensus.sql - a run checked against itself, with no twin (common/consensus.h): the first place where copies
-- that must be bit-identical inside the run (a collective's output on every rank of its communicator, a declared
-- replica across its group) differ. One row per run: the first disagreement, by step, then key, then window.

CREATE TABLE IF NOT EXISTS consensus_divergences (
    run_key      bigint PRIMARY KEY REFERENCES runs (run_key) ON DELETE CASCADE,
    step         bigint NOT NULL,
    comm_key     bigint NOT NULL,               -- cons_key: the sorted world ranks that must agree
    win          int NOT NULL,                  -- the window of CONS_WINDOW consensus records
    name         text NOT NULL DEFAULT '',      -- the first differing record ('' while its records are awaited)
    occ          int NOT NULL DEFAULT 0,        -- its occurrence on the odd rank (or the first member)
    comm_ranks   int[] NOT NULL,                -- the group's world ranks, sorted ('{}' when more than listed)
    comm_size    int NOT NULL,
    odd_ranks    int[] NOT NULL,                -- the odd copies' ranks: outside the majority, or every member
    clear        boolean NOT NULL,              -- more than half of the copies agree: the odd ranks are named
    site         jsonb,                         -- the call site of the first differing record, when known
    node         text,                          -- the odd rank's attested node (clear, one odd rank)
    gpu          text,                          -- and its GPU, when the manifest names one
    committed_at timestamptz NOT NULL,          -- commit of the batch that showed it
    detected_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS consensus_divergences_node ON consensus_divergences (node, detected_at);
