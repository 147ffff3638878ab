-- 016_alert_mail_retention.sql - alert mail goes only to addresses the site maps (each alert keeps the addresses it
-- mails, resolved when it is raised: server/fleet/mailmap.h; mail of alerts raised before is not sent); what retention
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

-- lockstep_drop_partitions (001, 010) - drop daily record_frames partitions older than `keep_days`, and old rows
-- of the default partition, noting in records_removed which steps of which run and rank went; returns how many
-- partitions it dropped. Runs, digests and divergences stay.
CREATE OR REPLACE FUNCTION lockstep_drop_partitions(keep_days int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    p record;
    dropped int := 0;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'record_frames'::regclass AND c.relname ~ '^record_frames_[0-9]{8}$' LOOP
        IF to_date(substr(p.relname, 15), 'YYYYMMDD') < current_date - keep_days THEN
            EXECUTE format('INSERT INTO records_removed AS x (run_key, rank, step_lo, step_hi) '
                           'SELECT run_key, rank, min(step), max(step) FROM %I GROUP BY 1, 2 '
                           'ON CONFLICT (run_key, rank) DO UPDATE SET step_lo = least(x.step_lo, excluded.step_lo), '
                           'step_hi = greatest(x.step_hi, excluded.step_hi), removed_at = now()', p.relname);
            EXECUTE format('DROP TABLE %I', p.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    WITH gone AS (DELETE FROM record_frames_default WHERE received_on < current_date - keep_days
                  RETURNING run_key, rank, step)
    INSERT INTO records_removed AS x (run_key, rank, step_lo, step_hi)
        SELECT run_key, rank, min(step), max(step) FROM gone GROUP BY 1, 2
        ON CONFLICT (run_key, rank) DO UPDATE SET step_lo = least(x.step_lo, excluded.step_lo),
            step_hi = greatest(x.step_hi, excluded.step_hi), removed_at = now();
    RETURN dropped;
END $$;
