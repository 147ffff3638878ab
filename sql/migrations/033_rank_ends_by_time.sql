-- 033_rank_ends_by_time.sql - the comparison's sweep asks every few seconds for the ranks that ended lately
-- (server/twins/compare.c cmp_active): by this index, and by runs' runs_ended_at for the runs that ended lately,
-- rather than reading every rank end ever stored (rank_ends keeps a row per rank of every run: millions in a
-- year of a fleet's jobs).
CREATE INDEX IF NOT EXISTS rank_ends_at ON rank_ends (ended_at);
