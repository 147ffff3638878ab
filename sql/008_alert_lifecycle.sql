-- 008_alert_lifecycle.sql - alerts that end (resolved when acknowledged, when a node they blame is repaired, or
-- when a newer alert of the same group supersedes them), their fixed Alertmanager labels, and which node a run
-- ran on (the twin-group list's node filter).

-- What an alert says to Alertmanager, fixed when it is raised: every re-send carries exactly these.
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS annotations jsonb NOT NULL DEFAULT '{}';
-- The nodes the alert blames (a suspect node; the implicated nodes of a hardware divergence): repairing one of
-- them resolves it.
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS blames text[] NOT NULL DEFAULT '{}';
-- What a group's divergence alert reports (first divergence and its cause, the group's status, the
-- classification, implicated hardware and jobs): a re-evaluation that changes it supersedes the alert with a new
-- one.
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS facts text NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resolved_at timestamptz;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resolved_reason text;        -- acknowledged | repaired | superseded
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resolved_by text;            -- who acknowledged, which node was repaired
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS superseded_by bigint REFERENCES alerts;
-- The next re-send to Alertmanager while the alert is open (set once its first delivery there succeeded), and
-- until when a re-send is in flight (the resolution waits for it, so that it is the last word).
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resend_at timestamptz;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resend_busy_until timestamptz;
CREATE INDEX IF NOT EXISTS alerts_resend ON alerts (resend_at) WHERE resolved_at IS NULL;
CREATE INDEX IF NOT EXISTS alerts_group ON alerts (twin_group, id);

-- One delivery per alert, sink and phase: 'firing' when raised, 'resolved' once it ends (webhook, Slack,
-- Alertmanager).
ALTER TABLE alert_deliveries ADD COLUMN IF NOT EXISTS phase text NOT NULL DEFAULT 'firing';
ALTER TABLE alert_deliveries DROP CONSTRAINT IF EXISTS alert_deliveries_pkey;
ALTER TABLE alert_deliveries ADD PRIMARY KEY (alert_id, sink, phase);

-- Alerts raised before this migration: the labels they were sent with, resolved if acknowledged (without a
-- resolution message: none was promised then), re-sent from now on if Alertmanager has them.
UPDATE alerts SET labels = jsonb_strip_nulls(jsonb_build_object(
        'alertname', CASE WHEN kind = 'suspect' THEN 'LockstepHardwareSuspect' ELSE 'LockstepTwinDivergence' END,
        'severity', severity, 'service', 'lockstep', 'lockstep_alert_id', id::text, 'twin_group', twin_group,
        'node', node)),
    annotations = jsonb_build_object('summary', summary, 'description', body),
    blames = CASE WHEN kind = 'suspect' AND node IS NOT NULL THEN ARRAY[node] ELSE '{}' END
    WHERE labels = '{}';
UPDATE alerts SET resolved_at = acked_at, resolved_reason = 'acknowledged', resolved_by = acked_by
    WHERE acked_at IS NOT NULL AND resolved_at IS NULL;
UPDATE alerts a SET resend_at = now() WHERE resolved_at IS NULL AND EXISTS (SELECT 1 FROM alert_deliveries d
    WHERE d.alert_id = a.id AND d.sink = 'alertmanager' AND d.state = 'delivered');

-- lockstep_hostlist_has - whether the Slurm hostlist `list` ("n[1-3,07],gpu01", "rack[1-2]n[1-4]") names
-- `host`; ranges keep their zero padding ("n[01-03]" names n01, not n1), as the dashboard's hostlist.js reads them.
CREATE OR REPLACE FUNCTION lockstep_hostlist_has(list text, host text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    depth int := 0;
    cur text := '';
    ch text;
    parts text[] := '{}';
    part text;
    m text[];
    r text;
    digits text;
    v numeric;
    width int;
    tail text;
BEGIN
    IF list IS NULL OR host IS NULL OR host = '' THEN
        RETURN false;
    END IF;
    IF position('[' in list) = 0 THEN
        RETURN host = ANY (string_to_array(replace(list, ' ', ''), ','));
    END IF;
    FOR i IN 1..length(list) LOOP
        ch := substr(list, i, 1);
        IF ch = '[' THEN depth := depth + 1; ELSIF ch = ']' THEN depth := depth - 1; END IF;
        IF ch = ',' AND depth = 0 THEN
            parts := parts || btrim(cur);
            cur := '';
        ELSE
            cur := cur || ch;
        END IF;
    END LOOP;
    parts := parts || btrim(cur);
    FOREACH part IN ARRAY parts LOOP
        m := regexp_match(part, '^([^\[\]]*)\[([^\]]+)\](.*)$');
        IF m IS NULL THEN
            IF part = host THEN RETURN true; END IF;
            CONTINUE;
        END IF;
        IF left(host, length(m[1])) <> m[1] THEN
            CONTINUE;
        END IF;
        FOREACH r IN ARRAY string_to_array(m[2], ',') LOOP
            IF r ~ '^[0-9]+-[0-9]+$' THEN
                digits := substring(substr(host, length(m[1]) + 1) from '^[0-9]+');
                IF digits IS NULL THEN CONTINUE; END IF;
                v := digits::numeric;
                width := length(split_part(r, '-', 1));
                IF v < split_part(r, '-', 1)::numeric OR v > split_part(r, '-', 2)::numeric
                   OR digits <> lpad(v::text, greatest(width, length(v::text)), '0') THEN
                    CONTINUE;
                END IF;
            ELSIF substr(host, length(m[1]) + 1, length(r)) = r THEN
                digits := r;
            ELSE
                CONTINUE;
            END IF;
            tail := substr(host, length(m[1]) + length(digits) + 1);
            IF (m[3] = '' AND tail = '') OR (m[3] <> '' AND lockstep_hostlist_has(m[3], tail)) THEN
                RETURN true;
            END IF;
        END LOOP;
    END LOOP;
    RETURN false;
END $$;

-- lockstep_run_on_node - whether run `key` ran on `node`: its Slurm node list names it, or a rank's manifest
-- does (slurm_node, else node, else host: the same choice the suspects evaluation makes).
CREATE OR REPLACE FUNCTION lockstep_run_on_node(key bigint, nodes text, node text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT lockstep_hostlist_has(nodes, node) OR EXISTS (SELECT 1 FROM manifests m WHERE m.run_key = key
        AND coalesce(nullif(m.manifest->>'slurm_node', ''), nullif(m.manifest->>'node', ''), m.manifest->>'host') = node)
$$;

-- lockstep_group_signature (002) - what a group's evaluation depends on, now also its failed ranks: a rank's
-- non-zero exit makes its run failed (even while the launcher's killed ranks never report) and can turn a
-- diverged group incomplete (server/compare/status.h), which its alert must then say (a new alert supersedes it).
CREATE OR REPLACE FUNCTION lockstep_group_signature(g text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) || '/' || count(*) FILTER (WHERE status <> 'running') FROM runs WHERE twin_group = g)
        || '/' || (SELECT count(*) FROM manifests m JOIN runs r USING (run_key) WHERE r.twin_group = g)
        || '/' || (SELECT count(*) || '/' || coalesce(max(detected_at)::text, '') FROM divergences WHERE twin_group = g)
        || '/' || (SELECT count(*) FROM rank_ends e JOIN runs r USING (run_key) WHERE r.twin_group = g
                   AND e.exit_code <> 0)
$$;
CREATE INDEX IF NOT EXISTS rank_ends_ended_at ON rank_ends (ended_at) WHERE exit_code <> 0;
