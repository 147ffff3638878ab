/* mpiseen.h - whether a process's MPI calls reached Lockstep's MPI wrappers: a run that used MPI and recorded none
 * of it is told apart from one that had nothing to record. */
#ifndef AGENT_MPISEEN_H
#define AGENT_MPISEEN_H

/* mpiseen_note - counts one call of an MPI wrapper when `name` is an MPI record's ("mpi.*"). Lock-free. */
void mpiseen_note(const char *name);

/* mpiseen_unseen - at the end of a rank that recorded nothing: NULL when no wrapper missed anything (the process never
 * initialized MPI, as far as the MPI library it loaded says, or a wrapper saw a call); else why none was seen, for the
 * end report: "unloaded" when the process's MPI_Allreduce is not liblockstep_mpi.so's (the wrappers are not loaded, or
 * another library comes first), "unseen" when it is (the calls took a way in the wrappers do not interpose: another
 * language binding or MPI library). Says it once on stderr too. */
const char *mpiseen_unseen(void);

#endif /* AGENT_MPISEEN_H */
