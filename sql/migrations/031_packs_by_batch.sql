-- 031_packs_by_batch.sql - two costs of the batch write that bought nothing (docs/scale.md, "Packs by batch"):
--
-- * A pack of step digests (step_digest_packs, 029) is now one batch's steps of one block, as lockstepd sends them:
--   slices of the step rows, each step once (lockstepd adds up a step's parts within its batch). The write no longer
--   groups the rows of a whole group of batches twice over (by step, then by block) to build one pack per rank and
--   block; the views add up a step's parts across packs as they did (the parts of two batches of one rank in one
--   group are now two packs, each with its batch's bseq: its consensus digests in bseq order, as across groups).
--   The single batch's function goes: one batch is a group of one (functions/write.sql).
-- * Only series points span steps (030), and the series' own partial index (record_frames_series, 010) finds a block's
--   spanning segments as well as the partial index 030 added for them, which cost every series segment one more
--   index entry: FRAMES_SPANNING (server/store/frames.h) names kind 1, and that index goes.
DROP INDEX IF EXISTS record_frames_span;
DROP FUNCTION IF EXISTS lockstep_store_batch(bigint, int, bigint, int, boolean, bigint[], bigint[], int[], smallint[],
                                             bytea[], bigint[], int[], bigint[], bigint, bigint, bigint, bigint,
                                             bigint[], bytea[], bigint[], int[], text[], bigint[]);
DROP FUNCTION IF EXISTS lockstep_store_batches(bigint[], int[], bigint[], int[], boolean[], bigint[], bigint[],
                                               bigint[], bigint[], int[], bigint[], bigint[], int[], smallint[],
                                               bytea[], int[], bigint[], int[], bigint[], bigint[], bytea[], int[],
                                               bigint[], int[], text[], bigint[]);
