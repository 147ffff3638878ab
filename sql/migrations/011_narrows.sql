-- 011_narrows.sql - verdicts by replay: how a job resumes (its template and the checkpoints it declared), the
-- replay experiments of `lockstep narrow` (placements, outcomes, verdict), and a group's evidence follows its verdict.

-- How the job resumes from a checkpoint (--lockstep-resume='CMD TEMPLATE'), "" when it did not say.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS resume_template text NOT NULL DEFAULT '';

-- Checkpoints a run declared as it wrote them (POST /api/v1/runs/{id}/checkpoints, ls_checkpoint): a replay of
-- a late step starts from the newest one before it.
CREATE TABLE IF NOT EXISTS run_checkpoints (
    run_key     bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
    step        bigint NOT NULL,               -- the state after this step: a resumed run records step + 1 on
    path        text NOT NULL DEFAULT '',      -- where it is, as the job named it ("" when it gave none)
    rank        int NOT NULL DEFAULT 0,        -- the rank that declared it
    declared_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, step)
);

-- One replay experiment of a diverged twin group: its design, and once its placements are decided, its verdict.
CREATE TABLE IF NOT EXISTS narrows (
    id           bigserial PRIMARY KEY,
    twin_group   text NOT NULL,                -- the group narrowed
    narrow_group text NOT NULL UNIQUE,         -- the twin group of its replays ("G.narrow-ID")
    state        text NOT NULL DEFAULT 'running', -- running | done
    step         bigint NOT NULL,              -- the group's first diverging step
    from_step    bigint NOT NULL,              -- the replays are compared with the runs over [from_step, to_step]
    to_step      bigint NOT NULL,
    level        text NOT NULL,                -- modules | ops: the finer trace inside the window
    trace        text NOT NULL,                -- the replays' LOCKSTEP_TRACE
    design       jsonb NOT NULL,               -- the group's kind, its runs and their contents, nodes, notes
    verdict      text,                         -- software | persistent-hardware | transient-hardware | inconclusive
    node         text,                         -- the node a hardware verdict names
    gpu          text,                         -- its GPU, when the manifests name one
    reason       text NOT NULL DEFAULT '',
    reasoning    jsonb NOT NULL DEFAULT '[]',  -- the rule's steps, in order, for people
    record       jsonb,                        -- the first record whose output differs while its inputs matched
    actor        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    deadline_at  timestamptz NOT NULL,         -- placements still undecided then are judged as timed out
    finished_at  timestamptz
);
CREATE INDEX IF NOT EXISTS narrows_group ON narrows (twin_group, id);
CREATE INDEX IF NOT EXISTS narrows_running ON narrows (id) WHERE state = 'running';

-- One placement of an experiment: whose job runs where, and what came of it.
CREATE TABLE IF NOT EXISTS narrow_placements (
    narrow_id    bigint NOT NULL REFERENCES narrows ON DELETE CASCADE,
    idx          int NOT NULL,
    role         text NOT NULL,                -- odd-again, majority-on-odd-nodes, odd-on-majority-nodes, ...
    source_run_key bigint NOT NULL,            -- the run whose job is replayed
    nodes        text NOT NULL,                -- where (a Slurm node list)
    why          text NOT NULL DEFAULT '',     -- what the placement tests
    command      text NOT NULL,                -- what runs: the stored command, or the resume template filled in
    resume_step  bigint,                       -- the checkpoint it resumes from; NULL: the whole run
    job_id       text,                         -- the Slurm job once submitted
    run_key      bigint,                       -- the replay's run once it registered
    outcome      text,                         -- NULL while pending; ran | failed | not-run | timed-out
    content      int,                          -- ran: the content class it produced (design.contents)
    diverged     boolean,                      -- ran, once judged: its content is not the healthy one
    probe_nodes  text NOT NULL DEFAULT '',     -- the nodes (and GPUs) that ran the origin ranks, ',' separated
    detail       text NOT NULL DEFAULT '',     -- what was seen: matched which run, differed where, why it failed
    decided_at   timestamptz,
    PRIMARY KEY (narrow_id, idx)
);
CREATE INDEX IF NOT EXISTS narrow_placements_job ON narrow_placements (job_id) WHERE job_id IS NOT NULL;

-- A group's evidence (the weights of its hardware's involvements) follows its newest replay verdict when there is
-- one, beside the fleet's classification, which stays what the rules concluded: the narrow it follows (NULL: the
-- classification's) and why, in words (also each involvement's history detail).
ALTER TABLE group_evidence ADD COLUMN IF NOT EXISTS evidence_narrow bigint;
ALTER TABLE group_evidence ADD COLUMN IF NOT EXISTS evidence_reason text NOT NULL DEFAULT '';
