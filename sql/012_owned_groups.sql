-- 012_owned_groups.sql - twin groups with owners; facts about job steps attested by slurmstepd (or the admin); what the comparison knew when it last compared a group's rank.

-- A twin group belongs to the user who created it; runs of other users join only when it is shared with them.
CREATE TABLE IF NOT EXISTS twin_groups (
    twin_group     text PRIMARY KEY,
    owner          text NOT NULL,                 -- the creating run's user
    owner_attested boolean NOT NULL,              -- attested (SPANK plugin or admin) or only reported by the job
    shared_with    text[] NOT NULL DEFAULT '{}',  -- users whose runs may join as well; '*' = anyone
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- Groups that existed before: the user of their first run owns them (as reported).
INSERT INTO twin_groups (twin_group, owner, owner_attested)
SELECT DISTINCT ON (twin_group) twin_group, user_name, false FROM runs WHERE twin_group IS NOT NULL
ORDER BY twin_group, run_key ON CONFLICT DO NOTHING;

-- The user slurmstepd (or the admin) attested for the run's job; NULL when only the job said who it is.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS attested_user text;

-- What slurmstepd saw of one job step on one node: which global ranks ran there, for which user, in which
-- node list, with which GPUs. Written with a credential the job never sees.
CREATE TABLE IF NOT EXISTS attestations (
    job_id      text NOT NULL,
    step_id     text NOT NULL,
    node        text NOT NULL,
    node_index  int,
    ranks       int[] NOT NULL,
    user_name   text NOT NULL,
    nodes       text NOT NULL DEFAULT '',
    gpus        text NOT NULL DEFAULT '',
    attested_by text NOT NULL,                    -- slurmstepd | admin
    attested_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, step_id, node)
);

-- The comparison of one group's rank: how far (NULL: nothing compared), up to where it meant to go (target;
-- NULL: nothing to compare), which runs it compared (members), and when.
ALTER TABLE group_checks ALTER COLUMN checked_upto DROP NOT NULL;
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS target bigint;
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS members bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS checked_at timestamptz NOT NULL DEFAULT '-infinity';
-- A run still running that has not come to this rank (or to the shared start) yet: the rank's comparison may
-- still change, so the fleet does not count it as settled (docs/suspects.md).
ALTER TABLE group_checks ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false;

-- lockstep_check_key - the advisory lock of one group's rank: the comparison holds it exclusively while it
-- compares, a batch and a rank's end share it while they commit, so a comparison never marks as compared
-- a step whose records were committed while it looked.
CREATE OR REPLACE FUNCTION lockstep_check_key(g text, r int) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended(g || '/' || r::text, 7243106)
$$;

-- lockstep_group_signature (002, 008, 011) - what a group's evaluation depends on: its runs, manifests,
-- divergences, failed ranks (008), the verdict of its newest finished replay and, for a narrow group, its
-- experiment's state (011); now also its attestations.
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

-- lockstep_cmp_ranks (010_record_frames) - the comparison's first look at ranks `rks` of group `g` in one round
-- trip, now with what a rank's check records (target, members, checked_at, waiting) and under each rank's lock:
--  * a rank whose lock a batch or an end holds (they commit under its shared form) is left alone: they ask for
--    it again once committed;
--  * the runs compared are those of the group's first max_runs runs that server/compare/members.h's rule keeps
--    on the rank (runs without records there, or with records only before their start_step, or not covering the
--    shared start, are left out); a running run left out no longer holds the rest: the rank is compared and
--    marked `waiting` (the fleet does not count it settled);
--  * the range starts after the mark only when the same runs were compared (else from the shared start: a run
--    joined or left); a late batch moves the mark back (server/store/write.c);
--  * a rank without a differing step is marked in the same statement; its stored step divergence (not a restore
--    difference) inside the range just compared is dropped: the runs no longer show it;
--  * a rank with a differing step is returned (its runs, ids, hi, upto, newest run key, the step) and compared
--    record by record in its own transaction (server/compare/step.c), which writes its mark.
-- The locks taken here are transaction-level: they hold until this statement's transaction commits.
DROP FUNCTION IF EXISTS lockstep_cmp_ranks(text, int[], int);
CREATE FUNCTION lockstep_cmp_ranks(g text, rks int[], max_runs int)
RETURNS TABLE (r_rank int, keys bigint[], ids text[], hi bigint, upto bigint, newest bigint, step bigint,
               from_step bigint, waiting boolean)
