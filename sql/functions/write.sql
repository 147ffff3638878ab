-- write.sql - a batch's write and settle, in one statement (so one transaction and one round trip): the replay
-- guard, the frames, the per-step digests, the rank's progress, the late-data rewind of the comparison's marks, and
-- the steps of held-back records lockstepd wants. Called by server/store/write.c.
--
-- What holds: a batch (or a group of them) commits under the shared form of each of its group ranks' locks
-- (lockstep_check_key, compare.sql), so a comparison of that rank (which holds it exclusively: lockstep_cmp_ranks,
-- server/twins/step.c) is either over or starts after the commit; under the lock, a batch that brings records
-- (or step digests) of a step already compared moves the rank's mark back to the step before (and the group's
-- logical mark, rank -1: server/twins/logical.c), and the rank's progress time is taken, so that a comparison's
-- checked_at is later than the progress it saw and earlier than any it did not. The record requests a batch
-- answers are marked under the lock, so a batch waiting for a comparison's lock holds none of the rows that
-- comparison may write. The lock is taken before the progress is written, so the progress is stamped in the same
-- write, and a group of batches takes its locks and stamps its progress in one statement for all its ranks (that
-- settle was 40% of a digest batch's PostgreSQL time when it took four statements per rank). Plans are kept
-- (plan_cache_mode): see compare.sql.

-- lockstep_store_batches - a group of batches in one statement (a database worker's group of queued batches, or
-- one batch alone; b_* per batch, in the order their locks are taken; f_* the segments, each naming its batch by its
-- index in b_*, from 1, f_last a segment's last step (NULL: one step; migrations/030_series_spans.sql); b_lo the
-- smallest step a batch brings records or step digests of (NULL: none), which a late batch rewinds the marks to;
-- p_* the packs of step digests (step_digest_packs: one a batch and block of steps it touches), each the slice
-- p_from .. p_to of the d_* arrays (from 1), p_cons whether it carries consensus digests; d_* the step rows, a
-- step once in a batch, lockstepd having added up its parts: d_cons its consensus digests packed as
-- step_consensus.cons holds them (026_consensus_beside_steps.sql), NULL when none, a step with consensus digests only
-- coming with 0 records; k_* the groups a batch names that lockstepd has not stored yet): the replay guard first,
-- the frames, the packs, the groups, each rank's progress, the late-data rewind, the answered record requests.
-- Returns per batch whether it was a replay (stored before, or twice in this group: the first one counts; nothing
-- of it is stored) and the steps of its rank whose held-back records lockstepd wants.
CREATE OR REPLACE FUNCTION lockstep_store_batches(b_run bigint[], b_rank int[], b_bseq bigint[], b_n int[],
                                       b_held boolean[], b_min_step bigint[], b_max_step bigint[], b_max_seq bigint[],
                                       b_count bigint[], b_lo bigint[], f_batch int[], f_step bigint[],
                                       f_seq bigint[], f_n int[], f_kind smallint[], f_frames bytea[],
                                       f_last bigint[], p_batch int[], p_from int[], p_to int[], p_cons boolean[],
                                       d_step bigint[], d_n int[], d_digest bigint[], d_inputs bigint[],
                                       d_cons bytea[], k_batch int[], k_key bigint[], k_size int[], k_ranks text[])
RETURNS TABLE (i int, duplicate boolean, want bigint[])
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    stored int[];
    kept boolean[];  -- by batch: whether it is stored (`stored` as a lookup, not a list each row searches)
    s_group text[];  -- the stored batches' group ranks (in a twin group), in lock order
    s_rank int[];
    s_lo bigint[];   -- each one's smallest step in these batches that may be late (NULL: none)
    s_glo bigint[];  -- its group's smallest step in these batches, for the group's logical mark (NULL: none)
    k_group text[];  -- by index in `stored`: its batch's twin group ('' or NULL: none)
    j int;
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
    kept := array_fill(false, ARRAY[cardinality(b_run)]);
    FOREACH j IN ARRAY stored LOOP
        kept[j] := true;
    END LOOP;
    INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames, step_last)
        SELECT b_run[f.bi], b_rank[f.bi], f.s, f.q, f.c, f.kd, f.fr, f.l
        FROM unnest(f_batch, f_step, f_seq, f_n, f_kind, f_frames, f_last) AS f(bi, s, q, c, kd, fr, l)
        WHERE kept[f.bi];
    -- the step digests, a pack per batch and block of steps (step_digest_packs, migration 029), appended: slices of
    -- the step rows, no aggregation here (lockstepd added up each step's parts within its batch; the views
    -- step_digests and step_consensus add up a step's parts across packs, its consensus digests in bseq order)
    INSERT INTO step_digest_packs (run_key, rank, blk, bseq, steps, n, digest, inputs, cons)
        SELECT b_run[p.bi], b_rank[p.bi], lockstep_step_block(d_step[p.o]), b_bseq[p.bi], d_step[p.o:p.e],
               d_n[p.o:p.e], d_digest[p.o:p.e], d_inputs[p.o:p.e], CASE WHEN p.c THEN d_cons[p.o:p.e] END
        FROM unnest(p_batch, p_from, p_to, p_cons) AS p(bi, o, e, c)
        WHERE kept[p.bi];
    -- the groups the consensus digests name, the first time (k_ranks: the sorted world ranks as an int[] literal)
    IF cardinality(k_batch) > 0 THEN
        INSERT INTO consensus_comms (run_key, comm_key, size, ranks)
            SELECT b_run[k.bi], k.k, k.z, k.r::int[]
            FROM unnest(k_batch, k_key, k_size, k_ranks) AS k(bi, k, z, r)
            WHERE kept[k.bi]
            ON CONFLICT DO NOTHING;
    END IF;
    -- the stored batches' group ranks, then their locks, shared, in one order
    SELECT array_agg(u.twin_group ORDER BY x.o) INTO k_group
        FROM unnest(stored) WITH ORDINALITY AS x(k, o) LEFT JOIN runs u ON u.run_key = b_run[x.k];
    SELECT array_agg(x.g ORDER BY x.g, x.r), array_agg(x.r ORDER BY x.g, x.r), array_agg(x.glo ORDER BY x.g, x.r)
        INTO s_group, s_rank, s_glo
        FROM (SELECT DISTINCT k_group[t.o] AS g, b_rank[stored[t.o]] AS r,
                     min(b_lo[stored[t.o]]) OVER (PARTITION BY k_group[t.o]) AS glo
              FROM generate_subscripts(stored, 1) AS t(o) WHERE k_group[t.o] <> '') x;
    PERFORM pg_advisory_xact_lock_shared(lockstep_check_key(q.g, q.r))
        FROM unnest(s_group, s_rank) WITH ORDINALITY AS q(g, r, o) ORDER BY q.o;
    -- under them: the ranks' progress, stamped as it is written, and the max_step each had before (prior_max_step,
    -- migration 032; NULL: a row just made); a rank's batches may be late when one brings a step its run had reached
    -- already, or its run had no progress there, or it counts nothing (a comparison marks a rank no further than each
    -- of its runs' max_step there)
    WITH up AS (
        INSERT INTO rank_progress AS rp (run_key, rank, min_step, max_step, max_seq, n_records, updated_at)
            SELECT b_run[k], b_rank[k], min(b_min_step[k]), max(b_max_step[k]), max(b_max_seq[k]), sum(b_count[k]),
                   clock_timestamp()
            FROM unnest(stored) AS k WHERE b_count[k] > 0
            GROUP BY b_run[k], b_rank[k] ORDER BY 1, 2
            ON CONFLICT (run_key, rank) DO UPDATE SET
                min_step = least(rp.min_step, excluded.min_step), max_step = greatest(rp.max_step, excluded.max_step),
                max_seq = greatest(rp.max_seq, excluded.max_seq), n_records = rp.n_records + excluded.n_records,
                updated_at = excluded.updated_at, prior_max_step = rp.max_step
            RETURNING rp.run_key, rp.rank, rp.prior_max_step)
    SELECT array_agg(x.lo ORDER BY x.g, x.r) INTO s_lo
        FROM (SELECT k_group[t.o] AS g, b_rank[stored[t.o]] AS r,
                     min(b_lo[stored[t.o]]) FILTER (WHERE up.prior_max_step IS NULL
                                                  OR b_lo[stored[t.o]] <= up.prior_max_step) AS lo
              FROM generate_subscripts(stored, 1) AS t(o)
              LEFT JOIN up ON up.run_key = b_run[stored[t.o]] AND up.rank = b_rank[stored[t.o]]
              WHERE k_group[t.o] <> '' GROUP BY 1, 2) x;
    UPDATE rank_progress p SET updated_at = clock_timestamp() -- ranks whose batches brought nothing to count
        FROM (SELECT b_run[k] AS run_key, b_rank[k] AS rank FROM unnest(stored) AS k
              GROUP BY 1, 2 HAVING max(b_count[k]) <= 0) z
        WHERE p.run_key = z.run_key AND p.rank = z.rank;
    UPDATE record_requests q SET answered = true
        FROM unnest(f_batch, f_step, f_last) AS f(bi, s, l)
        WHERE b_held[f.bi] AND q.run_key = b_run[f.bi] AND q.rank = b_rank[f.bi]
          AND q.step BETWEEN f.s AND coalesce(f.l, f.s) AND NOT q.answered;
    -- late data: the group's logical mark (rank -1), then each rank's mark whose batches may be late, back to the
    -- step before their smallest, in lock order (a lookup of group_checks' key each; one UPDATE joining the arrays
    -- with group_checks would lock rows in plan order and could deadlock two workers)
    FOR j IN 1 .. coalesce(cardinality(s_group), 0) LOOP
        IF s_glo[j] IS NOT NULL AND (j = 1 OR s_group[j] <> s_group[j - 1]) THEN
            UPDATE group_checks SET checked_upto = s_glo[j] - 1
                WHERE twin_group = s_group[j] AND rank = -1 AND checked_upto >= s_glo[j];
        END IF;
        CONTINUE WHEN s_lo[j] IS NULL;
        UPDATE group_checks SET checked_upto = s_lo[j] - 1
            WHERE twin_group = s_group[j] AND rank = s_rank[j] AND checked_upto >= s_lo[j];
    END LOOP;
    RETURN QUERY
        SELECT k::int, NOT kept[k],
               CASE WHEN kept[k] THEN
                   coalesce((SELECT array_agg(w.step ORDER BY w.step) FROM (SELECT r.step FROM record_requests r
                             WHERE r.run_key = b_run[k] AND r.rank = b_rank[k] AND NOT r.answered
                             ORDER BY r.step LIMIT 64) w), '{}') END
        FROM generate_subscripts(b_run, 1) AS k;
END $$;

-- lockstep_rank_end - a rank's end, and its run's when it is the last (server/store/runs.c, store_rank_end), in one
-- transaction and one round trip (it was six: a run's ends take its row in turn, and each round trip inside that
-- transaction kept the row from the next end). In order: the rank's comparison lock in group g ('' : none), shared,
-- so that the end and its time commit under it as a batch's progress does (write.sql, above): a comparison that saw
-- it marks later, one that did not is older than it; the run's row, so that the ends of one run take it in turn
-- and the last one's look for a rank without an end sees every other end committed (two ends looking at once, each
-- without the other's uncommitted row, left the run running); the end (an abort's code is kept when the rank's end
-- is reported again, by the SPANK plugin with the signal the launcher killed it with, and so is the agent's word on
-- MPI calls it did not see); then the run's status, when every rank 0..ranks-1 has an end (ingest takes no other
-- rank). The look for a rank without one starts at this rank and steps by about 0.618 of the ranks, prime to them
-- (every rank once, ranks far apart first): while a share f of the ranks has no end it stops after about 1/f of
-- them, whatever order the ends come in (a rank's neighbours end with it when a launcher stops ranks in order).
-- Both series are in select lists, so they stop where the LIMIT does (one in FROM is made whole first); counting
-- every end of the run at each end cost ~0.7 ms an end at 5,000 ranks a run (docs/scale.md). Returns the run's
-- status when it is over (again when an end is reported again), NULL while a rank has no end.
CREATE OR REPLACE FUNCTION lockstep_rank_end(g text, k bigint, rk int, code int, ab boolean, unseen text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    IF g <> '' THEN
        PERFORM pg_advisory_xact_lock_shared(lockstep_check_key(g, rk));
    END IF;
    PERFORM 1 FROM runs WHERE run_key = k FOR UPDATE;
    INSERT INTO rank_ends AS e (run_key, rank, exit_code, ended_at, aborted, mpi_unseen)
        VALUES (k, rk, code, clock_timestamp(), ab, NULLIF(unseen, ''))
        ON CONFLICT (run_key, rank) DO UPDATE SET
            exit_code = CASE WHEN e.aborted THEN e.exit_code ELSE excluded.exit_code END,
            ended_at = excluded.ended_at, aborted = e.aborted OR excluded.aborted,
            mpi_unseen = coalesce(excluded.mpi_unseen, e.mpi_unseen);
    UPDATE runs SET status = CASE WHEN EXISTS (SELECT 1 FROM rank_ends x WHERE x.run_key = k AND x.exit_code <> 0)
                                  THEN 'failed' ELSE 'ended' END,
                    ended_at = coalesce(ended_at, clock_timestamp())
        WHERE runs.run_key = k
          AND (SELECT q.i FROM (SELECT generate_series(1, runs.ranks) AS i,
                                       (SELECT c.c FROM (SELECT generate_series(greatest((runs.ranks * 0.618)::int, 1),
                                                                                runs.ranks) AS c) c
                                        WHERE gcd(c.c, runs.ranks) = 1 LIMIT 1)::bigint AS s) q
               WHERE (SELECT 1 FROM rank_ends x WHERE x.run_key = k
                      AND x.rank = ((rk + q.i * q.s) % runs.ranks)::int) IS NULL LIMIT 1) IS NULL
        RETURNING runs.status INTO st;
    RETURN st;
END $$;
