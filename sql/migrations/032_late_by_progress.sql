-- 032_late_by_progress.sql - the batch write's late-data rewind, asked only of the ranks whose batches may be late
-- (functions/write.sql): `prior_max_step` is the rank's max_step before the write that last raised its progress, so
-- the write knows, from the row it updates anyway, whether its batch brings a step its run had already reached. A
-- comparison marks a rank no further than the highest step each of its runs has there, so a batch of the rank whose
-- steps all come after what its run had cannot be late to that rank's mark: it needs no UPDATE of group_checks
-- (one a batch, 15 us each, ~9% of a digest batch's PostgreSQL time at 100,000 ranks, none of which moved a mark).
ALTER TABLE rank_progress ADD COLUMN IF NOT EXISTS prior_max_step bigint;
