-- 018_absorbed.sql - absorbed differences: a collective whose inputs differed on some ranks while its output
-- matched. Each step digest keeps, beside the digest of its records, the digest of their input fingerprints
-- (common/recmatch.h's rec_inputs_term); the comparison notes each rank's step whose records agree while their
-- inputs do not (lockstep_cmp_ranks, sql/functions/compare.sql), and the twin report counts them and shows the first.

-- XOR of the step's records' input terms; NULL where it is not known (steps whose records an agent held back and sent
-- as digests, and steps stored before this migration): no absorbed difference is noted there.
ALTER TABLE step_digests ADD COLUMN IF NOT EXISTS inputs bigint;

-- One row per rank's step of a group where the runs' records agreed and their inputs did not. A run joining the
-- group, or a claim that sets runs aside, drops the group's rows with its marks: the comparison notes them again.
CREATE TABLE IF NOT EXISTS group_absorbed (
    twin_group  text NOT NULL,
    rank        int NOT NULL,
    step        bigint NOT NULL,
    keys        bigint[] NOT NULL,          -- the runs compared (run keys, ascending)
    noted_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (twin_group, rank, step)
);

-- The batch writes take the inputs digests now (sql/functions/write.sql): their former signatures go.
DROP FUNCTION IF EXISTS lockstep_store_batch(bigint, int, bigint, int, boolean, bigint[], bigint[], int[], smallint[],
                                             bytea[], bigint[], int[], bigint[], bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS lockstep_store_batches(bigint[], int[], bigint[], int[], boolean[], bigint[], bigint[],
                                               bigint[], bigint[], int[], bigint[], bigint[], int[], smallint[],
                                               bytea[], int[], bigint[], int[], bigint[]);
