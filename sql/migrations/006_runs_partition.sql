-- 006_runs_partition.sql - the Slurm partition a run ran in, as the agent and the SPANK plugin send it (it was dropped before).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS partition text NOT NULL DEFAULT '';
