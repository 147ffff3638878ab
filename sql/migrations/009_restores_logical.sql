-- 009_restores_logical.sql - checkpoint restores and layout-invariant records: the records' extension fields (shards,
-- scales, chunk sizes), an index of state entries, and which restored state block was checked against which twin.
-- The extension fields other than the call site, as common/record.h encodes them (rec_record.ext: keys 2 shard,
-- 3 chunk size, 4 scales); NULL when none. The call site is not repeated here: it has its own columns
-- (007_record_sites.sql).
ALTER TABLE records ADD COLUMN IF NOT EXISTS ext bytea;
-- Entries of state blocks (flags: 4 saved, 8 restored) are few; the restore check finds them without a scan.
CREATE INDEX IF NOT EXISTS records_state ON records (run_key, rank, step) WHERE flags & 12 <> 0;

-- One restored state block (a run, a rank, the block's step) checked against one twin: its saved block of that
-- step, else its records of that step (common/recmatch.h, rec_restore_check). Written once the verdict is final.
CREATE TABLE IF NOT EXISTS restore_checks (
    twin_group  text NOT NULL,
    run_key     bigint NOT NULL,   -- the run that restored
    rank        int NOT NULL,
    step        bigint NOT NULL,   -- the block's step
    ref_run_key bigint NOT NULL,   -- the twin it was compared with
    reference   text NOT NULL,     -- saved | records | none
    status      text NOT NULL,     -- same | differs | not-restored | not-saved | unverified
    entry       text,              -- the first differing entry
    occ         int,
    diff        text,              -- with differs: dtype | shape | content | scales
    compared    int NOT NULL,
    unverified  int NOT NULL,
    detail      jsonb,             -- {"restored": {...} or null, "reference": {...} or null}
    checked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (twin_group, run_key, rank, step, ref_run_key)
);
