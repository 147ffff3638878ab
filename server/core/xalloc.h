/* xalloc.h - lockstepd's out-of-memory policy: allocation never fails; when memory is gone the daemon aborts.
 *
 * lockstepd holds nothing that is not committed to PostgreSQL (a batch is acknowledged only after its
 * COMMIT), so dying is safe and clearer than a half-handled NULL. Every allocation of the server goes
 * through these, and Jansson's too (xalloc_init). The agent and the SPANK plugin, which run inside users'
 * jobs, follow the opposite rule: check and degrade.
 */
#ifndef SERVER_CORE_XALLOC_H
#define SERVER_CORE_XALLOC_H

#include <stddef.h>

/* xalloc_init - make Jansson allocate with xmalloc. Call once, first thing in main. */
void xalloc_init(void);

/* xmalloc, xcalloc, xrealloc, xstrdup - as their libc namesakes, but they
 * never return NULL: out of memory, they log one line and abort(). Free
 * with free(). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

#endif /* SERVER_CORE_XALLOC_H */
