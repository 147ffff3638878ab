-- 030_series_spans.sql - the series points (record_frames kind 1: scalar records of occurrence 0) of a batch are cut
-- into segments that may span consecutive steps of one block of 32 (lockstep_step_block, functions/compare.sql),
-- each step with points in it, not into a segment per step: a digest batch of 10 steps wrote 10 rows of a few scalars each, and 30 index entries,
-- the largest part of what PostgreSQL spent on it once its step digests were packed (docs/scale.md).
--
-- `step` stays the segment's first step; `step_last` is its last (NULL: the segment holds one step, as every
-- segment of other kinds and every segment stored before). A segment never crosses a block, so a read of step X
-- finds the segments that span it among those of steps lockstep_block_first(X) .. X-1 with step_last >= X, through
-- the partial index below (only spanning segments are in it); every read keeps, of a segment, only the records of
-- the steps it asked for (server/store/frames.c).
ALTER TABLE record_frames ADD COLUMN IF NOT EXISTS step_last bigint;
CREATE INDEX IF NOT EXISTS record_frames_span ON record_frames (run_key, rank, step) WHERE step_last IS NOT NULL;

-- the batch write takes the segments' last steps (functions/write.sql)
DROP FUNCTION IF EXISTS lockstep_store_batch(bigint, int, bigint, int, boolean, bigint[], bigint[], int[], smallint[],
                                             bytea[], bigint[], int[], bigint[], bigint, bigint, bigint, bigint,
                                             bigint[], bytea[], bigint[], int[], text[]);
DROP FUNCTION IF EXISTS lockstep_store_batches(bigint[], int[], bigint[], int[], boolean[], bigint[], bigint[],
                                               bigint[], bigint[], int[], bigint[], bigint[], int[], smallint[],
                                               bytea[], int[], bigint[], int[], bigint[], bigint[], bytea[], int[],
                                               bigint[], int[], text[]);
