-- 024_consensus_evidence.sql - a run's consensus disagreement (consensus_divergences) as hardware evidence: the
-- rule's verdict per run (server/rules/cons_evidence.h), and the hardware each such run exposed and involved, which
-- the fleet's score reads beside the twin groups' (hw_exposures).

-- One row per evaluated consensus divergence: the rule's verdict, and the row's state when evaluated (it is
-- evaluated again when the row changes, e.g. its record name arrives).
CREATE TABLE IF NOT EXISTS consensus_evidence (
    run_key      bigint PRIMARY KEY REFERENCES runs (run_key) ON DELETE CASCADE,
    class        text NOT NULL,                -- hardware | inconclusive | software
    reason_code  text NOT NULL,                -- odd_rank | odd_node | pair | single | no_majority | several | ...
    reason       text NOT NULL DEFAULT '',
    name         text NOT NULL DEFAULT '',     -- the record (the repeat rule compares runs of one program by it)
    program      text NOT NULL DEFAULT '',     -- the run's command
    odd_nodes    text[] NOT NULL DEFAULT '{}', -- the attested nodes of the odd ranks
    signature    text NOT NULL,
    evaluated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS consensus_evidence_name ON consensus_evidence (name, evaluated_at);

-- Which hardware ran each run that disagreed: weight 0 = exposed only, weak = one of a pair, 1 = the odd rank's.
-- Kept when the run is deleted, as hw_exposures keeps a group's.
CREATE TABLE IF NOT EXISTS consensus_exposures (
    run_key     bigint NOT NULL,
    node        text NOT NULL,
    gpu         text NOT NULL DEFAULT '',
    rank        int,
    weight      double precision NOT NULL DEFAULT 0,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, node, gpu)
);
CREATE INDEX IF NOT EXISTS consensus_exposures_node ON consensus_exposures (node);
