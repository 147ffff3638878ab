-- partitions.sql - the daily partitions of record_frames: made ahead, dropped past retention (what went is noted in
-- records_removed). Called by server/store/retention.c.

-- lockstep_partitions_key - the advisory lock that makes and drops partitions ("LSPARTS").
CREATE OR REPLACE FUNCTION lockstep_partitions_key() RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT x'4c53504152545300'::bigint
$$;

-- lockstep_frames_compressed - whether record_frames compresses its frames inline with lz4 (STORAGE MAIN and
-- COMPRESSION lz4, migrations/010_record_frames.sql, where PostgreSQL has lz4); lockstepd cuts its segments by it
-- (frames_configure, server/store/frames.c).
CREATE OR REPLACE FUNCTION lockstep_frames_compressed() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT a.attcompression = 'l' AND a.attstorage = 'm' FROM pg_attribute a
                     WHERE a.attrelid = 'record_frames'::regclass AND a.attname = 'frames'), false)
$$;

-- lockstep_frames_target - the toast_tuple_target of record_frames' partitions. Where frames are compressed, 2032
-- (PostgreSQL's default, and the least that acts): a row past ~2 KB is compressed, such as a batch's segment of
-- series points (~2.5 KB for 10 steps of 4 metrics, ~1 KB compressed), which then costs PostgreSQL less CPU and 2.3
-- times less WAL than stored as it came (docs/scale.md, "Series segments compressed"). Where they are not
-- (STORAGE EXTERNAL), 8160: no row smaller than a page goes out of line.
CREATE OR REPLACE FUNCTION lockstep_frames_target() RETURNS int LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN lockstep_frames_compressed() THEN 2032 ELSE 8160 END
$$;

-- lockstep_ensure_partitions - create the daily record_frames partitions from today to `days_ahead` days ahead
-- (skipping a day whose rows already sit in the default partition). One transaction at a time, of every lockstepd on
-- the database, makes or drops partitions (lockstep_partitions_key): two making partitions at once lock the
-- parent and its partitions, can deadlock (measured with two lockstepd starting at once), and PostgreSQL fails
-- one of them. Every partition, the default one and those made before included, gets lockstep_frames_target (a
-- row is compressed or not by the partition it goes into).
CREATE OR REPLACE FUNCTION lockstep_ensure_partitions(days_ahead int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d date;
    name text;
    target int := lockstep_frames_target();
    p record;
BEGIN
    PERFORM pg_advisory_xact_lock(lockstep_partitions_key());
    FOR i IN 0..days_ahead LOOP
        d := current_date + i;
        name := 'record_frames_' || to_char(d, 'YYYYMMDD');
        IF to_regclass(name) IS NULL
           AND NOT EXISTS (SELECT 1 FROM record_frames_default WHERE received_on = d) THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF record_frames FOR VALUES FROM (%L) TO (%L) '
                               'WITH (toast_tuple_target = %s)', name, d, d + 1, target);
            EXCEPTION WHEN duplicate_table THEN
                NULL; -- another lockstepd made it first
            END;
        END IF;
    END LOOP;
    -- a lock that lets rows in (SHARE UPDATE EXCLUSIVE), taken only where the target differs
    FOR p IN SELECT c.oid::regclass AS rel FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'record_frames'::regclass
               AND NOT coalesce(c.reloptions, '{}') @> ARRAY['toast_tuple_target=' || target] LOOP
        EXECUTE format('ALTER TABLE %s SET (toast_tuple_target = %s)', p.rel, target);
    END LOOP;
END $$;

-- lockstep_drop_partitions - drop daily record_frames partitions older than `keep_days`, and old rows of the default
-- partition, noting in records_removed which steps of which run and rank went; returns how many partitions it
-- dropped; and judged consensus windows as old that no swept mark reached (a run whose member never reported
-- again: no look moves its mark past them). Runs, step digests (with their consensus digests), consensus counts and
-- divergences stay. Serialized with lockstep_ensure_partitions.
CREATE OR REPLACE FUNCTION lockstep_drop_partitions(keep_days int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    p record;
    dropped int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(lockstep_partitions_key());
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'record_frames'::regclass AND c.relname ~ '^record_frames_[0-9]{8}$' LOOP
        IF to_date(substr(p.relname, 15), 'YYYYMMDD') < current_date - keep_days THEN
            EXECUTE format('INSERT INTO records_removed AS x (run_key, rank, step_lo, step_hi) '
                           'SELECT run_key, rank, min(step), max(coalesce(step_last, step)) FROM %I GROUP BY 1, 2 '
                           'ON CONFLICT (run_key, rank) DO UPDATE SET step_lo = least(x.step_lo, excluded.step_lo), '
                           'step_hi = greatest(x.step_hi, excluded.step_hi), removed_at = now()', p.relname);
            EXECUTE format('DROP TABLE %I', p.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    WITH gone AS (DELETE FROM record_frames_default WHERE received_on < current_date - keep_days
                  RETURNING run_key, rank, step, coalesce(step_last, step) AS last)
    INSERT INTO records_removed AS x (run_key, rank, step_lo, step_hi)
        SELECT run_key, rank, min(step), max(last) FROM gone GROUP BY 1, 2
        ON CONFLICT (run_key, rank) DO UPDATE SET step_lo = least(x.step_lo, excluded.step_lo),
            step_hi = greatest(x.step_hi, excluded.step_hi), removed_at = now();
    DELETE FROM consensus_judged WHERE judged_on < current_date - keep_days;
    RETURN dropped;
END $$;
