-- 021_replay_settings.sql - a replay records as the run it replays: each placement keeps the settings it carries
-- from that run's manifest (its ignore and step rules, its trace, the determinism environment, its working
-- directory), so that the lockstep command submits the replay with them and the evaluation can hold the replay
-- to them.

-- {"ignore": "...", "step_on": "...", "trace": "...", "cwd": "...", "env": {"NAME": "value", ...},
--  "not_carried": ["NAME", ...]}; '{}' on placements made before this column (nothing carried).
ALTER TABLE narrow_placements ADD COLUMN IF NOT EXISTS settings jsonb NOT NULL DEFAULT '{}';
