-- fleet.sql - what the suspects evaluation (server/fleet/suspects.c) reads of a group in SQL.

-- lockstep_group_signature - what a group's evaluation depends on; a change re-evaluates it: its runs (and how many
-- ended), manifests, divergences (count and latest change); its failed ranks (a rank's non-zero exit makes its run
-- failed, even while the launcher's killed ranks never report, and can turn a diverged group incomplete:
-- server/rules/status.h, which its alert must then say); the verdict of its newest finished replay (a verdict
-- re-evaluates the group's evidence and raises the follow-up alert) and, for a narrow group, its experiment's
-- state; its attestations.
CREATE OR REPLACE FUNCTION lockstep_group_signature(g text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) || '/' || count(*) FILTER (WHERE status <> 'running') FROM runs WHERE twin_group = g)
        || '/' || (SELECT count(*) FROM manifests m JOIN runs r USING (run_key) WHERE r.twin_group = g)
        || '/' || (SELECT count(*) || '/' || coalesce(max(detected_at)::text, '') FROM divergences WHERE twin_group = g)
        || '/' || (SELECT count(*) FROM rank_ends e JOIN runs r USING (run_key) WHERE r.twin_group = g
                   AND e.exit_code <> 0)
        || coalesce((SELECT '/v' || id || ':' || verdict FROM narrows WHERE twin_group = g AND state = 'done'
                     ORDER BY id DESC LIMIT 1), '')
        || coalesce((SELECT '/n' || id || ':' || state FROM narrows WHERE narrow_group = g), '')
        || '/a' || (SELECT count(*) || '/' || coalesce(max(a.attested_at)::text, '') FROM attestations a
                    JOIN runs r ON a.job_id = r.job_id AND a.step_id = r.step_id WHERE r.twin_group = g)
$$;

-- lockstep_consensus_signature - what the evaluation of run r's consensus disagreement depends on (server/fleet/
-- consensus.c): the consensus_divergences row as the server stored it (its record name and site arrive later in
-- digest mode), the run's manifests (a rank's GPU) and its attestations (the hardware that counts). NULL when the run
-- has no such row.
CREATE OR REPLACE FUNCTION lockstep_consensus_signature(r bigint) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT md5(concat_ws('|', d.step, d.comm_key, d.win, d.name, d.occ, d.comm_ranks::text, d.comm_size,
                         d.odd_ranks::text, d.clear, d.site::text, d.node, d.gpu, d.detected_at::text))
        || '/m' || (SELECT count(*) FROM manifests m WHERE m.run_key = r)
        || '/a' || (SELECT count(*) || '/' || coalesce(max(a.attested_at)::text, '') FROM attestations a
                    JOIN runs x ON a.job_id = x.job_id AND a.step_id = x.step_id WHERE x.run_key = r)
    FROM consensus_divergences d WHERE d.run_key = r
$$;
