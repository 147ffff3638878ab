/* limits.h - the documented bounds lockstepd enforces (docs/server.md, "Limits"): one definition each. */
#ifndef SERVER_CORE_LIMITS_H
#define SERVER_CORE_LIMITS_H

/* The most runs one twin group holds; every read and the comparison handle them all. */
#define GROUP_MAX_RUNS 64

#endif /* SERVER_CORE_LIMITS_H */
