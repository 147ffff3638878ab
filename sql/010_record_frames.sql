-- 010_record_frames.sql - records stored as what they are: the CRC-framed records of each batch, cut per step into
-- segments that fit a heap page, decoded in C when read (server/store/frames.c); the one-row-per-record table is
-- kept as records_rows until lockstepd has converted it (server/store/convert.c) and dropped it. Also: steps whose
-- records an agent holds back (digest streaming) and lockstepd asked for, and the one-statement batch write.

-- The row layout as 007_record_sites (call sites) and 009_restores_logical (extension fields, the partial index
-- records_state) left it: converted with every column, sites and extension fields included.
ALTER TABLE records RENAME TO records_rows;
ALTER INDEX records_lookup RENAME TO records_rows_lookup;
ALTER TABLE records_default RENAME TO records_rows_default;

-- One row per step segment of a stored batch: the frames of consecutive records of one step (u32 length, u32
-- CRC32C, payload; common/record.h), in seq order, sized so that the row stays inline in its page: lz4-compressed
-- by PostgreSQL (records compress ~4x: names, shapes, seq and times repeat) when it has lz4, else at most ~7.6 KB
-- uncompressed (lockstepd reads which at start). `kind` 1 holds only the points of the series endpoint (scalar
-- records of occurrence 0), so that a curve reads those segments alone; 2 and 4 the entries of saved and restored
-- state blocks, 3 other records with extension fields (server/store/frames.h). A frame carries every field of its
-- record, the call site and extension fields included (common/record.h). Partitioned by the day received, so
-- retention drops whole partitions.
CREATE TABLE record_frames (
    run_key     bigint NOT NULL,
    rank        int NOT NULL,
    step        bigint NOT NULL,
    seq_lo      bigint NOT NULL,            -- seq of the segment's first record
    n           int NOT NULL,               -- records in frames
    kind        smallint NOT NULL,          -- 0 records, 1 series points, 2 saved and 4 restored state entries, 3 records with extension fields
    frames      bytea NOT NULL,
    received_on date NOT NULL DEFAULT current_date
) PARTITION BY RANGE (received_on);
ALTER TABLE record_frames ALTER COLUMN frames SET STORAGE MAIN; -- compressed inline; out of line only when too large
DO $$
BEGIN
    ALTER TABLE record_frames ALTER COLUMN frames SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN -- a PostgreSQL built without lz4: pglz would cost more than it saves
    ALTER TABLE record_frames ALTER COLUMN frames SET STORAGE EXTERNAL;
END $$;
CREATE INDEX record_frames_lookup ON record_frames (run_key, rank, step);
CREATE INDEX record_frames_series ON record_frames (run_key, rank, step) WHERE kind = 1;
-- The index of state entries (kinds 2 saved, 4 restored: their own segments), for the restore checks, and of the
-- records that may be shards (kind 3, and series points with extension fields) for the logical comparison; written
-- with the frames, in the same statement.
CREATE INDEX record_frames_state ON record_frames (run_key, rank, step) WHERE kind IN (2, 4);
CREATE INDEX record_frames_ext ON record_frames (run_key, step) WHERE kind IN (1, 3);
CREATE TABLE record_frames_default PARTITION OF record_frames DEFAULT WITH (toast_tuple_target = 8160);

-- Steps of a rank whose records lockstepd wants from an agent that holds them back (their digests differ across
-- twins); answered in the reply to the rank's next batch and deleted when the records are stored.
CREATE TABLE record_requests (
    run_key      bigint NOT NULL,
    rank         int NOT NULL,
    step         bigint NOT NULL,
    committed_at timestamptz NOT NULL,      -- commit of the batch whose digests showed the difference
    requested_at timestamptz NOT NULL DEFAULT now(),
    answered     boolean NOT NULL DEFAULT false, -- records came; the comparison deletes the request once it used them
    PRIMARY KEY (run_key, rank, step)
);

-- The last step of each stored batch (NULL for held records and batches before this migration): when a
-- divergence is found, the commit that made its step comparable is known exactly (lockstep_shown_at).
ALTER TABLE batches ADD COLUMN max_step bigint;

DROP FUNCTION lockstep_ensure_partitions(int);
DROP FUNCTION lockstep_drop_partitions(int);

