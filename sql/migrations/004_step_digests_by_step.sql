-- 004_step_digests_by_step.sql - step windows of a run without walking all of its ranks (the twin page's
-- match map asks for 500 steps of every rank; the primary key leads with rank).
CREATE INDEX IF NOT EXISTS step_digests_run_step ON step_digests (run_key, step);
