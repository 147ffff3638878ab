/* callsite.h - the call site of an interposed call: its return address resolved once to module, offset, function and
 * nearest named caller. */
#ifndef AGENT_CALLSITE_H
#define AGENT_CALLSITE_H

#include <stdint.h>

#include "common/record.h"

/* One resolved return address. The site's strings live in the entry, and entries live as long as the
 * process (the table only grows, to at most CALLSITE_MAX entries), so a record may borrow them freely. */
typedef struct cs_entry {
    const void *ret;
    rec_site site;
    struct cs_entry *next; /* the bucket's chain */
    /* What the recorder decided for records of one name from this site (agent/api.c keeps these under its
     * own lock): for LOCKSTEP_IGNORE and LOCKSTEP_STEP_ON of configuration generation `gen`. */
    uint32_t gen;
    uint64_t name_hash; /* of the record name the decisions were taken for */
    uint8_t ignored, steps;
} cs_entry;

#define CALLSITE_MAX 100000

/* callsite_get - the entry of return address `ret`, resolved the first time it is seen: the module that
 * holds it (file name without directory), its offset there (the run-time address less the load bias, the
 * same in every run of the binary), the function holding it from the module's symbol table (demangled
 * with __cxa_demangle when the process has it), and, when no symbol holds it, the nearest named function
 * up the calling thread's stack. The first call for an address walks the stack of the calling thread, so it
 * must be made in the thread that issued the call (from the wrapper itself). Later calls take no lock.
 * Returns NULL when `ret` is NULL, out of memory, or past CALLSITE_MAX entries (said once): the record
 * then has no site. */
cs_entry *callsite_get(const void *ret);

#endif /* AGENT_CALLSITE_H */
