-- 002_suspects.sql - hardware suspects: per-group evidence, exposures and involvements, node and GPU scores, per-node history.

-- One row per evaluated twin group: how its first divergence was classified.
CREATE TABLE group_evidence (
    twin_group   text PRIMARY KEY,
    class        text NOT NULL,                -- none (no divergence) | hardware | software
    reason       text NOT NULL DEFAULT '',     -- why, in words
    reason_code  text NOT NULL DEFAULT '',     -- match | minority | pair | same_hardware | manifest | spread | no_hardware
    step         bigint,
    rank         int,
    origin_name  text,                         -- record name of the group's first divergence
    program      text NOT NULL DEFAULT '',     -- the runs' command (the spread rule compares like with like)
    implicated   text NOT NULL DEFAULT '',     -- nodes that ran the diverging rank, separated by ','
    signature    text NOT NULL,                -- state of the group when evaluated (re-evaluated when it changes)
    evaluated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX group_evidence_origin ON group_evidence (origin_name, evaluated_at);

-- Nodes and GPUs seen in manifests, with their current score and state.
CREATE TABLE hw_nodes (
    name          text PRIMARY KEY,
    state         text NOT NULL DEFAULT 'ok',  -- ok | suspect | drained | repaired
    score         double precision NOT NULL DEFAULT 0,
    involvements  double precision NOT NULL DEFAULT 0,
    exposures     double precision NOT NULL DEFAULT 0,
    baseline      double precision NOT NULL DEFAULT 0,
    evidence_since timestamptz NOT NULL DEFAULT '-infinity', -- a repair starts the evidence afresh
    state_since   timestamptz NOT NULL DEFAULT now(),
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE hw_gpus (
    uuid          text PRIMARY KEY,
    node          text NOT NULL,
    name          text NOT NULL DEFAULT '',
    state         text NOT NULL DEFAULT 'ok',  -- ok | suspect (follows the score; admin actions act on the node)
    score         double precision NOT NULL DEFAULT 0,
    involvements  double precision NOT NULL DEFAULT 0,
    exposures     double precision NOT NULL DEFAULT 0,
    last_seen     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hw_gpus_node ON hw_gpus (node);

-- Which hardware ran each run of each evaluated group: weight 0 = exposed only,
-- weak (0.5) = one of two diverging runs, 1 = the minority run of three or more.
CREATE TABLE hw_exposures (
    twin_group  text NOT NULL,
    run_key     bigint NOT NULL,
    node        text NOT NULL,
    gpu         text NOT NULL DEFAULT '',
    weight      double precision NOT NULL DEFAULT 0,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (twin_group, run_key, node, gpu)
);
CREATE INDEX hw_exposures_node ON hw_exposures (node);
CREATE INDEX hw_exposures_involved ON hw_exposures (twin_group) WHERE weight > 0;

-- Everything that happened to a node or one of its GPUs, newest last.
CREATE TABLE hw_history (
    id          bigserial PRIMARY KEY,
    node        text NOT NULL,
    gpu         text,
    kind        text NOT NULL,                 -- involvement | withdrawn | score | state | action | slurm
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    twin_group  text,
    run_key     bigint,
    step        bigint,
    rank        int,
    weight      double precision,
    score       double precision,
    state       text,
    actor       text,
    detail      text NOT NULL DEFAULT ''
);
CREATE INDEX hw_history_node ON hw_history (node, id);

-- The suspects thread looks for groups with recent activity every few seconds.
CREATE INDEX runs_created_at ON runs (created_at);
CREATE INDEX runs_ended_at ON runs (ended_at);
CREATE INDEX divergences_detected_at ON divergences (detected_at);
