-- 019_rank_abort.sql - a rank's end that was an abort (MPI_Abort): the run's exit is then the abort's code, and its
-- other ranks were killed after it (server/twins/findings.c), whatever signal their own ends report.

-- Set by the agent's end report ("abort": true); a later report of the same rank (the SPANK plugin's, with the
-- signal the launcher sent) keeps it and the abort's code.
ALTER TABLE rank_ends ADD COLUMN IF NOT EXISTS aborted boolean NOT NULL DEFAULT false;
