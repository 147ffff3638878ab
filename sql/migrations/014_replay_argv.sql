-- 014_replay_argv.sql - replays run words, never a line of shell: the step's argument vector as slurmstepd gave it,
-- and for each placement of a narrow the words it runs and the user it runs as.

-- The program's argument vector, as the SPANK plugin registers it (slurmstepd's S_JOB_ARGV). NULL when the run was
-- registered without one (by the agent alone, or before this column existed): a replay then takes `command` split
-- at white space, with no other meaning given to any character (docs/server.md, Narrows).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS argv text[];

-- What a placement runs, as words: never read by a shell (the lockstep command quotes each one into the replay's
-- batch script). '{}' on placements made before this column: there is nothing to submit.
ALTER TABLE narrow_placements ADD COLUMN IF NOT EXISTS argv text[] NOT NULL DEFAULT '{}';
-- The user the replay runs as: the attested user of the run it replays. NULL when slurmstepd never vouched for that
-- run's user; such a placement is decided not-run when the narrow is made.
ALTER TABLE narrow_placements ADD COLUMN IF NOT EXISTS run_as text;
