-- 029_step_digest_packs.sql - a batch's step digests are stored as one row per rank and block of 32 steps (a pack),
-- not one row per step: a batch of 10 steps wrote 10 rows and 20 index entries, the largest part of what
-- PostgreSQL spent on a digest batch (docs/scale.md). A pack is appended, never updated; the views `step_digests`
-- and `step_consensus` add a step's parts up as the upsert they replace did, so a step whose digest came in parts
-- (a step's records cut across batches, consensus digests before their step digest) reads as one row.
--
-- The block of a step is `step >> 5` (functions/compare.sql, lockstep_step_block, is the one definition lockstepd
-- and the SQL functions use; the conversion below restates it because a migration calls no function of
-- functions/). A reader bounds `blk` as well as `step`: PostgreSQL pushes both down through the view to the packs'
-- indexes. A reader that joins the view does so through a LATERAL subquery that ends with OFFSET 0 (held.c,
-- cmp_mem.c): without it the planner pulls the subquery up, the join's conditions stay above the view's GROUP BY,
-- and every step of the table is added up (measured: 13.7 s instead of 0.55 ms on 12 million steps).

CREATE TABLE IF NOT EXISTS step_digest_packs (
    run_key  bigint NOT NULL,
    rank     int NOT NULL,
    blk      bigint NOT NULL,       -- every step of the pack has step >> 5 = blk
    bseq     bigint NOT NULL,       -- the smallest batch_seq of the batches it came in: the order of a step's parts
    steps    bigint[] NOT NULL,     -- each once in the pack, in no particular order; the arrays below are aligned
    n        int[] NOT NULL,        -- per step: the records its digest stands for (0: consensus digests only)
    digest   bigint[] NOT NULL,     -- per step: XOR of the records' rec_digest_term
    inputs   bigint[] NOT NULL,     -- per step: XOR of their input terms; NULL where not known (held-back records)
    cons     bytea[]                -- per step: its consensus digests as 026 packs them; NULL when the pack has none
);
CREATE INDEX IF NOT EXISTS step_digest_packs_rank ON step_digest_packs (run_key, rank, blk);
CREATE INDEX IF NOT EXISTS step_digest_packs_run ON step_digest_packs (run_key, blk);

INSERT INTO step_digest_packs (run_key, rank, blk, bseq, steps, n, digest, inputs, cons)
    SELECT run_key, rank, step >> 5, 0, array_agg(step), array_agg(n), array_agg(digest), array_agg(inputs),
           CASE WHEN count(cons) > 0 THEN array_agg(cons) END
    FROM step_digests GROUP BY run_key, rank, step >> 5;
DROP TABLE step_digests;

-- A rank's step as the batches made it: the sum of the counts, the XOR of the digests and of the inputs (NULL when
-- one part is not known).
CREATE VIEW step_digests AS
    SELECT p.run_key, p.rank, p.blk, u.step, sum(u.n)::int AS n, bit_xor(u.digest) AS digest,
           CASE WHEN count(u.inputs) = count(*) THEN bit_xor(u.inputs) END AS inputs
    FROM step_digest_packs p
    CROSS JOIN LATERAL unnest(p.steps, p.n, p.digest, p.inputs) AS u(step, n, digest, inputs)
    GROUP BY p.run_key, p.rank, p.blk, u.step;

-- A rank's step's consensus digests, in the order their batches were sent (the first of a window counts): only the
-- steps that have some, read from the packs that hold some.
CREATE VIEW step_consensus AS
    SELECT p.run_key, p.rank, p.blk, u.step, string_agg(u.cons, ''::bytea ORDER BY p.bseq) AS cons
    FROM step_digest_packs p
    CROSS JOIN LATERAL unnest(p.steps, p.cons) AS u(step, cons)
    WHERE p.cons IS NOT NULL AND u.cons IS NOT NULL
    GROUP BY p.run_key, p.rank, p.blk, u.step;
