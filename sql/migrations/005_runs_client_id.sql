-- 005_runs_client_id.sql - registering a run is idempotent: an agent sends the same client_id with every
-- attempt (and its spool keeps it for a later replay), so a registration whose answer was lost returns the
-- run it created instead of a second one. Scoped to the job, whose token the registration carries.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS client_id text;
CREATE UNIQUE INDEX IF NOT EXISTS runs_job_client ON runs (job_id, client_id) WHERE client_id IS NOT NULL;
