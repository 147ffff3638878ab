-- 007_record_sites.sql - the call site of a record made by interposition (MPI, NCCL wrappers) or passed by a client:
-- module, offset in it, function and offset into it, nearest named caller. NULL when the record has none.
ALTER TABLE records ADD COLUMN IF NOT EXISTS site_module text,
                    ADD COLUMN IF NOT EXISTS site_offset bigint,
                    ADD COLUMN IF NOT EXISTS site_function text,
                    ADD COLUMN IF NOT EXISTS site_function_offset bigint,
                    ADD COLUMN IF NOT EXISTS site_caller text;
