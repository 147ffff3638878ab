-- 010_record_frames.sql - records stored as what they are: the CRC-framed records of each batch, cut per step into
-- segments that fit a heap page, decoded in C when read (server/store/frames.c); the one-row-per-record table is
-- kept as records_rows until lockstepd has converted it (server/store/convert.c) and dropped it. Also: steps whose
-- records an agent holds back (digest streaming) and lockstepd asked for.

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
