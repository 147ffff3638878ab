-- 013_settle_once.sql - a batch's end settled once, not twice: the rank's shared lock is taken before its progress
-- is written and a group of batches settles all its ranks in one statement (sql/functions/write.sql), so
-- lockstep_batch_settle, which wrote the progress a second time under the lock, goes.
DROP FUNCTION IF EXISTS lockstep_batch_settle(bigint, int, bigint);
