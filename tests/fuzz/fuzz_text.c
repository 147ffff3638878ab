/* fuzz_text.c - libFuzzer target for the text the project parses from users and their environment: byte 0
 * picks LOCKSTEP_TRACE (ts_parse), --inject-fault (train_fault_parse_flag), LOCKSTEP_FAULT
 * (train_fault_parse_env), a lockstepd config line (cfg_set, "key = value"), an HTTP request target
 * (http_target_check), a Slurm node list (hostlist_nth) or text to sanitize (text_sanitize). Every parser
 * must accept or refuse with a reason, never crash, and what it accepts must behave: a window admits within
 * its bounds, a node name is one of the list's, sanitized text is one clean line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/text.h"
#include "common/tracespec.h"
#include "kernels/train_opts.h"
#include "server/core/config.h"
#include "server/http/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_trace(const char *s)
{
    trace_spec ts;
    char why[256] = "";
    if (ts_parse(s, &ts, why, sizeof(why)) < 0) {
        if (!why[0])
            __builtin_trap();
        return;
    }
    /* ts_admits is total: any level, step and rank, extremes included */
    static const int64_t probes[] = {INT64_MIN, -1, 0, 1, 120, 125, 1000000, INT64_MAX};
    for (int level = -1; level <= 4; level++)
        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
            (void)ts_admits(&ts, level, probes[i], probes[(i + 3) % 8]);
}

static void check_fault(const char *s, int env)
{
    train_fault f;
    char why[256] = "";
    int rc = env ? train_fault_parse_env(s, &f, why, sizeof(why)) : train_fault_parse_flag(s, &f, why, sizeof(why));
    if (rc < 0) {
        if (!why[0])
            __builtin_trap();
        return;
    }
    (void)train_fault_applies(&f, 0, 0, "n1");
    (void)train_fault_applies(&f, INT64_MAX, 1 << 30, "");
}

static void check_config(char *s)
{
    srv_config c;
    cfg_defaults(&c);
    char *eq = strchr(s, '=');
    const char *key = s, *value = "";
    if (eq) {
        *eq = 0;
        value = eq + 1;
    }
    char why[512] = "";
    if (cfg_set(&c, key, value, why, sizeof(why)) < 0 && !why[0])
        __builtin_trap();
}

static void check_target(const char *s)
{
    char why[160] = "";
    if (http_target_check(s, 2048, why, sizeof(why)) < 0 && !why[0])
        __builtin_trap();
}

static void check_hostlist(const char *s)
{
    long n = hostlist_count(s);
    char name[64], names[64][HOSTLIST_NAME_MAX];
    int all = n > 0 && n <= 64 ? hostlist_expand(s, names, 64) : -1;
    for (long i = 0; i < (n < 64 ? n : 64); i++) {
        if (hostlist_nth(s, (size_t)i, name, sizeof(name)) == 0 && !name[0])
            __builtin_trap(); /* an empty name is never one */
        if (all == n && strcmp(name, names[i]))
            __builtin_trap(); /* without duplicates, the plugin's node i is the expanded list's */
    }
    (void)hostlist_nth(s, (size_t)-1, name, sizeof(name));
}

static void check_sanitize(const char *s)
{
    char out[128];
    text_sanitize(s, out, sizeof(out));
    if (!text_line_valid(out, strlen(out)))
        __builtin_trap(); /* what goes into a log line is one clean line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1); /* the parsers take C strings: the text ends at the first NUL */
    s[size - 1] = 0;
    switch (data[0] % 7) {
    case 0: check_trace(s); break;
    case 1: check_fault(s, 0); break;
    case 2: check_fault(s, 1); break;
    case 3: check_config(s); break;
    case 4: check_target(s); break;
    case 5: check_hostlist(s); break;
    default: check_sanitize(s); break;
    }
    free(s);
    return 0;
}