-- lockstep_ensure_partitions - create the daily record_frames partitions from today to `days_ahead` days ahead
-- (skipping a day whose rows already sit in the default partition).
CREATE FUNCTION lockstep_ensure_partitions(days_ahead int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d date;
    name text;
BEGIN
    FOR i IN 0..days_ahead LOOP
        d := current_date + i;
        name := 'record_frames_' || to_char(d, 'YYYYMMDD');
        IF to_regclass(name) IS NULL
           AND NOT EXISTS (SELECT 1 FROM record_frames_default WHERE received_on = d) THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF record_frames FOR VALUES FROM (%L) TO (%L) '
                               'WITH (toast_tuple_target = 8160)', name, d, d + 1);
            EXCEPTION WHEN duplicate_table THEN
                NULL; -- another lockstepd made it first
            END;
        END IF;
    END LOOP;
END $$;

-- lockstep_drop_partitions - drop daily record_frames partitions older than `keep_days`; returns how many it
-- dropped. Runs, digests and divergences stay.
CREATE FUNCTION lockstep_drop_partitions(keep_days int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    p record;
    dropped int := 0;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'record_frames'::regclass AND c.relname ~ '^record_frames_[0-9]{8}$' LOOP
        IF to_date(substr(p.relname, 15), 'YYYYMMDD') < current_date - keep_days THEN
            EXECUTE format('DROP TABLE %I', p.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    DELETE FROM record_frames_default WHERE received_on < current_date - keep_days;
    RETURN dropped;
END $$;

-- lockstep_store_batch - one batch in one statement (so in one transaction, and one round trip): the replay guard
-- first (NULL: a replay, nothing stored), the frames, the per-step digests, the rank's progress; then the steps of
-- this rank whose held-back records lockstepd wants (an empty array when none). `held`: the batch carries records
-- an agent held back and was asked for; their digests and progress came with the step digests it sent before.
CREATE FUNCTION lockstep_store_batch(p_run bigint, p_rank int, p_bseq bigint, p_n int, p_held boolean,
                                     f_step bigint[], f_seq bigint[], f_n int[], f_kind smallint[], f_frames bytea[],
                                     d_step bigint[], d_n int[], d_digest bigint[],
                                     p_min_step bigint, p_max_step bigint, p_max_seq bigint, p_count bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO batches (run_key, rank, batch_seq, n_records, max_step, committed_at) -- the time written, not
        VALUES (p_run, p_rank, p_bseq, p_n, CASE WHEN p_count > 0 THEN p_max_step END, clock_timestamp()) -- the
        ON CONFLICT DO NOTHING; -- transaction's start: a group of batches commits a little later still
    IF NOT FOUND THEN
        IF p_held THEN -- held records stored before: whatever asks for them again is answered
            UPDATE record_requests SET answered = true
                WHERE run_key = p_run AND rank = p_rank AND step = ANY (f_step) AND NOT answered;
        END IF;
        RETURN NULL;
    END IF;
    IF cardinality(f_step) > 0 THEN
        INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames)
            SELECT p_run, p_rank, s, q, c, k, f FROM unnest(f_step, f_seq, f_n, f_kind, f_frames) AS u(s, q, c, k, f);
    END IF;
    IF cardinality(d_step) > 0 THEN
        INSERT INTO step_digests (run_key, rank, step, n, digest)
            SELECT p_run, p_rank, s, c, d FROM unnest(d_step, d_n, d_digest) AS u(s, c, d) ORDER BY s
            ON CONFLICT (run_key, rank, step) DO UPDATE SET n = step_digests.n + excluded.n,
                digest = step_digests.digest # excluded.digest;
    END IF;
    IF p_count > 0 THEN
        INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records)
            VALUES (p_run, p_rank, p_min_step, p_max_step, p_max_seq, p_count)
            ON CONFLICT (run_key, rank) DO UPDATE SET
                min_step = least(rank_progress.min_step, excluded.min_step),
                max_step = greatest(rank_progress.max_step, excluded.max_step),
                max_seq = greatest(rank_progress.max_seq, excluded.max_seq),
                n_records = rank_progress.n_records + excluded.n_records, updated_at = now();
    END IF;
    IF p_held THEN
        UPDATE record_requests SET answered = true
            WHERE run_key = p_run AND rank = p_rank AND step = ANY (f_step) AND NOT answered;
    END IF;
    RETURN coalesce((SELECT array_agg(step ORDER BY step) FROM (SELECT step FROM record_requests
                     WHERE run_key = p_run AND rank = p_rank AND NOT answered ORDER BY step LIMIT 64) w), '{}');
END $$;

-- lockstep_cmp_ranks - the comparison's first look at ranks `rks` of group `g`, all in one round trip (the ranks
-- batches touched since the last look): the group's runs (at most max_runs), and per rank the shared complete
-- steps up to `hi`, where to look (past the checked mark, up to the rank's first divergence: nothing after it can
-- come before it) and the first step there whose digests or counts differ or that a run lacks. A row for each
-- rank with such a step (its runs, ids, hi, upto, the newest run key, the step); the others' ranges are marked
-- compared (unless a run joined the group meanwhile). Ranks a twin has not reached, or with nothing new, are
-- left out.
CREATE FUNCTION lockstep_cmp_ranks(g text, rks int[], max_runs int)
RETURNS TABLE (r_rank int, keys bigint[], ids text[], hi bigint, upto bigint, newest bigint, step bigint)
LANGUAGE plpgsql AS $$
DECLARE
    run_keys bigint[];
    run_ids text[];
    lo bigint;
    newest_key bigint;
    n_runs int;
