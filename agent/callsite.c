/* callsite.c - return addresses resolved once to module, offset, demangled function and nearest named caller
 * (agent/callsite.h). */
#include "agent/callsite.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/elfsym.h"

#define BUCKETS 4096
#define FRAMES 64

static cs_entry *buckets[BUCKETS]; /* chains: read without a lock (acquire), grown under `mu` */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned count;
static int warned_full;

static size_t bucket_of(const void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    return (size_t)((a ^ (a >> 12) ^ (a >> 24)) * 0x9e3779b1u >> 8) % BUCKETS;
}

static cs_entry *find(size_t b, const void *ret)
{
    for (cs_entry *e = __atomic_load_n(&buckets[b], __ATOMIC_ACQUIRE); e; e = e->next)
        if (e->ret == ret)
            return e;
    return NULL;
}

/* fortran_name - a gfortran symbol as its source names it, into `out`: a module procedure
 * (__MODULE_MOD_PROC) as MODULE::PROC, an external procedure (PROC_) as PROC. Returns 1 when `raw` is one. */
static int fortran_name(const char *raw, char *out, size_t cap)
{
    const char *mod = strstr(raw, "_MOD_");
    size_t n = strlen(raw);
    if (raw[0] == '_' && raw[1] == '_' && mod && mod > raw + 2 && mod[5]) {
        snprintf(out, cap, "%.*s::%s", (int)(mod - raw - 2), raw + 2, mod + 5);
        return 1;
    }
    if (n > 1 && raw[n - 1] == '_' && raw[n - 2] != '_' && raw[0] != '_') {
        snprintf(out, cap, "%.*s", (int)(n - 1), raw);
        return 1;
    }
    return 0;
}

/* demangle - `raw` as people read it, into `out`: C++ names through __cxa_demangle when the process has
 * libstdc++ loaded (a C++ program always does), gfortran's when `fortran` says the module is gfortran's
 * (fortran_name), others as they are. */
static void demangle(const char *raw, int fortran, char *out, size_t cap)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    if (raw[0] == '_' && raw[1] == 'Z') {
        demangle_fn d = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        int st = -1;
        char *s = d ? d(raw, NULL, NULL, &st) : NULL;
        if (s && st == 0) {
            snprintf(out, cap, "%s", s);
            free(s);
            return;
        }
        free(s);
    }
    if (fortran && fortran_name(raw, out, cap))
        return;
    snprintf(out, cap, "%s", raw);
}

/* name_at - the function holding return address `addr` (looked up at addr - 1, inside the call
 * instruction, since a call may be a function's last instruction): the module's file name and path, the
 * address's offset in the module, and the demangled function with the offset into it. Returns 1 when a
 * symbol names the function, 0 when only the module is known, -1 when not even that. */
static int name_at(const void *addr, char *module, size_t mcap, uint64_t *offset, char *fn, size_t fcap,
                   uint64_t *fn_off)
{
    Dl_info info;
    struct link_map *lm = NULL;
    char path[PATH_MAX];
    if (!dladdr1((const char *)addr - 1, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return -1;
    if (lm->l_name && lm->l_name[0]) {
        snprintf(path, sizeof(path), "%s", lm->l_name);
    } else { /* the main program */
        ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
        if (n <= 0)
            return -1;
        path[n] = 0;
    }
    const char *base = strrchr(path, '/');
    snprintf(module, mcap, "%s", base ? base + 1 : path);
    *offset = (uint64_t)((uintptr_t)addr - lm->l_addr);
    char raw[REC_SITE_NAME_MAX * 2];
    uint64_t start = 0;
    if (elfsym_lookup(path, *offset - 1, raw, sizeof(raw), &start) != 1)
        return 0;
    demangle(raw, elfsym_fortran(path) == 1, fn, fcap);
    *fn_off = *offset - start;
    return 1;
}

/* caller_of - the nearest function up the calling thread's stack, above the frame that returns to `ret`,
 * that a symbol names, into `out`. The walk ends at the C library (its start-up code names only
 * __libc_start_main, which tells a user nothing). Returns 1 when found. */
static int caller_of(const void *ret, char *out, size_t cap)
{
    void *frames[FRAMES];
    int n = backtrace(frames, FRAMES), i = 0;
    while (i < n && frames[i] != ret)
        i++;
    for (int j = i + 1; j < n; j++) {
        char module[REC_SITE_MODULE_MAX + 1] = "";
        uint64_t off, fn_off;
        int named = name_at(frames[j], module, sizeof(module), &off, out, cap, &fn_off);
        if (!strncmp(module, "libc.so", 7) || !strncmp(module, "ld-linux", 8))
            break;
        if (named == 1)
            return 1;
    }
    out[0] = 0; /* name_at may have written a name it then did not keep */
    return 0;
}

static uint16_t clip(const char *s, size_t max)
{
    size_t n = strlen(s);
    return (uint16_t)(n < max ? n : max);
}

/* resolve - a new entry for `ret` (caller holds `mu`), or NULL when out of memory. */
static cs_entry *resolve(const void *ret)
{
    char module[REC_SITE_MODULE_MAX + 1] = "", fn[REC_SITE_NAME_MAX + 1] = "", caller[REC_SITE_NAME_MAX + 1] = "";
    uint64_t offset = 0, fn_off = 0;
    int named = name_at(ret, module, sizeof(module), &offset, fn, sizeof(fn), &fn_off);
    if (named != 1) {
        fn[0] = 0;
        fn_off = 0;
        caller_of(ret, caller, sizeof(caller));
    }
    uint16_t ml = clip(module, REC_SITE_MODULE_MAX), fl = clip(fn, REC_SITE_NAME_MAX),
             cl = clip(caller, REC_SITE_NAME_MAX);
    cs_entry *e = calloc(1, sizeof(*e) + (size_t)ml + fl + cl + 3);
    if (!e)
        return NULL;
    char *s = (char *)(e + 1);
    e->ret = ret;
    e->site.offset = named >= 0 ? offset : 0;
    e->site.function_offset = fn_off;
    e->site.module = memcpy(s, module, ml);
    e->site.module_len = ml;
    e->site.function = memcpy(s + ml + 1, fn, fl);
    e->site.function_len = fl;
    e->site.caller = memcpy(s + ml + fl + 2, caller, cl);
    e->site.caller_len = cl;
    return e;
}

cs_entry *callsite_get(const void *ret)
{
    if (!ret)
        return NULL;
    size_t b = bucket_of(ret);
    cs_entry *e = find(b, ret);
    if (e)
        return e;
    pthread_mutex_lock(&mu);
    e = find(b, ret);
    if (!e && count < CALLSITE_MAX && (e = resolve(ret))) {
        e->next = buckets[b];
        __atomic_store_n(&buckets[b], e, __ATOMIC_RELEASE);
        __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
    } else if (!e && count >= CALLSITE_MAX) {
        agent_warn_once(&warned_full, "more than %d distinct call sites: records from new ones carry no site",
                        CALLSITE_MAX);
    }
    pthread_mutex_unlock(&mu);
    return e;
}
