-- 020_rank_mpi_unseen.sql - a rank's end says when the process initialized MPI but none of its MPI calls reached
-- Lockstep's wrappers: 'unloaded' (liblockstep_mpi.so was not the process's MPI) or 'unseen' (it was; the calls took
-- a way in it does not interpose). A group whose runs recorded nothing then says why (server/rules/status.c).
ALTER TABLE rank_ends ADD COLUMN IF NOT EXISTS mpi_unseen text;
