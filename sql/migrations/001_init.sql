-- 001_init.sql - runs, manifests, batches, records (partitioned by day), per-step digests, divergences.

CREATE TABLE runs (
    run_key     bigserial PRIMARY KEY,          -- internal key, used by the big tables
    run_id      uuid NOT NULL UNIQUE,           -- what the API shows
    job_id      text NOT NULL,
    step_id     text NOT NULL DEFAULT '',
    twin_group  text,
    ranks       int NOT NULL,
    start_step  bigint NOT NULL DEFAULT 0,
    user_name   text NOT NULL DEFAULT '',
    nodes       text NOT NULL DEFAULT '',
    command     text NOT NULL DEFAULT '',
    mode        text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'running', -- running | ended | failed
    created_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz
);
CREATE INDEX runs_group ON runs (twin_group, run_key);
CREATE INDEX runs_user ON runs (user_name, run_key);
CREATE INDEX runs_job ON runs (job_id, run_key);

CREATE TABLE manifests (
    run_key     bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
    rank        int NOT NULL,
    manifest    jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, rank)
);

CREATE TABLE rank_ends (
    run_key     bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
    rank        int NOT NULL,
    exit_code   int NOT NULL,
    ended_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, rank)
);

-- One row per stored batch: the replay guard, inserted in the batch's transaction.
CREATE TABLE batches (
    run_key     bigint NOT NULL,
    rank        int NOT NULL,
    batch_seq   bigint NOT NULL,
    n_records   int NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, rank, batch_seq)
);

-- How far each rank of each run has come.
CREATE TABLE rank_progress (
    run_key     bigint NOT NULL,
    rank        int NOT NULL,
    min_step    bigint NOT NULL,
    max_step    bigint NOT NULL,
    max_seq     bigint NOT NULL,
    n_records   bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, rank)
);

-- Every record, every field. fp, value, inputs and chunks are the 64-bit
-- words reinterpreted as signed bigint. Partitioned by the day received, so
-- retention drops whole partitions.
CREATE TABLE records (
    run_key     bigint NOT NULL,
    rank        int NOT NULL,
    seq         bigint NOT NULL,
    step        bigint NOT NULL,
    name        text NOT NULL,
    occ         int NOT NULL,
    level       smallint NOT NULL,
    dtype       smallint NOT NULL,
    flags       smallint NOT NULL,
    t_ns        bigint NOT NULL,
    nbytes      bigint NOT NULL,
    fp          bigint NOT NULL,
    value       bigint,
    shape       bigint[] NOT NULL,
    inputs      bigint[],
    chunks      bigint[],
    received_on date NOT NULL DEFAULT current_date
) PARTITION BY RANGE (received_on);
CREATE TABLE records_default PARTITION OF records DEFAULT;
CREATE INDEX records_lookup ON records (run_key, rank, step);

-- Order-free digest of each (run, rank, step): XOR of per-record hashes and a count.
CREATE TABLE step_digests (
    run_key     bigint NOT NULL,
    rank        int NOT NULL,
    step        bigint NOT NULL,
    n           int NOT NULL,
    digest      bigint NOT NULL,
    PRIMARY KEY (run_key, rank, step)
);

-- First divergence of a twin group on one rank (earliest step, then seq).
CREATE TABLE divergences (
    twin_group  text NOT NULL,
    rank        int NOT NULL,
    step        bigint NOT NULL,
    seq         bigint NOT NULL,
    name        text NOT NULL,
    occ         int NOT NULL,
    kind        text NOT NULL,                  -- mismatch | missing
    odd_run_key bigint,                         -- majority's odd one out, when there is one
    runs        jsonb NOT NULL,                 -- [{run_id, present, seq, fp, value, ...}]
    committed_at timestamptz NOT NULL,          -- commit of the batch that showed it
    detected_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (twin_group, rank)
);

-- How far (in steps) each group and rank has been compared.
CREATE TABLE group_checks (
    twin_group  text NOT NULL,
    rank        int NOT NULL,
    checked_upto bigint NOT NULL,
    PRIMARY KEY (twin_group, rank)
);
