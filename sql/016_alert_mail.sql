-- 016_alert_mail.sql - alert mail goes only to addresses the site maps: each alert keeps the addresses it mails,
-- resolved when it is raised (server/fleet/mailmap.h); mail of alerts raised before is not sent.

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