LANGUAGE plpgsql AS $$
DECLARE
    newest_key bigint;
BEGIN
    SELECT max(u.run_key) INTO newest_key FROM runs u WHERE u.twin_group = g;
    IF newest_key IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH locked AS (
        SELECT q.rk FROM unnest(rks) AS q(rk) WHERE pg_try_advisory_xact_lock(lockstep_check_key(g, q.rk))),
    runs_g AS (
        SELECT u.run_key, u.run_id, u.start_step, u.status,
               EXISTS (SELECT 1 FROM rank_progress q WHERE q.run_key = u.run_key) AS any_records
        FROM runs u WHERE u.twin_group = g ORDER BY u.run_key LIMIT max_runs),
    cell AS ( -- per rank and run: its progress there and whether it ended there
        SELECT l.rk, x.run_key, x.run_id, x.start_step, p.max_step,
               (e.ended IS NOT NULL OR x.status <> 'running') AS ended, x.any_records
        FROM locked l CROSS JOIN runs_g x
        LEFT JOIN LATERAL (SELECT p1.max_step FROM rank_progress p1 WHERE p1.run_key = x.run_key AND p1.rank = l.rk
                           LIMIT 1) p ON true
        LEFT JOIN LATERAL (SELECT true AS ended FROM rank_ends e1 WHERE e1.run_key = x.run_key AND e1.rank = l.rk
                           LIMIT 1) e ON true),
    -- The members, by the rule of server/compare/members.h (the twin API applies the same rule to whole runs and
    -- says why each run was left out; tests/integration/test_groups.c holds both to it):
    cand AS ( -- rules 1-3 leave out a run that ended without any record, one that runs without records here
              -- yet, and one whose records here all come before its start_step
        SELECT c.*, NOT (c.ended AND NOT c.any_records) AND NOT (NOT c.ended AND c.max_step IS NULL)
                    AND NOT (c.max_step IS NOT NULL AND c.start_step > c.max_step) AS kept
        FROM cell c),
    starts AS ( -- each kept run's start_step and how many kept runs cover it (from their start_step to their
                -- highest step here; one that ended without records here covers every step, where it is missing)
        SELECT s.rk, s.start_step AS lo,
               (SELECT count(*) FROM cand c2 WHERE c2.rk = s.rk AND c2.kept AND (c2.max_step IS NULL OR
                       (c2.start_step <= s.start_step AND c2.max_step >= s.start_step))) AS cover
        FROM (SELECT DISTINCT c.rk, c.start_step FROM cand c WHERE c.kept AND c.max_step IS NOT NULL) s),
    shared AS ( -- the shared start: the one most cover, the latest on a tie; none when no step is covered twice
        SELECT DISTINCT ON (st.rk) st.rk, st.lo FROM starts st WHERE st.cover >= 2
        ORDER BY st.rk, st.cover DESC, st.lo DESC),
    cellm AS ( -- rules 4-5: a kept run that does not cover the shared start is left out too
        SELECT c.*, sh.lo,
               coalesce(c.kept AND (c.max_step IS NULL OR (c.start_step <= sh.lo AND c.max_step >= sh.lo)), false)
                   AS member
        FROM cand c LEFT JOIN shared sh ON sh.rk = c.rk),
    per AS ( -- a running run left out (it has no records here yet, or has not reached the shared start) makes the
             -- rank waiting: it joins, and the comparison starts over, once it covers the shared start
        SELECT c.rk,
               array_agg(c.run_key ORDER BY c.run_key) FILTER (WHERE c.member) AS mkeys,
               array_agg(c.run_id::text ORDER BY c.run_key) FILTER (WHERE c.member) AS mids,
               bool_or(NOT c.member AND NOT c.ended) AS waiting,
               count(c.max_step) FILTER (WHERE c.member) AS with_records,
               min(c.lo) AS lo,
               min(CASE WHEN c.ended THEN c.max_step ELSE c.max_step - 1 END) FILTER (WHERE c.member) AS hi
        FROM cellm c GROUP BY c.rk),
    todo AS (
        SELECT per.rk, per.mkeys, per.mids, per.waiting, per.lo, per.hi,
               cardinality(per.mkeys) >= 2 AND per.with_records >= 1 AND per.lo <= per.hi AS comparable,
               CASE WHEN ck.members = per.mkeys AND ck.checked_upto >= per.lo THEN ck.checked_upto + 1
                    ELSE per.lo END AS from_step,
               CASE WHEN ck.members = per.mkeys THEN ck.checked_upto END AS done,
               d.step AS div_step, d.kind AS div_kind
        FROM per
        LEFT JOIN LATERAL (SELECT c1.checked_upto, c1.members FROM group_checks c1 WHERE c1.twin_group = g
                           AND c1.rank = per.rk LIMIT 1) ck ON true
        LEFT JOIN LATERAL (SELECT d1.step, d1.kind FROM divergences d1 WHERE d1.twin_group = g AND d1.rank = per.rk
                           LIMIT 1) d ON true),
    found AS ( -- the first differing step past the mark, up to the stored divergence (nothing after it can come
               -- before it; a divergence before the range stands)
        SELECT t.rk, t.mkeys, t.mids, t.hi, least(t.hi, t.div_step) AS upto, x.step, t.from_step, t.waiting
        FROM todo t CROSS JOIN LATERAL (
            SELECT s.step FROM step_digests s
            WHERE s.run_key = ANY (t.mkeys) AND s.rank = t.rk
              AND s.step BETWEEN t.from_step AND least(t.hi, t.div_step)
            GROUP BY s.step
            HAVING count(*) < cardinality(t.mkeys) OR min(s.digest) <> max(s.digest) OR min(s.n) <> max(s.n)
            ORDER BY s.step LIMIT 1) x
        WHERE t.comparable AND t.from_step <= t.hi AND (t.div_step IS NULL OR t.div_step >= t.from_step)),
    dropped AS ( -- compared through the range without a difference: a step divergence there no longer shows
        DELETE FROM divergences d USING todo t
        WHERE d.twin_group = g AND d.rank = t.rk AND t.comparable AND t.from_step <= t.hi
          AND t.div_step BETWEEN t.from_step AND t.hi AND t.div_kind <> 'restore'
          AND NOT EXISTS (SELECT 1 FROM found f WHERE f.rk = t.rk)
        RETURNING d.rank),
    mark AS (
        INSERT INTO group_checks AS c (twin_group, rank, checked_upto, target, members, checked_at, waiting)
        SELECT g, t.rk,
               CASE WHEN t.comparable THEN t.hi ELSE t.done END,
               CASE WHEN t.comparable THEN t.hi END,
               coalesce(t.mkeys, '{}'), clock_timestamp(), t.waiting
        FROM todo t
        WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.rk = t.rk)
        ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, target = excluded.target,
            members = excluded.members, checked_at = excluded.checked_at, waiting = excluded.waiting
        RETURNING 1)
    SELECT f.rk, f.mkeys, f.mids, f.hi, f.upto, newest_key, f.step, f.from_step, f.waiting FROM found f
    UNION ALL -- a rank whose stored divergence was dropped: keys NULL tell the caller to tell the fleet
    SELECT d.rank, NULL::bigint[], NULL::text[], NULL::bigint, NULL::bigint, newest_key, NULL::bigint, NULL::bigint,
           NULL::boolean FROM dropped d;
