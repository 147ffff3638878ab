-- compare.sql - the comparison's SQL: the lock of a group's rank, the first look at ranks (which runs are compared,
-- where to look, the first differing step), and when a step became comparable. Called by server/twins/compare.c
-- and server/twins/step.c; the batch write shares the lock (write.sql).
--
-- The first look and the batch's statement run thousands of times a second with other arrays each time: planning
-- their statements again for each call (PostgreSQL's custom plans, its choice for the first calls of a session and
-- whenever they look cheaper) cost more than running them (a look at two ranks: 1.5 ms planned anew, 0.6 ms with
-- the plan kept; at fifty ranks 5-8 ms against 4-4.5 ms). Their plans are kept (plan_cache_mode).

-- lockstep_check_key - the advisory lock of one group's rank: the comparison holds it exclusively while it
-- compares, a batch and a rank's end share it while they commit, so a comparison never marks as compared
-- a step whose records were committed while it looked.
CREATE OR REPLACE FUNCTION lockstep_check_key(g text, r int) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended(g || '/' || r::text, 7243106)
$$;

-- lockstep_step_block - the block of 32 steps whose digests one row of step_digest_packs holds for a rank
-- (migrations/029_step_digest_packs.sql): the batch write packs by it, and every reader of the view step_digests
-- bounds `blk` by it as well as `step`, so that the packs' indexes find the rows.
CREATE OR REPLACE FUNCTION lockstep_step_block(step bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT step >> 5
$$;

-- lockstep_block_first - the first step of `step`'s block: a segment of series points spans steps of one block
-- only (migrations/030_series_spans.sql), so the segments that span step X start at this step or after it.
-- lockstepd cuts them by the same block (server/store/frames.h FRAMES_BLOCK_SHIFT; tests/sql/test_step_packs.c
-- holds both to it).
CREATE OR REPLACE FUNCTION lockstep_block_first(step bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT lockstep_step_block(step) << 5
$$;

-- lockstep_checked_before_end - whether a rank's check (group_checks.checked_at) was made before the rank ended in
-- a run of its group (`rank_end`: rank_ends.ended_at, the newest where several) or before a run of the group ended
-- (`run_end`: runs.ended_at, the newest where several); false when neither is known. Such a check is not finished:
-- an ended run's newest step is complete, and the end asked for a look the check has not made yet. The twin status
-- counts the rank unchecked (server/twins/findings.c VD_UNCHECKED), the sweep sends it to the look (cmp_active,
-- server/twins/compare.c), and the memory's marks hand it to the look (lockstep_cmp_marks). One expression, which
-- PostgreSQL inlines where it is called.
CREATE OR REPLACE FUNCTION lockstep_checked_before_end(checked_at timestamptz, rank_end timestamptz,
                                                       run_end timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(checked_at < greatest(rank_end, run_end), false)
$$;

-- lockstep_cmp_ranks - the comparison's first look at ranks `rks` of group `g` in one round trip (the ranks batches
-- touched since the last look), under each rank's lock:
--  * a rank whose lock a batch or an end holds (they commit under its shared form) is left alone: they ask for
--    it again once committed;
--  * the runs compared are those of the group's first max_runs runs that server/rules/members.h's rule keeps
--    on the rank (runs without records there, or with records only before their start_step, or not covering the
--    shared start, are left out); a running run left out no longer holds the rest: the rank is compared and
--    marked `waiting` (the fleet does not count it settled);
--  * per rank: the shared complete steps up to `hi`; the range starts after the mark only when the same runs were
--    compared (else from the shared start: a run joined or left); a late batch moves the mark back (write.sql);
--  * a rank without a differing step is marked in the same statement (target, members, checked_at, waiting); its
--    stored step divergence (not a restore difference) inside the range just compared is dropped: the runs no
--    longer show it;
--  * a rank with a differing step is returned (its runs, ids, hi, upto, newest run key, the step) and compared
--    record by record in its own transaction (server/twins/step.c), which writes its mark;
--  * a step before it (or in a range without one) whose records agree in every run while their input fingerprints
--    do not (step_digests.inputs) is noted in group_absorbed: an absorbed difference.
-- Ranks a twin has not reached, or with nothing new, are left out. The locks taken here are transaction-level:
-- they hold until this statement's transaction commits.
CREATE OR REPLACE FUNCTION lockstep_cmp_ranks(g text, rks int[], max_runs int)
RETURNS TABLE (r_rank int, keys bigint[], ids text[], hi bigint, upto bigint, newest bigint, step bigint,
               from_step bigint, waiting boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    newest_key bigint;
    got int[];
BEGIN
    SELECT max(u.run_key) INTO newest_key FROM runs u WHERE u.twin_group = g;
    IF newest_key IS NULL THEN
        RETURN;
    END IF;
    -- the locks first, in a statement of their own: the look's snapshot is taken after them, so it sees every batch
    -- that committed under a lock before this took it (a late batch's rewind of the mark included, which the mark
    -- written below would otherwise overwrite)
    SELECT array_agg(q.rk) INTO got FROM unnest(rks) AS q(rk)
        WHERE pg_try_advisory_xact_lock(lockstep_check_key(g, q.rk));
    IF got IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH locked AS (SELECT q.rk FROM unnest(got) AS q(rk)),
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
    -- The members, by the rule of server/rules/members.h (the twin API applies the same rule to whole runs and
    -- says why each run was left out; tests/integration/test_groups.c holds both to it):
    cand AS ( -- rules 1-3 leave out a run that ended without any record, one that runs without records here
              -- yet, and one whose records here all come before its start_step
        SELECT c.*, NOT (c.ended AND NOT c.any_records) AND NOT (NOT c.ended AND c.max_step IS NULL)
                    AND NOT (c.max_step IS NOT NULL AND c.start_step > c.max_step) AS kept
        FROM cell c),
    starts AS ( -- each kept run's start_step and how many kept runs cover it (from their start_step to their
                -- highest step here; one that ended without records here covers every step, where it is missing),
                -- counted among the rank's own kept runs, gathered in arrays (a subquery over all of `cand` for
                -- each start made the look quadratic in its ranks: 4.1 s of 4.3 for 1,679 ranks)
        SELECT k.rk, s.lo,
               (SELECT count(*) FROM unnest(k.ss, k.ms) AS x(st, mx)
                WHERE x.mx IS NULL OR (x.st <= s.lo AND x.mx >= s.lo)) AS cover
        FROM (SELECT c.rk, array_agg(c.start_step) AS ss, array_agg(c.max_step) AS ms FROM cand c WHERE c.kept
              GROUP BY c.rk) k
        CROSS JOIN LATERAL (SELECT DISTINCT x.st AS lo FROM unnest(k.ss, k.ms) AS x(st, mx)
                            WHERE x.mx IS NOT NULL) s),
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
    due AS (
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
    sx AS MATERIALIZED ( -- the steps past the mark, up to the stored divergence (nothing after it can come before
                         -- it; a divergence before the range stands), that differ, or whose records agree in every
                         -- run while their input fingerprints do not (an absorbed difference), in one pass
        SELECT t.rk, x.step, x.differs
        FROM due t CROSS JOIN LATERAL (
            SELECT s.step,
                   count(*) < cardinality(t.mkeys) OR min(s.digest) <> max(s.digest) OR min(s.n) <> max(s.n)
                       AS differs
            FROM step_digests s
            WHERE s.run_key = ANY (t.mkeys) AND s.rank = t.rk
              AND s.blk BETWEEN lockstep_step_block(t.from_step) AND lockstep_step_block(least(t.hi, t.div_step))
              AND s.step BETWEEN t.from_step AND least(t.hi, t.div_step)
            GROUP BY s.step
            HAVING count(*) < cardinality(t.mkeys) OR min(s.digest) <> max(s.digest) OR min(s.n) <> max(s.n)
                OR (count(s.inputs) = count(*) AND min(s.inputs) <> max(s.inputs))) x
        WHERE t.comparable AND t.from_step <= t.hi AND (t.div_step IS NULL OR t.div_step >= t.from_step)),
    found AS ( -- the first differing step
        SELECT t.rk, t.mkeys, t.mids, t.hi, least(t.hi, t.div_step) AS upto, x.step, t.from_step, t.waiting
        FROM due t JOIN (SELECT sx.rk, min(sx.step) AS step FROM sx WHERE sx.differs GROUP BY sx.rk) x
            ON x.rk = t.rk),
    absorbed AS ( -- the absorbed differences before it, each rank's step once (a second look finds its row)
        INSERT INTO group_absorbed (twin_group, rank, step, keys)
        SELECT g, sx.rk, sx.step, t.mkeys FROM sx JOIN due t ON t.rk = sx.rk
        WHERE NOT sx.differs AND sx.step < coalesce((SELECT f.step FROM found f WHERE f.rk = sx.rk), t.hi + 1)
        ON CONFLICT DO NOTHING RETURNING 1),
    dropped AS ( -- compared through the range without a difference: a step divergence there no longer shows
        DELETE FROM divergences d USING due t
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
        FROM due t
        WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.rk = t.rk)
        ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, target = excluded.target,
            members = excluded.members, checked_at = excluded.checked_at, waiting = excluded.waiting
        RETURNING 1)
    SELECT f.rk, f.mkeys, f.mids, f.hi, f.upto, newest_key, f.step, f.from_step, f.waiting FROM found f
    UNION ALL -- a rank whose stored divergence was dropped: keys NULL tell the caller to tell the fleet
    SELECT d.rank, NULL::bigint[], NULL::text[], NULL::bigint, NULL::bigint, newest_key, NULL::bigint, NULL::bigint,
           NULL::boolean FROM dropped d;
END $$;

-- lockstep_cmp_marks - marks of ranks of group `g` whose steps m_from..m_upto lockstepd found equal in its memory
-- (server/twins/cmp_mem.c), over the runs e_key it holds on each rank (e_rank, e_key, e_count: per rank and run, the
-- records memory counted there). A rank is marked only where the database holds what memory assumed; every other
-- one is left to the look (lockstep_cmp_ranks), which lockstepd asks for:
--  * its lock is free (no batch or end commits on it now, no comparison runs); the locks are taken in a statement
--    of their own, so that the next one's snapshot sees every commit made before them;
--  * the group's runs all registered one rank count (else its logical tensors are compared);
--  * its mark has the same members, is not waiting, reached its target, and covers the steps before m_from; or it
--    has no mark yet and the members rule (server/rules/members.h) keeps every run of the group there: memory holds
--    each of them (so each has records on the rank), they all start at one step, and memory compared from it and
--    past it (the look would then compare the same runs over the same steps; tests/integration/test_marks.c holds
--    the first mark to the look's);
--  * each member's progress on the rank counts the records memory counted (no batch memory did not see: one
--    stored by another lockstepd, or one whose commit it has not heard of yet);
--  * no divergence is stored on it.
-- A rank already marked as far or further (a look got there first: same members, not waiting, at its target, no
-- divergence) needs nothing: it is returned as marked, and nothing is written (the look compared those steps); unless
-- a run of the group, or the rank in one, ended after that mark: the twin status counts such a rank unchecked
-- (server/twins/findings.c), and the look the end asked for may have found this statement holding the lock and left
-- it, so the rank goes to the look.
-- Returns the ranks marked (r_state 0: checked_upto and target m_upto, checked_at now), and those a moment may settle,
-- for memory to try again at its next flush: 1, its lock was busy (a batch commits on it, or a look compares it: the
-- look could not take it either); 2, it holds every condition but the count (a member's progress counts other
-- records than memory did: a batch committed that memory has not counted yet). A rank not returned goes to the look
-- at once: new members, a mark not covering, a divergence stored, ... (a look may find what memory cannot).
CREATE OR REPLACE FUNCTION lockstep_cmp_marks(g text, m_rank int[], m_from bigint[], m_upto bigint[], e_rank int[],
                                              e_key bigint[], e_count bigint[])
RETURNS TABLE (r_rank int, r_state smallint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    lo int;          -- the smallest and largest rank of m_rank
    hi int;
    held boolean[];  -- by rank, lo..hi: whether its lock was taken (a lookup, not an array each row searches: a
                     -- `= ANY (locked)` per row made a statement of 4,000 ranks 200 ms, of 240 ranks 4.7 ms)
    j int;
BEGIN
    IF (SELECT count(DISTINCT u.ranks) FROM runs u WHERE u.twin_group = g) <> 1 THEN
        RETURN;
    END IF;
    SELECT min(q.rk), max(q.rk) INTO lo, hi FROM unnest(m_rank) AS q(rk);
    IF lo IS NULL THEN
        RETURN;
    END IF;
    held := array_fill(false, ARRAY[hi - lo + 1], ARRAY[lo]);
    FOR j IN SELECT q.rk FROM unnest(m_rank) AS q(rk) WHERE pg_try_advisory_xact_lock(lockstep_check_key(g, q.rk))
    LOOP
        held[j] := true;
    END LOOP;
    -- each rank's progress and mark are read by their key, a LATERAL subquery each (OFFSET 0 keeps it one): a join
    -- left to the plan this statement keeps (force_generic_plan), made while group_checks held a few rows of the
    -- group, scanned every mark of the group once a rank (~55 ms a call at 5,000 ranks a group, bench/fleet)
    RETURN QUERY
    WITH mem AS (
        SELECT e.rk, array_agg(e.k ORDER BY e.k) AS keys, bool_and(coalesce(p.n_records = e.c, false)) AS counted
        FROM unnest(e_rank, e_key, e_count) AS e(rk, k, c)
        LEFT JOIN LATERAL (SELECT p.n_records FROM rank_progress p WHERE p.run_key = e.k AND p.rank = e.rk
                           OFFSET 0) p ON true
        WHERE coalesce(held[e.rk], false)
        GROUP BY e.rk),
    gr AS ( -- the group's runs, the step they all start at (NULL: they start at different steps), their last end
        SELECT array_agg(u.run_key ORDER BY u.run_key) AS keys,
               CASE WHEN min(u.start_step) = max(u.start_step) THEN min(u.start_step) END AS start,
               max(u.ended_at) AS ended_at
        FROM runs u WHERE u.twin_group = g),
    cur AS ( -- each rank memory would mark: what memory holds there, and its mark (has_mark false: none yet); the ranks
             -- with a divergence stored are left out
        SELECT m.rk, m.lo, m.upto, mem.keys, mem.counted, c.rank IS NOT NULL AS has_mark, c.checked_upto,
               c.checked_at,
               c.members = mem.keys AND NOT c.waiting AND c.target IS NOT NULL AND c.checked_upto = c.target AS settled
        FROM unnest(m_rank, m_from, m_upto) AS m(rk, lo, upto)
        JOIN mem ON mem.rk = m.rk
        LEFT JOIN LATERAL (SELECT * FROM group_checks c WHERE c.twin_group = g AND c.rank = m.rk OFFSET 0) c ON true
        WHERE NOT EXISTS (SELECT 1 FROM divergences d WHERE d.twin_group = g AND d.rank = m.rk)),
    ok AS ( -- every condition but the count
        SELECT cur.rk, cur.upto, cur.keys, cur.counted FROM cur CROSS JOIN gr
        WHERE CASE WHEN NOT cur.has_mark THEN cur.keys = gr.keys AND cur.lo <= gr.start AND cur.upto >= gr.start
                   ELSE cur.settled AND cur.checked_upto >= cur.lo - 1 AND cur.checked_upto < cur.upto END),
    ahead AS ( -- marked as far already: nothing to write, nothing for the look to find; but for a mark made before
               -- an end (the look's, at an end, weighs the ends as well)
        SELECT cur.rk FROM cur CROSS JOIN gr
        WHERE cur.has_mark AND cur.settled AND cur.checked_upto >= cur.upto
          AND NOT lockstep_checked_before_end(cur.checked_at,
                                              (SELECT max(e.ended_at) FROM rank_ends e
                                               WHERE e.run_key = ANY (gr.keys) AND e.rank = cur.rk),
                                              gr.ended_at)),
    marked AS (
        INSERT INTO group_checks AS c (twin_group, rank, checked_upto, target, members, checked_at, waiting)
        SELECT g, ok.rk, ok.upto, ok.upto, ok.keys, clock_timestamp(), false FROM ok WHERE ok.counted
        ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, target = excluded.target,
            checked_at = excluded.checked_at
        RETURNING c.rank)
    SELECT k.rank, 0::smallint FROM marked k
    UNION ALL
    SELECT a.rk, 0::smallint FROM ahead a
    UNION ALL
    SELECT q.rk, 1::smallint FROM unnest(m_rank) AS q(rk) WHERE NOT held[q.rk]
    UNION ALL -- only the count stands in the way: a batch memory has not counted yet
    SELECT ok.rk, 2::smallint FROM ok WHERE NOT ok.counted;
END $$;

-- lockstep_cmp_rank_wait - lockstep_cmp_ranks for one rank whose comparison a reply waits for (a rank's end, whose
-- reply asks for the held records of a differing step it completes), waiting for the rank's lock where the look
-- skips a rank whose lock another look or memory's marks hold: skipped, the end's reply asked for nothing and the
-- agent exited with the records (test_held's test_last_step_asked_at_end, on a loaded machine). The wait is bounded
-- (lock_timeout, this transaction only): past it the statement fails, and the rank is looked at again shortly.
CREATE OR REPLACE FUNCTION lockstep_cmp_rank_wait(g text, rk int, max_runs int)
RETURNS TABLE (r_rank int, keys bigint[], ids text[], hi bigint, upto bigint, newest bigint, step bigint,
               from_step bigint, waiting boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('lock_timeout', '5s', true);
    PERFORM pg_advisory_xact_lock(lockstep_check_key(g, rk));
    RETURN QUERY SELECT * FROM lockstep_cmp_ranks(g, ARRAY[rk], max_runs);
END $$;

-- lockstep_shown_at - when step `st` of rank `rk` became comparable across the runs `keys`: per run, the commit of
-- its first batch past the step (or its rank's end), the latest of them; NULL when some run has neither on record.
-- The detection latency counts from here: the commit of the batch that showed the divergence. With
-- track_commit_timestamp on (lockstepd's embedded cluster sets it) that is the transaction's commit; else the time
-- the batch was written, a little earlier.
CREATE OR REPLACE FUNCTION lockstep_shown_at(keys bigint[], rk int, st bigint) RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN count(*) = count(t) THEN extract(epoch FROM max(t)) END
    FROM (SELECT k, coalesce((SELECT min(coalesce(CASE WHEN current_setting('track_commit_timestamp') = 'on'
                                                       THEN pg_xact_commit_timestamp(b.xmin) END, b.committed_at))
                              FROM batches b WHERE b.run_key = k AND b.rank = rk AND b.max_step > st),
                             (SELECT e.ended_at FROM rank_ends e WHERE e.run_key = k AND e.rank = rk)) AS t
          FROM unnest(keys) AS k) x
$$;
