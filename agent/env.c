/* env.c - the agent's view of its environment: rank, run id, errors and warnings. */
#include "agent/agent.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static __thread char err_buf[512];

void agent_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
    va_end(ap);
}

const char *agent_last_error(void)
{
    return err_buf;
}

void agent_warn_once(int *key, const char *fmt, ...)
{
    if (__atomic_exchange_n(key, 1, __ATOMIC_RELAXED))
        return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    /* One write so lines of several ranks do not interleave. */
    ssize_t w1 = write(STDERR_FILENO, "lockstep: ", 10);
    ssize_t w2 = write(STDERR_FILENO, line, (size_t)n);
    (void)w1;
    (void)w2;
}

long agent_env_rank(const char **which)
{
    /* The innermost launcher's variable first: a launcher started inside a Slurm step
     * (mpirun in a batch script, torchrun under srun) hands its processes its own rank,
     * while they all inherit the step's SLURM_PROCID. torchrun's RANK counts only beside
     * LOCAL_RANK, so that an unrelated RANK variable is not taken for one. */
    static const char *const vars[] = {"LOCKSTEP_RANK", "RANK",     "OMPI_COMM_WORLD_RANK",
                                       "PMIX_RANK",     "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v)
            continue;
        if (!strcmp(vars[i], "RANK") && !getenv("LOCAL_RANK"))
            continue;
        *which = vars[i];
        char *end;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (errno || *end || r < 0 || r > INT32_MAX)
            return -1;
        return r;
    }
    *which = NULL;
    return 0;
}

long agent_env_ranks(void)
{
    /* torchrun's WORLD_SIZE (beside LOCAL_RANK) before Slurm's, as agent_env_rank reads RANK: lockstepd compares
     * runs of different rank counts on their logical tensors, so the count must be the launch's own */
    const char *v = getenv("LOCKSTEP_RANKS");
    if ((!v || !*v) && getenv("LOCAL_RANK"))
        v = getenv("WORLD_SIZE");
    if (!v || !*v)
        v = getenv("SLURM_NTASKS");
    if (!v || !*v)
        v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v || !*v)
        v = getenv("PMI_SIZE");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n > 0 && n <= INT32_MAX ? n : 1;
}

void agent_new_uuid(char out[37])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) { /* no entropy source: fall back to time and pid */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
            for (size_t i = got; i < sizeof(b); i++, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
                b[i] = (unsigned char)(x >> 56);
            break;
        }
        got += (size_t)r;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
