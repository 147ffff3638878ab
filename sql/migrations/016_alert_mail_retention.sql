-- 016_alert_mail_retention.sql - alert mail goes only to addresses the site maps (each alert keeps the addresses it
-- mails, resolved when it is raised: server/alerts/mailmap.h; mail of alerts raised before is not sent); what retention
-- removed, so that a group says what it can no longer compare.

-- The addresses the alert's mail goes to: its group's attested users at the addresses mail_map or mail_domain
-- give them, and mail_admin for a suspect alert. `recipients` keeps the attested users (before: the users the
-- jobs reported, which a job chooses, full addresses included).
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS mail_to text[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN alerts.recipients IS 'the attested users of the alert''s runs (mail goes to mail_to)';

-- Mail of alerts raised before would go to what the jobs reported: it is not sent, and says so.
UPDATE alert_deliveries SET state = 'failed',
    last_error = 'not sent: raised before lockstepd mailed only the addresses the site maps (its recipients were '
                 'the users the jobs reported)'
    WHERE sink = 'mail' AND state = 'pending';

-- What retention removed (lockstep_drop_partitions): per run and rank, the steps whose records went with their
-- day's partition. Their step digests stay, so twins still compare there by digest; a step whose digests differ
-- can no longer be compared record by record, and its records are not asked of an agent as held-back ones are.
CREATE TABLE IF NOT EXISTS records_removed (
    run_key    bigint NOT NULL,
    rank       int NOT NULL,
    step_lo    bigint NOT NULL,
    step_hi    bigint NOT NULL,
    removed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_key, rank)
);
-- A step the comparison of a rank stopped at because retention removed a run's records there: kept with the
-- requests (answered: nobody is asked), so that the group says what it can no longer compare.
ALTER TABLE record_requests ADD COLUMN IF NOT EXISTS removed boolean NOT NULL DEFAULT false;
