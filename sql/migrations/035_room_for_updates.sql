-- 035_room_for_updates.sql - the two rows every batch or mark updates in place keep room on their page for the new
-- version (docs/scale.md, "One rank-major index of the frames, room for updates, ..."): a rank's progress
-- (rank_progress, every batch) and its mark (group_checks, every comparison of it). A page that is full makes an
-- update write the new version elsewhere and a new entry into each index; with a fifth of each page left free the
-- update stays on the page, and the index is not touched (PostgreSQL's heap-only tuples). New pages keep the room;
-- pages written before this fill to the old limit until the table is rewritten (VACUUM FULL or pg_repack, at the
-- site's convenience).
ALTER TABLE rank_progress SET (fillfactor = 80);
ALTER TABLE group_checks SET (fillfactor = 80);
