-- 028_marks_say_why.sql - lockstep_cmp_marks (functions/compare.sql) returns, beside the ranks it marked, those the
-- comparison's memory should try again at its next flush (a busy lock, a count not settled yet), so its RETURNS
-- TABLE gains a column: the old function goes, functions/ makes the new one.

DROP FUNCTION IF EXISTS lockstep_cmp_marks(text, int[], bigint[], bigint[], int[], bigint[], bigint[]);