BEGIN
    SELECT array_agg(x.run_key ORDER BY x.run_key), array_agg(x.run_id::text ORDER BY x.run_key), max(x.start_step),
           max(x.run_key), count(*)
        INTO run_keys, run_ids, lo, newest_key, n_runs
        FROM (SELECT u.run_key, u.run_id, u.start_step FROM runs u WHERE u.twin_group = g ORDER BY u.run_key
              LIMIT max_runs) x;
    IF n_runs < 2 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH per AS ( -- per rank: a run that has not reached it; the shared complete steps (lookups by key, one
                  -- rank at a time: the group's other ranks are not read)
        SELECT q.rk,
               bool_or(p.max_step IS NULL AND e.ended IS NULL AND u.status = 'running') AS waiting,
               count(p.max_step) AS with_records,
               min(CASE WHEN e.ended IS NOT NULL OR u.status <> 'running' THEN p.max_step ELSE p.max_step - 1 END)
                   AS hi
        FROM unnest(rks) AS q(rk) CROSS JOIN unnest(run_keys) AS k(run_key)
        JOIN runs u ON u.run_key = k.run_key
        LEFT JOIN LATERAL (SELECT p1.max_step FROM rank_progress p1 WHERE p1.run_key = k.run_key AND p1.rank = q.rk
                           LIMIT 1) p ON true
        LEFT JOIN LATERAL (SELECT true AS ended FROM rank_ends e1 WHERE e1.run_key = k.run_key AND e1.rank = q.rk
                           LIMIT 1) e ON true
        GROUP BY q.rk),
    todo AS (
        SELECT per.rk, per.hi,
               CASE WHEN c.checked_upto >= lo THEN c.checked_upto + 1 ELSE lo END AS from_step,
               least(per.hi, d.step) AS upto
        FROM per
        LEFT JOIN LATERAL (SELECT c1.checked_upto FROM group_checks c1 WHERE c1.twin_group = g AND c1.rank = per.rk
                           LIMIT 1) c ON true
        LEFT JOIN LATERAL (SELECT d1.step FROM divergences d1 WHERE d1.twin_group = g AND d1.rank = per.rk
                           LIMIT 1) d ON true
        WHERE NOT per.waiting AND per.with_records >= 1 AND lo <= per.hi),
    found AS (
        SELECT t.rk, t.hi, t.upto, x.step
        FROM todo t CROSS JOIN LATERAL (
            SELECT s.step FROM step_digests s
            WHERE s.run_key = ANY (run_keys) AND s.rank = t.rk AND s.step BETWEEN t.from_step AND t.upto
            GROUP BY s.step
            HAVING count(*) < n_runs OR min(s.digest) <> max(s.digest) OR min(s.n) <> max(s.n)
            ORDER BY s.step LIMIT 1) x
        WHERE t.from_step <= t.hi),
    mark AS (
        INSERT INTO group_checks (twin_group, rank, checked_upto)
        SELECT g, t.rk, t.hi FROM todo t
        WHERE t.from_step <= t.hi AND NOT EXISTS (SELECT 1 FROM found f WHERE f.rk = t.rk)
          AND NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = g AND run_key > newest_key)
        ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto
        RETURNING 1)
    SELECT f.rk, run_keys, run_ids, f.hi, f.upto, newest_key, f.step FROM found f;
END $$;

