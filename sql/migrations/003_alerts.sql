-- 003_alerts.sql - the alert outbox: one row per alert, one delivery row per alert and sink (at-least-once, retried with backoff).

CREATE TABLE alerts (
    id          bigserial PRIMARY KEY,
    dedup_key   text NOT NULL UNIQUE,          -- group:NAME or suspect:NODE:HISTORY_ID: never two alerts for one
    kind        text NOT NULL,                 -- divergence | suspect
    twin_group  text,
    node        text,
    severity    text NOT NULL DEFAULT 'warning',
    summary     text NOT NULL,
    body        text NOT NULL,                 -- the full text
    url         text NOT NULL DEFAULT '',      -- dashboard deep link
    details     jsonb NOT NULL DEFAULT '{}',
    recipients  text[] NOT NULL DEFAULT '{}',  -- job users (mail)
    created_at  timestamptz NOT NULL DEFAULT now(),
    acked_at    timestamptz,
    acked_by    text
);

CREATE TABLE alert_deliveries (
    alert_id     bigint NOT NULL REFERENCES alerts ON DELETE CASCADE,
    sink         text NOT NULL,                -- webhook | slack | alertmanager | mail
    state        text NOT NULL DEFAULT 'pending', -- pending | delivered
    attempts     int NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    delivered_at timestamptz,
    PRIMARY KEY (alert_id, sink)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_at) WHERE state = 'pending';
