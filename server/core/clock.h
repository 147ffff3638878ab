/* clock.h - the clocks lockstepd reads: monotonic seconds for durations, wall seconds for timestamps, deadlines. */
#ifndef SERVER_CORE_CLOCK_H
#define SERVER_CORE_CLOCK_H

#include <time.h>

/* clock_mono_s - CLOCK_MONOTONIC in seconds (durations, request timing). */
double clock_mono_s(void);

/* clock_wall_s - CLOCK_REALTIME in seconds since the epoch (commit times stored in PostgreSQL). */
double clock_wall_s(void);

/* clock_deadline - the CLOCK_REALTIME instant `seconds` from now, for pthread_cond_timedwait. */
struct timespec clock_deadline(double seconds);

#endif /* SERVER_CORE_CLOCK_H */