-- lockstep_shown_at - when step `st` of rank `rk` became comparable across the runs `keys`: per run, the commit of
-- its first batch past the step (or its rank's end), the latest of them; NULL when some run has neither on record.
-- The detection latency counts from here: the commit of the batch that showed the divergence. With
-- track_commit_timestamp on (lockstepd's embedded cluster sets it) that is the transaction's commit; else the time
-- the batch was written, a little earlier.
CREATE FUNCTION lockstep_shown_at(keys bigint[], rk int, st bigint) RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN count(*) = count(t) THEN extract(epoch FROM max(t)) END
    FROM (SELECT k, coalesce((SELECT min(coalesce(CASE WHEN current_setting('track_commit_timestamp') = 'on'
                                                       THEN pg_xact_commit_timestamp(b.xmin) END, b.committed_at))
                              FROM batches b WHERE b.run_key = k AND b.rank = rk AND b.max_step > st),
                             (SELECT e.ended_at FROM rank_ends e WHERE e.run_key = k AND e.rank = rk)) AS t
          FROM unnest(keys) AS k) x
$$;

-- lockstep_store_batches - lockstep_store_batch for many batches in one statement (a database worker's group of
-- queued batches; b_* per batch, in the order their locks are taken; f_* and d_* the segments and step digests,
-- each naming its batch by its index in b_*, from 1). Returns per batch whether it was a replay (stored before, or
-- twice in this group: the first one counts) and the steps of its rank whose held-back records lockstepd wants.
CREATE FUNCTION lockstep_store_batches(b_run bigint[], b_rank int[], b_bseq bigint[], b_n int[], b_held boolean[],
                                       b_min_step bigint[], b_max_step bigint[], b_max_seq bigint[], b_count bigint[],
                                       f_batch int[], f_step bigint[], f_seq bigint[], f_n int[], f_kind smallint[],
                                       f_frames bytea[], d_batch int[], d_step bigint[], d_n int[], d_digest bigint[])
RETURNS TABLE (i int, duplicate boolean, want bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    stored int[];
BEGIN
    WITH b AS (SELECT * FROM unnest(b_run, b_rank, b_bseq, b_n, b_held, b_max_step, b_count)
                   WITH ORDINALITY AS u(run_key, rank, bseq, n, held, max_step, cnt, k)),
         ins AS (INSERT INTO batches (run_key, rank, batch_seq, n_records, max_step, committed_at)
                 SELECT b.run_key, b.rank, b.bseq, b.n, CASE WHEN b.cnt > 0 THEN b.max_step END, clock_timestamp()
                 FROM b ORDER BY b.k
                 ON CONFLICT DO NOTHING RETURNING run_key, rank, batch_seq)
    SELECT array_agg(x.k) INTO stored
    FROM (SELECT min(b.k) AS k FROM b JOIN ins ON ins.run_key = b.run_key AND ins.rank = b.rank
          AND ins.batch_seq = b.bseq GROUP BY b.run_key, b.rank, b.bseq) x;
    stored := coalesce(stored, '{}');
    INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames)
        SELECT b_run[f.bi], b_rank[f.bi], f.s, f.q, f.c, f.kd, f.fr
        FROM unnest(f_batch, f_step, f_seq, f_n, f_kind, f_frames) AS f(bi, s, q, c, kd, fr)
        WHERE f.bi = ANY (stored);
    INSERT INTO step_digests AS sd (run_key, rank, step, n, digest)
        SELECT b_run[d.bi], b_rank[d.bi], d.s, sum(d.c), bit_xor(d.dg)
        FROM unnest(d_batch, d_step, d_n, d_digest) AS d(bi, s, c, dg)
        WHERE d.bi = ANY (stored)
        GROUP BY b_run[d.bi], b_rank[d.bi], d.s ORDER BY 1, 2, 3
        ON CONFLICT (run_key, rank, step) DO UPDATE SET n = sd.n + excluded.n, digest = sd.digest # excluded.digest;
    INSERT INTO rank_progress AS rp (run_key, rank, min_step, max_step, max_seq, n_records)
        SELECT b_run[k], b_rank[k], min(b_min_step[k]), max(b_max_step[k]), max(b_max_seq[k]), sum(b_count[k])
        FROM unnest(stored) AS k WHERE b_count[k] > 0
        GROUP BY b_run[k], b_rank[k] ORDER BY 1, 2
        ON CONFLICT (run_key, rank) DO UPDATE SET
            min_step = least(rp.min_step, excluded.min_step), max_step = greatest(rp.max_step, excluded.max_step),
            max_seq = greatest(rp.max_seq, excluded.max_seq), n_records = rp.n_records + excluded.n_records,
            updated_at = now();
    UPDATE record_requests q SET answered = true
        FROM unnest(f_batch, f_step) AS f(bi, s)
        WHERE b_held[f.bi] AND q.run_key = b_run[f.bi] AND q.rank = b_rank[f.bi] AND q.step = f.s AND NOT q.answered;
    RETURN QUERY
        SELECT k::int, NOT (k::int = ANY (stored)),
               CASE WHEN k::int = ANY (stored) THEN
                   coalesce((SELECT array_agg(w.step ORDER BY w.step) FROM (SELECT r.step FROM record_requests r
                             WHERE r.run_key = b_run[k] AND r.rank = b_rank[k] AND NOT r.answered
                             ORDER BY r.step LIMIT 64) w), '{}') END
        FROM generate_subscripts(b_run, 1) AS k;
END $$;