END $$;

-- lockstep_batch_settle - the end of a batch's transaction for a run's rank in a twin group (issue 21): the shared
-- lock of the group's rank (lockstep_check_key), taken last, so that a comparison of that rank (which holds it
-- exclusively, lockstep_cmp_ranks and server/compare/step.c) is either over or starts after this commit; then,
-- under it, a batch that brings records (or step digests) of a step already compared moves the rank's mark back
-- to the step before (and the group's logical mark, rank -1: server/compare/logical.c), so that late data is
-- compared; and the rank's progress time is taken under the lock, so that a comparison's checked_at is later
-- than the progress it saw and earlier than any it did not. `lo`: the batch's smallest step (NULL: none).
CREATE OR REPLACE FUNCTION lockstep_batch_settle(p_run bigint, p_rank int, lo bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    grp text;
BEGIN
    SELECT twin_group INTO grp FROM runs WHERE run_key = p_run;
    IF grp IS NULL OR grp = '' THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(lockstep_check_key(grp, p_rank));
    IF lo IS NOT NULL THEN
        UPDATE group_checks SET checked_upto = lo - 1
            WHERE twin_group = grp AND rank IN (p_rank, -1) AND checked_upto >= lo;
    END IF;
    UPDATE rank_progress SET updated_at = clock_timestamp() WHERE run_key = p_run AND rank = p_rank;
END $$;

-- lockstep_store_batch, lockstep_store_batches (010_record_frames) - as before, now settled by
-- lockstep_batch_settle before they return.
CREATE OR REPLACE FUNCTION lockstep_store_batch(p_run bigint, p_rank int, p_bseq bigint, p_n int, p_held boolean,
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
                n_records = rank_progress.n_records + excluded.n_records, updated_at = clock_timestamp();
    END IF;
    IF p_held THEN
        UPDATE record_requests SET answered = true
            WHERE run_key = p_run AND rank = p_rank AND step = ANY (f_step) AND NOT answered;
    END IF;
    PERFORM lockstep_batch_settle(p_run, p_rank, least(CASE WHEN p_count > 0 THEN p_min_step END,
                                                       (SELECT min(s) FROM unnest(f_step) AS s),
                                                       (SELECT min(s) FROM unnest(d_step) AS s)));
    RETURN coalesce((SELECT array_agg(step ORDER BY step) FROM (SELECT step FROM record_requests
                     WHERE run_key = p_run AND rank = p_rank AND NOT answered ORDER BY step LIMIT 64) w), '{}');
END $$;

CREATE OR REPLACE FUNCTION lockstep_store_batches(b_run bigint[], b_rank int[], b_bseq bigint[], b_n int[], b_held boolean[],
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
            updated_at = clock_timestamp();
    UPDATE record_requests q SET answered = true
        FROM unnest(f_batch, f_step) AS f(bi, s)
        WHERE b_held[f.bi] AND q.run_key = b_run[f.bi] AND q.rank = b_rank[f.bi] AND q.step = f.s AND NOT q.answered;
    -- each stored batch's group rank: its shared lock, taken last and in one order, and the late-data rewind
    PERFORM lockstep_batch_settle(x.run_key, x.rank, min(x.lo))
        FROM (SELECT b_run[k] AS run_key, b_rank[k] AS rank,
                     least(CASE WHEN b_count[k] > 0 THEN b_min_step[k] END,
                           (SELECT min(f.s) FROM unnest(f_batch, f_step) AS f(bi, s) WHERE f.bi = k),
                           (SELECT min(d.s) FROM unnest(d_batch, d_step) AS d(bi, s) WHERE d.bi = k)) AS lo
              FROM unnest(stored) AS k) x
        GROUP BY x.run_key, x.rank ORDER BY x.run_key, x.rank;
    RETURN QUERY
        SELECT k::int, NOT (k::int = ANY (stored)),
               CASE WHEN k::int = ANY (stored) THEN
                   coalesce((SELECT array_agg(w.step ORDER BY w.step) FROM (SELECT r.step FROM record_requests r
                             WHERE r.run_key = b_run[k] AND r.rank = b_rank[k] AND NOT r.answered
                             ORDER BY r.step LIMIT 64) w), '{}') END
        FROM generate_subscripts(b_run, 1) AS k;
END $$;
