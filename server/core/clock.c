/* clock.c - the clocks lockstepd reads (server/core/clock.h). */
#include "server/core/clock.h"

static double read_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double clock_mono_s(void)
{
    return read_s(CLOCK_MONOTONIC);
}

double clock_wall_s(void)
{
    return read_s(CLOCK_REALTIME);
}

struct timespec clock_deadline(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (seconds < 0)
        seconds = 0;
    long long ns = (long long)ts.tv_nsec + (long long)((seconds - (double)(long long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}
