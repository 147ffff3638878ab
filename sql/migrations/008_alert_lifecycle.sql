-- 008_alert_lifecycle.sql - alerts that end (resolved when acknowledged, when a node they blame is repaired, or
-- when a newer alert of the same group supersedes them), their fixed Alertmanager labels, and failed ranks found by
-- time (a group's signature counts them: sql/functions/fleet.sql).

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

CREATE INDEX IF NOT EXISTS rank_ends_ended_at ON rank_ends (ended_at) WHERE exit_code <> 0;
