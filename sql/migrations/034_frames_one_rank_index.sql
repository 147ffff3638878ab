-- 034_frames_one_rank_index.sql - one rank-major index of record_frames instead of two (docs/scale.md, "One
-- rank-major index of the frames"): record_frames_lookup (run_key, rank, step) held every segment and
-- record_frames_series (run_key, rank, step) WHERE kind = 1 the series points' again, so a digest batch, whose only
-- segments are its series points, wrote the same entry into two indexes that inserts reach at random (a leaf per
-- rank and run: at 100,000 ranks these pages outgrow the buffer pool, and each insert may write one back). With kind
-- as the last column, one index serves both: a series read names rank, a step range and kind = 1, which the scan
-- checks on each entry before it reads a row, so the curve of a rank that also streams records reads only its points'
-- rows as before; every other read names run, rank and step as before.
CREATE INDEX IF NOT EXISTS record_frames_rank ON record_frames (run_key, rank, step, kind);
DROP INDEX IF EXISTS record_frames_lookup;
DROP INDEX IF EXISTS record_frames_series;
