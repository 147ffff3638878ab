-- 026_consensus_beside_steps.sql - a rank's consensus digests of a step are stored in its step digest's row, and a
-- judged window leaves one row (server/consensus/): a consensus batch writes no row a digest batch does not.
--
-- Before, each digest was a row of consensus_digests, deleted once its window was judged: three rows inserted and
-- deleted a rank-step in bench/fleet, which made a consensus batch cost 1.14x a digest batch (docs/scale.md).

-- The step's consensus digests, in the order they came (the first of a (key, window) counts): 24 bytes each, big
-- endian: the group's key (8), the window (4), the records folded (4), their cons_fold (8). NULL when none.
ALTER TABLE step_digests ADD COLUMN IF NOT EXISTS cons bytea;

-- A window lockstepd judged (from memory or from the database's look): the row that makes a window count once,
-- whoever judges it. Kept while a look may still read its step (consensus_runs.swept_upto), or until retention.
CREATE TABLE IF NOT EXISTS consensus_judged (
    run_key   bigint NOT NULL REFERENCES runs (run_key) ON DELETE CASCADE,
    step      bigint NOT NULL,
    comm_key  bigint NOT NULL,
    win       int NOT NULL,
    judged_on date NOT NULL DEFAULT current_date,
    PRIMARY KEY (run_key, step, comm_key, win)
);

-- Every window of a step up to this one was judged, or can no longer fill (each rank reported a later step, or
-- ended): the database's look of the run reads later steps only. NULL: none yet.
ALTER TABLE consensus_runs ADD COLUMN IF NOT EXISTS swept_upto bigint;

-- The digests still waiting move beside their step digests (a row of their own, n 0, where the step had none).
INSERT INTO step_digests AS sd (run_key, rank, step, n, digest, inputs, cons)
    SELECT run_key, rank, step, 0, 0, 0,
           string_agg(int8send(comm_key) || int4send(win) || int4send(n) || int8send(fold), ''::bytea
                      ORDER BY comm_key, win)
    FROM consensus_digests GROUP BY run_key, rank, step
    ON CONFLICT (run_key, rank, step) DO UPDATE SET cons = coalesce(sd.cons || excluded.cons, sd.cons, excluded.cons);
DROP TABLE IF EXISTS consensus_digests;

-- The batch writes take the consensus digests a step at a time now (sql/functions/write.sql).
DROP FUNCTION IF EXISTS lockstep_store_batch(bigint, int, bigint, int, boolean, bigint[], bigint[], int[], smallint[],
                                             bytea[], bigint[], int[], bigint[], bigint, bigint, bigint, bigint,
                                             bigint[], bigint[], bigint[], int[], int[], bigint[], int[], text[]);
DROP FUNCTION IF EXISTS lockstep_store_batches(bigint[], int[], bigint[], int[], boolean[], bigint[], bigint[],
                                               bigint[], bigint[], int[], bigint[], bigint[], int[], smallint[],
                                               bytea[], int[], bigint[], int[], bigint[], bigint[], int[], bigint[],
                                               bigint[], int[], int[], bigint[], int[], text[]);
