/* api.c - the public ls_* functions: configuration, steps, occurrence numbering and recording. */
#include "include/lockstep.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/callsite.h"
#include "agent/config.h"
#include "agent/conswin.h"
#include "agent/mode.h"
#include "agent/mpiseen.h"
#include "agent/occ.h"
#include "agent/send.h"
#include "agent/trace.h"
#include "agent/used.h"
#include "common/dtype.h"
#include "common/lsfp1.h"
#include "common/record.h"
#include "common/site.h"
#include "common/text.h"
#include "common/tracespec.h"
#include "common/wire.h"

/* ST_FORKED: a fork()ed child's copy; it records nothing (its numbering
 * would collide with the parent's) until ls_shutdown and ls_init. */
enum agent_state { ST_UNINIT = 0, ST_ACTIVE, ST_OFF, ST_FORKED };

/* Everything below is guarded by `mu`. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct agent {
    enum agent_state state;
    int rank;
    char run_id[REC_STR_MAX + 1];
    trace_spec spec;
    int64_t step;
    uint64_t seq;
    occ_table occ;
    int tracing; /* a trace file is open */
    trace_writer trace;
    int streaming;                      /* the sender is configured */
    int cons_only;                      /* LOCKSTEP_MODE=consensus: consensus records and metrics only */
    cw_table cw;                        /* the consensus windows of the current step (agent/conswin.h) */
    site_patterns ignore;               /* LOCKSTEP_IGNORE: records whose name or call site matches are not made */
    char step_on[SITE_PATTERN_MAX + 1]; /* LOCKSTEP_STEP_ON: a record of this name, or matching this pattern */
    size_t step_on_len;
    site_patterns step_glob; /* LOCKSTEP_STEP_ON as a pattern (empty when it is not a valid one) */
    uint32_t gen;            /* bumped at each ls_init: the call sites' cached decisions are of this generation */
    int atexit_done;
    int atfork_done;
    int state_open; /* a state block is open (ls_state_begin) */
    int state_kind; /* REC_STATE_SAVED or REC_STATE_RESTORED */
    int64_t state_step;
    occ_table state_occ; /* occurrences within the open block */
} A;

static int warned_write, warned_forked, warned_autostart, warned_ckpt_path;

/* Reserved records (agent_reserve): `windows_epoch` counts the consensus table's flushes (under `mu`, never reset:
 * a ticket of an older epoch names places of a table that is gone); `n_reserved` the tickets neither filled nor
 * dropped (atomic); `drains` the wrappers' completion of what they launched (ls_on_step_change: the MPI and the NCCL
 * wrappers), called without `mu` before a step changes while tickets are open. */
#define DRAINS_MAX 4
static uint64_t windows_epoch;
static unsigned long n_reserved;
static void (*drains[DRAINS_MAX])(void); /* under mu */
static int n_drains;

/* windows_flush_locked - cw_flush, and the tickets of the old table lose their places. */
static void cons_emit_locked(void *arg, const cw_digest *d);
static void windows_flush_locked(void)
{
    cw_flush(&A.cw, cons_emit_locked, NULL);
    windows_epoch++;
}

/* step_set_locked - the step is now `step`: occurrences count from 0 again, and the old step's consensus windows close
 * when it changes (lockstepd checks them within a step). */
static void step_set_locked(int64_t step)
{
    if (A.step != step)
        windows_flush_locked();
    A.step = step;
    occ_reset(&A.occ);
}

/* drain_unlocked - with `mu` held: let the MPI wrappers complete their open requests (their tickets are filled in
 * this step), `mu` released meanwhile. Returns 1 when the agent is still active after. */
static int drain_unlocked(void)
{
    void (*fns[DRAINS_MAX])(void);
    int n = n_drains;
    if (!n || !__atomic_load_n(&n_reserved, __ATOMIC_ACQUIRE))
        return 1;
    memcpy(fns, drains, sizeof(fns));
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++)
        fns[i]();
    pthread_mutex_lock(&mu);
    return A.state == ST_ACTIVE;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void copy_env(char *dst, const char *a, const char *b)
{
    const char *v = getenv(a);
    if ((!v || !*v) && b)
        v = getenv(b);
    snprintf(dst, REC_STR_MAX + 1, "%s", v ? v : "");
}

static void shutdown_with(int exit_code);

/* cons_emit_locked - a closed consensus window (agent/conswin.h) to both sinks, as a REC_CONSENSUS_DIGEST
 * pseudo-record that neither numbers nor counts as a record: the stream (in full in either streaming mode) and the
 * trace file carry the same digests. */
static void cons_emit_locked(void *arg, const cw_digest *d)
{
    (void)arg;
    char why[300];
    rec_record r;
    unsigned char ext[REC_EXT_ENCODED_MAX];
    cw_digest_record(d, A.seq ? A.seq - 1 : 0, now_ns(), &r, ext);
    r.rank = (uint32_t)A.rank;
    if (A.streaming)
        send_push(&r, 1);
    if (A.tracing && trace_append(&A.trace, &r, why, sizeof(why)) < 0)
        agent_warn_once(&warned_write, "%s; records are being lost", why);
}
static int init_with(int eager);

/* at_exit - on_exit handler: the process's exit status becomes the rank's end. */
static void at_exit(int status, void *arg)
{
    (void)arg;
    shutdown_with(status);
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&mu);
    send_atfork_prepare();
}

static void atfork_parent(void)
{
    send_atfork_parent();
    pthread_mutex_unlock(&mu);
}

/* atfork_child - the child keeps the parent's trace buffer and queue in
 * memory; writing them would duplicate the parent's records, so drop them. */
static void atfork_child(void)
{
    send_atfork_child();
    cw_release(&A.cw); /* the parent's windows: the parent sends their digests */
    windows_epoch++;
    if (A.state == ST_ACTIVE) {
        A.state = ST_FORKED;
        if (A.tracing) {
            A.trace.len = 0;
            char why[64];
            trace_close(&A.trace, why, sizeof(why));
            A.tracing = 0;
        }
    }
    pthread_mutex_unlock(&mu);
}

/* init_locked - ls_init's work, with `mu` held. */
static int init_locked(void)
{
    char why[300];
    const char *mode = getenv("LOCKSTEP_MODE");

    if (mode && strcmp(mode, "off") == 0) {
        A.state = ST_OFF;
        return 0;
    }

    const char *rank_var;
    long rank = agent_env_rank(&rank_var);
    if (rank < 0) {
        agent_set_error("%s is not a rank number: '%s'", rank_var, getenv(rank_var));
        return -1;
    }
    if (ts_parse(getenv("LOCKSTEP_TRACE"), &A.spec, why, sizeof(why)) < 0) {
        agent_set_error("LOCKSTEP_TRACE is invalid: %s", why);
        return -1;
    }
    const char *run_id = getenv("LOCKSTEP_RUN_ID");
    if (run_id && *run_id) {
        if (strlen(run_id) > REC_STR_MAX) {
            agent_set_error("LOCKSTEP_RUN_ID is longer than %d bytes", REC_STR_MAX);
            return -1;
        }
        snprintf(A.run_id, sizeof(A.run_id), "%s", run_id);
    } else {
        agent_new_uuid(A.run_id);
    }
    if (occ_init(&A.occ) < 0) {
        agent_set_error("out of memory");
        return -1;
    }
    if (occ_init(&A.state_occ) < 0) {
        occ_release(&A.occ);
        agent_set_error("out of memory");
        return -1;
    }
    A.state_open = 0;
    if (site_patterns_parse(getenv("LOCKSTEP_IGNORE"), &A.ignore, why, sizeof(why)) < 0) {
        agent_set_error("LOCKSTEP_IGNORE is invalid: %s (patterns are globs separated by commas, e.g. "
                        "'report_timings,mpi.reduce')",
                        why);
        occ_release(&A.occ);
        occ_release(&A.state_occ);
        return -1;
    }
    A.rank = (int)rank;
    A.cons_only = mode_is_consensus(mode);
    cw_release(&A.cw);
    A.step = 0;
    A.seq = 0;
    A.gen++;
    /* LOCKSTEP_STEP_ON: a record name (exactly), or a pattern matched like LOCKSTEP_IGNORE's, e.g. the
     * function whose collectives open the steps. A value that is no valid pattern is a name only. */
    const char *step_on = getenv("LOCKSTEP_STEP_ON");
    A.step_on_len = step_on ? strnlen(step_on, SITE_PATTERN_MAX) : 0;
    memcpy(A.step_on, step_on ? step_on : "", A.step_on_len);
    A.step_on[A.step_on_len] = 0;
    A.step_glob.n = 0;
    if (A.step_on_len && site_pattern_check(A.step_on, A.step_on_len, why, sizeof(why)) == 0) {
        A.step_glob.n = 1;
        memcpy(A.step_glob.pat[0], A.step_on, A.step_on_len + 1);
    }

    rec_header h;
    memset(&h, 0, sizeof(h));
    h.kind = REC_KIND_TRACE;
    h.rank = (uint32_t)rank;
    h.created_ns = now_ns();
    snprintf(h.run_id, sizeof(h.run_id), "%s", A.run_id);
    copy_env(h.job_id, "LOCKSTEP_JOB_ID", "SLURM_JOB_ID");
    copy_env(h.step_id, "LOCKSTEP_STEP_ID", "SLURM_STEP_ID");
    copy_env(h.twin_group, "LOCKSTEP_TWIN_GROUP", NULL);
    if (gethostname(h.host, sizeof(h.host) - 1) < 0)
        h.host[0] = 0;
    snprintf(h.algo, sizeof(h.algo), "%s", FP_ALGO_NAME);

    send_cfg cfg;
    int stream = config_stream(&cfg, rank, &h, why, sizeof(why));
    if (stream < 0) {
        agent_set_error("%s", why);
        occ_release(&A.occ);
        occ_release(&A.state_occ);
        return -1;
    }

    const char *dir = getenv("LOCKSTEP_TRACE_DIR");
    if (dir && *dir) {
        if (trace_open(&A.trace, dir, &h, why, sizeof(why)) < 0) {
            agent_set_error("%s", why);
            occ_release(&A.occ);
            occ_release(&A.state_occ);
            free(cfg.reg_json);
            return -1;
        }
        A.tracing = 1;
    }
    A.streaming = 0;
    if (stream > 0) {
        if (send_start(&cfg, why, sizeof(why)) < 0) {
            agent_set_error("%s", why);
            if (A.tracing)
                trace_close(&A.trace, why, sizeof(why));
            A.tracing = 0;
            occ_release(&A.occ);
            occ_release(&A.state_occ);
            return -1;
        }
        A.streaming = 1;
    }
    if (!A.atexit_done) {
        on_exit(at_exit, NULL);
        send_set_exit(shutdown_with); /* the sender's exit handler runs first: the open windows go out before it */
        A.atexit_done = 1;
    }
    if (!A.atfork_done) {
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        A.atfork_done = 1;
    }
    A.state = ST_ACTIVE;
    return 0;
}

/* autostart - under LD_PRELOAD (the program never calls ls_init), start when
 * LOCKSTEP_SERVER or LOCKSTEP_TRACE_DIR is set; LOCKSTEP_AUTOSTART=1/0
 * forces it on or off. Trouble is one line on stderr; the program runs on. */
__attribute__((constructor)) static void autostart(void)
{
    const char *force = getenv("LOCKSTEP_AUTOSTART");
    const char *pre = getenv("LD_PRELOAD");
    const char *server = getenv("LOCKSTEP_SERVER"), *dir = getenv("LOCKSTEP_TRACE_DIR");
    int want = force && *force ? strcmp(force, "0") != 0
                               : pre && strstr(pre, "liblockstep") && ((server && *server) || (dir && *dir));
    if (want && init_with(0) < 0)
        agent_warn_once(&warned_autostart, "cannot start: %s; the program runs without fingerprinting",
                        agent_last_error());
}

/* init_with - ls_init; `eager` starts streaming at once (an explicit call by
 * the program) instead of at the first record (the LD_PRELOAD self-start,
 * which also runs in shells and launchers that record nothing). */
static int init_with(int eager)
{
    pthread_mutex_lock(&mu);
    int rc = A.state != ST_UNINIT ? 0 : init_locked();
    int begin = rc == 0 && eager && A.state == ST_ACTIVE && A.streaming;
    pthread_mutex_unlock(&mu);
    if (begin)
        send_begin();
    return rc;
}

int ls_init(void)
{
    return init_with(1);
}

/* shutdown_with - ls_shutdown, reporting `exit_code` as the rank's end. The
 * sender's bounded flush runs without `mu`, so other threads never wait on
 * it. */
static void shutdown_with(int exit_code)
{
    char why[300];
    pthread_mutex_lock(&mu);
    int streaming = A.streaming;
    if (A.state == ST_ACTIVE)
        windows_flush_locked(); /* the open windows' digests, before the sinks close */
    cw_release(&A.cw);
    if (A.state == ST_ACTIVE || A.state == ST_FORKED) {
        if (A.tracing && trace_close(&A.trace, why, sizeof(why)) < 0)
            agent_warn_once(&warned_write, "%s; the trace is incomplete", why);
        A.tracing = 0;
        occ_release(&A.occ);
        occ_release(&A.state_occ);
    }
    A.state_open = 0;
    A.streaming = 0;
    A.state = ST_UNINIT;
    pthread_mutex_unlock(&mu);
    if (streaming)
        send_stop(exit_code);
}

void ls_shutdown(void)
{
    shutdown_with(0);
}

void ls_shutdown_with(int exit_code)
{
    shutdown_with(exit_code);
}

void ls_shutdown_abort(int exit_code)
{
    send_mark_abort();
    shutdown_with(exit_code);
}

/* not_active - the error for calls outside ls_init..ls_shutdown. */
static int not_active(const char *fn)
{
    agent_set_error("%s called before ls_init or after ls_shutdown", fn);
    return -1;
}

void ls_step_begin(int64_t step)
{
    pthread_mutex_lock(&mu);
    if (A.state == ST_ACTIVE && A.step != step)
        drain_unlocked(); /* nonblocking collectives still open complete in the step that started them */
    int active = A.state == ST_ACTIVE;
    if (active) {
        step_set_locked(step);
    } else if (A.state == ST_UNINIT) {
        not_active("ls_step_begin");
    }
    pthread_mutex_unlock(&mu);
    if (active)
        used_probe_threads(NULL); /* on the program's thread: a thread count changed since the last step */
}

int ls_manifest_set(const char *key, const char *value)
{
    if (!used_key_valid(key)) {
        agent_set_error("manifest key '%.80s' is not 1 to %d letters, digits, '_', '-' or '.'", key ? key : "(null)",
                        USED_KEY_MAX);
        return -1;
    }
    if (!value || !text_line_valid(value, strlen(value)) || strlen(value) > USED_VALUE_MAX) {
        agent_set_error("manifest value of %s must be at most %d bytes of UTF-8 on one line", key, USED_VALUE_MAX);
        return -1;
    }
    if (send_note(key, value) < 0) {
        agent_set_error("manifest key %s: more than %d keys reported", key, USED_FACTS_MAX);
        return -1;
    }
    return 0;
}

void ls_step_end(void)
{
    char why[300];
    pthread_mutex_lock(&mu);
    if (A.state == ST_ACTIVE) {
        /* A step is the natural unit to lose on a crash: write it out. */
        if (A.tracing && trace_flush(&A.trace, why, sizeof(why)) < 0)
            agent_warn_once(&warned_write, "%s; records are being lost", why);
    } else if (A.state == ST_UNINIT) {
        not_active("ls_step_end");
    }
    pthread_mutex_unlock(&mu);
}

int agent_check_name(const char *name, size_t *len)
{
    if (!name) {
        agent_set_error("record name is NULL");
        return -1;
    }
    size_t n = strnlen(name, LS_NAME_MAX + 1);
    if (n == 0 || n > LS_NAME_MAX) {
        agent_set_error("record name must be 1 to %d bytes long", LS_NAME_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
            agent_set_error("record name contains a control character at byte %zu", i);
            return -1;
        }
    }
    *len = n;
    return 0;
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h ^ n;
}

/* decide_locked - whether LOCKSTEP_IGNORE drops a record `name` (`len` bytes) with call site `site` (NULL:
 * none), and whether LOCKSTEP_STEP_ON makes it open a step. With a call site entry `e`, the decisions are
 * kept in it for the next record of the same name and configuration, so that the patterns are matched
 * once per site, not once per call. */
static void decide_locked(const char *name, size_t len, const rec_site *site, cs_entry *e, int *ignored, int *steps)
{
    *ignored = *steps = 0;
    if (!A.ignore.n && !A.step_on_len)
        return;
    uint64_t h = e ? name_hash(name, len) : 0;
    if (e && e->gen == A.gen && e->name_hash == h) {
        *ignored = e->ignored;
        *steps = e->steps;
        return;
    }
    *ignored = site_patterns_match(&A.ignore, name, len, site);
    *steps = A.step_on_len && ((len == A.step_on_len && memcmp(name, A.step_on, len) == 0) ||
                               site_patterns_match(&A.step_glob, name, len, site));
    if (e) {
        e->gen = A.gen;
        e->name_hash = h; /* a hash, not a pointer: names may live in reused buffers */
        e->ignored = (uint8_t)*ignored;
        e->steps = (uint8_t)*steps;
    }
}

/* sink_locked - a numbered record to the sender and the trace file. 0, or -1 with the error set. */
static int sink_locked(const rec_record *r)
{
    char why[300];
    if (A.streaming) /* never waits on the network; a trace window's records go in full when streaming digests */
        send_push(r, ts_in_window(&A.spec, r->level, r->step, A.rank));
    if (A.tracing && trace_append(&A.trace, r, why, sizeof(why)) < 0) {
        agent_warn_once(&warned_write, "%s; records are being lost", why);
        agent_set_error("%s", why);
        return -1;
    }
    return 0;
}

/* emit_locked - number the record (seq, occurrence) and hand it to the
 * sinks. Returns 0, or -1 with the error set. */
static int emit_locked(rec_record *r, const agent_cons *cons)
{
    int state = rec_is_state(r);
    int64_t occ = occ_next(state ? &A.state_occ : &A.occ, r->name, r->name_len);
    if (occ < 0) {
        agent_set_error("out of memory counting occurrences");
        return -1;
    }
    r->occurrence = (uint32_t)occ;
    r->seq = A.seq++;
    r->step = state ? A.state_step : A.step;
    r->rank = (uint32_t)A.rank;
    uint32_t place;
    int placed = cons && !state &&
                 cw_place(&A.cw, r->step, cons->key, cons->size, cons->ranks, cons->n_ranks, &place, cons_emit_locked,
                          NULL) == 0;
    if (placed) { /* the record carries its place (extension field 6) */
        cons->x->has_consensus = 1;
        cons->x->consensus_key = cons->key;
        cons->x->consensus_index = place;
        r->ext_len = (uint16_t)rec_ext_encode(cons->x, cons->ext);
        r->ext = cons->ext;
    }
    int rc = sink_locked(r);
    if (placed) /* after the record: its window's digest, when this place closes it, follows it */
        cw_fold(&A.cw, cons->key, place, r, cons_emit_locked, NULL);
    return rc;
}

/* admit_locked - 1 when the state is active and the trace window keeps a
 * record of `level`; 0 when it is filtered out or lockstep is off; -1 (with
 * the error set) outside ls_init..ls_shutdown. */
static int admit_locked(int level, const char *fn)
{
    if (A.state == ST_UNINIT)
        return not_active(fn);
    if (A.state == ST_OFF)
        return 0;
    if (A.state == ST_FORKED) {
        agent_warn_once(&warned_forked,
                        "a fork()ed child (pid %ld) does not record: its records would collide "
                        "with its parent's",
                        (long)getpid());
        return 0;
    }
    return ts_admits(&A.spec, level, A.step, A.rank);
}

/* admit_state_locked - admit_locked for an entry of the state block: -1 when
 * none is open; kept whenever this rank records metrics at some step. */
static int admit_state_locked(const char *fn)
{
    int rc = admit_locked(LS_LEVEL_METRIC, fn);
    if (rc < 0 || A.state != ST_ACTIVE)
        return rc;
    if (!A.state_open) {
        agent_set_error("%s: no state block is open; call ls_state_begin(step, kind) first", fn);
        return -1;
    }
    return ts_admits_any_step(&A.spec, LS_LEVEL_METRIC, A.rank);
}

/* record_locked - admit `r` (trace window; `state`: an entry of the open state block), apply LOCKSTEP_IGNORE
 * and LOCKSTEP_STEP_ON (decisions kept in call site entry `e` when there is one; state entries never open a
 * step) and emit it. Returns 1 recorded, 0 left out, -1 error. */
/* admit_call_locked - whether a record `name` (`len` bytes) of `level` with call site `site` is made now (`state`: an
 * entry of the open state block; `cons`: it has a consensus place to take): the trace window, the consensus mode,
 * LOCKSTEP_IGNORE, and LOCKSTEP_STEP_ON, whose step opens here, after the wrappers' drains (`mu` is released
 * meanwhile), unless it is a state entry. Returns 1 made, 0 left out, -1 error. The front of record_locked and
 * agent_reserve. */
static int admit_call_locked(int level, const char *name, size_t len, const rec_site *site, cs_entry *e, int state,
                             int cons, const char *fn)
{
    int rc = state ? admit_state_locked(fn) : admit_locked(level, fn);
    if (rc <= 0)
        return rc;
    if (A.cons_only && !cons && (state || level != LS_LEVEL_METRIC))
        return 0; /* the consensus mode records what consensus needs, and metrics */
    int ignored, steps;
    decide_locked(name, len, site, e, &ignored, &steps);
    if (ignored)
        return 0;
    if (steps && !state) { /* LOCKSTEP_STEP_ON: this record opens the next step */
        if (!drain_unlocked())
            return 0;
        step_set_locked(A.step + 1);
    }
    return 1;
}

static int record_locked(rec_record *r, int state, const char *fn, cs_entry *e, const agent_cons *cons)
{
    int rc = admit_call_locked(r->level, r->name, r->name_len, rec_has_site(r) ? &r->site : NULL, e, state,
                               cons != NULL, fn);
    if (rc <= 0)
        return rc;
    if (state) {
        r->flags = (uint8_t)((r->flags & ~REC_STATE_MASK) | A.state_kind);
        r->level = LS_LEVEL_METRIC;
    }
    return emit_locked(r, cons) < 0 ? -1 : 1;
}

int agent_admits(int level, int state, const char *name, size_t len, const char *fn)
{
    pthread_mutex_lock(&mu);
    int rc = state ? admit_state_locked(fn) : admit_locked(level, fn);
    if (rc > 0) {
        int ignored, steps;
        decide_locked(name, len, NULL, NULL, &ignored, &steps);
        rc = !ignored;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int agent_record(rec_record *r, int state, const char *fn)
{
    pthread_mutex_lock(&mu);
    int rc = record_locked(r, state, fn, NULL, NULL);
    pthread_mutex_unlock(&mu);
    return rc < 0 ? -1 : 0;
}

int ls_state_begin(int64_t step, int kind)
{
    if (kind != LS_STATE_SAVED && kind != LS_STATE_RESTORED) {
        agent_set_error("ls_state_begin: kind %d is neither LS_STATE_SAVED (1) nor LS_STATE_RESTORED (2)", kind);
        return -1;
    }
    pthread_mutex_lock(&mu);
    int rc = 0;
    if (A.state == ST_UNINIT) {
        rc = not_active("ls_state_begin");
    } else if (A.state == ST_ACTIVE) {
        if (A.state_open) {
            agent_set_error("ls_state_begin: the state block of step %lld is still open; close it with ls_state_end",
                            (long long)A.state_step);
            rc = -1;
        } else {
            A.state_open = 1;
            A.state_kind = kind == LS_STATE_SAVED ? REC_STATE_SAVED : REC_STATE_RESTORED;
            A.state_step = step;
            occ_reset(&A.state_occ);
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int ls_state_end(void)
{
    char why[300];
    pthread_mutex_lock(&mu);
    int rc = 0;
    if (A.state == ST_UNINIT) {
        rc = not_active("ls_state_end");
    } else if (A.state == ST_ACTIVE) {
        if (!A.state_open) {
            agent_set_error("ls_state_end: no state block is open");
            rc = -1;
        } else {
            A.state_open = 0;
            /* a checkpoint is a moment worth keeping: write the block out */
            if (A.tracing && trace_flush(&A.trace, why, sizeof(why)) < 0)
                agent_warn_once(&warned_write, "%s; records are being lost", why);
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int ls_metric(const char *name, double value)
{
    size_t len;
    if (agent_check_name(name, &len) < 0)
        return -1;

    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = name;
    r.name_len = (uint16_t)len;
    r.level = LS_LEVEL_METRIC;
    r.dtype = LS_F64;
    r.nbytes = sizeof(double);
    memcpy(&r.value, &value, sizeof(double));
    r.flags = REC_HAS_VALUE;
    r.fp = fp_lsfp1(&r.value, sizeof(double));
    r.t_ns = now_ns();

    pthread_mutex_lock(&mu);
    int rc = record_locked(&r, 0, "ls_metric", NULL, NULL);
    pthread_mutex_unlock(&mu);
    return rc < 0 ? -1 : 0;
}

int ls_enabled(ls_level level)
{
    pthread_mutex_lock(&mu);
    int rc =
        A.state == ST_ACTIVE && (!A.cons_only || level == LS_LEVEL_METRIC) && ts_admits(&A.spec, level, A.step, A.rank);
    pthread_mutex_unlock(&mu);
    return rc;
}

int agent_record_cons(rec_record *r, const agent_cons *cons, cs_entry *e, const char *fn)
{
    pthread_mutex_lock(&mu);
    int rc = record_locked(r, 0, fn, e, cons);
    pthread_mutex_unlock(&mu);
    return rc < 0 ? -1 : 0;
}

int agent_reserve(const char *name, size_t len, int level, const rec_site *site, cs_entry *e, const agent_cons *cons,
                  agent_ticket *t, const char *fn)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&mu);
    int rc = admit_call_locked(level, name, len, site, e, 0, cons != NULL, fn); /* a step it opens opens now */
    int64_t occ = rc > 0 ? occ_next(&A.occ, name, len) : 0;
    if (occ < 0) {
        agent_set_error("out of memory counting occurrences");
        rc = -1;
    }
    if (rc > 0) {
        *t = (agent_ticket){
            .epoch = windows_epoch, .step = A.step, .occurrence = (uint32_t)occ, .level = (uint8_t)level, .live = 1};
        if (cons && cw_reserve(&A.cw, A.step, cons->key, cons->size, cons->ranks, cons->n_ranks, &t->index,
                               cons_emit_locked, NULL) == 0) {
            t->placed = 1;
            t->key = cons->key;
        }
        __atomic_add_fetch(&n_reserved, 1, __ATOMIC_ACQ_REL);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int agent_fill(agent_ticket *t, rec_record *r, const agent_cons *cons)
{
    if (!t->live)
        return 0;
    t->live = 0;
    pthread_mutex_lock(&mu);
    __atomic_sub_fetch(&n_reserved, 1, __ATOMIC_ACQ_REL);
    int rc = 0;
    if (A.state == ST_ACTIVE && t->epoch == windows_epoch) {
        r->occurrence = t->occurrence;
        r->seq = A.seq++;
        r->step = t->step;
        r->level = t->level;
        r->rank = (uint32_t)A.rank;
        if (t->placed) {
            cons->x->has_consensus = 1;
            cons->x->consensus_key = t->key;
            cons->x->consensus_index = t->index;
            r->ext_len = (uint16_t)rec_ext_encode(cons->x, cons->ext);
            r->ext = cons->ext;
        }
        rc = sink_locked(r);
        if (t->placed)
            cw_fill(&A.cw, t->key, t->index, r, cons_emit_locked, NULL);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

void agent_drop(agent_ticket *t)
{
    if (!t->live)
        return;
    t->live = 0;
    pthread_mutex_lock(&mu);
    __atomic_sub_fetch(&n_reserved, 1, __ATOMIC_ACQ_REL);
    if (A.state == ST_ACTIVE && t->epoch == windows_epoch && t->placed)
        cw_void(&A.cw, t->key, t->index);
    pthread_mutex_unlock(&mu);
}

void ls_on_step_change(void (*fn)(void))
{
    pthread_mutex_lock(&mu);
    int known = 0;
    for (int i = 0; fn && i < n_drains; i++)
        known |= drains[i] == fn;
    if (!fn)
        n_drains = 0;
    else if (!known && n_drains < DRAINS_MAX)
        drains[n_drains++] = fn;
    pthread_mutex_unlock(&mu);
}

int ls_enabled_at(ls_level level, const char *name, const void *return_address)
{
    mpiseen_note(name);
    pthread_mutex_lock(&mu);
    int rc = A.state == ST_ACTIVE && ts_admits(&A.spec, level, A.step, A.rank);
    int rules = A.ignore.n || A.step_on_len;
    pthread_mutex_unlock(&mu);
    if (!rc || !name)
        return rc;
    /* Resolve the call site now, in the thread that issued the call (its stack names the callers). */
    cs_entry *e = callsite_get(return_address);
    if (!rules)
        return 1;
    size_t len = strnlen(name, LS_NAME_MAX + 1);
    if (len == 0 || len > LS_NAME_MAX)
        return 0;
    pthread_mutex_lock(&mu);
    int ignored = 0, steps;
    if (A.state == ST_ACTIVE)
        decide_locked(name, len, e ? &e->site : NULL, e, &ignored, &steps);
    pthread_mutex_unlock(&mu);
    return !ignored;
}

const char *ls_last_error(void)
{
    return agent_last_error();
}

uint64_t ls_fingerprint(const void *data, size_t nbytes)
{
    return fp_lsfp1(data, nbytes);
}

const char *ls_run_id(void)
{
    pthread_mutex_lock(&mu);
    const char *id = A.state == ST_ACTIVE ? A.run_id : NULL;
    pthread_mutex_unlock(&mu);
    return id;
}

int ls_rank(void)
{
    pthread_mutex_lock(&mu);
    int r = A.state == ST_ACTIVE ? A.rank : -1;
    pthread_mutex_unlock(&mu);
    return r;
}

int ls_flush(int timeout_ms)
{
    pthread_mutex_lock(&mu);
    int active = A.state == ST_ACTIVE && drain_unlocked(); /* open requests complete first: their records go too */
    if (active)
        windows_flush_locked();
    int streaming = A.streaming;
    pthread_mutex_unlock(&mu);
    if (!active)
        return not_active("ls_flush");
    return streaming ? send_sync(timeout_ms) : 0;
}

int ls_checkpoint(int64_t step, const char *path)
{
    char why[300];
    if (step < 0) {
        agent_set_error("ls_checkpoint: step %lld is negative", (long long)step);
        return -1;
    }
    /* lockstepd would refuse it (and a replay could not use it): say so here, not in a refusal no one reads */
    if (path && wire_ckpt_path_check(path, why, sizeof(why)) < 0) {
        agent_set_error("ls_checkpoint: %s", why);
        agent_warn_once(&warned_ckpt_path,
                        "%s; checkpoints with such a path are not declared, and a replay cannot "
                        "resume from them (name them by a path without one)",
                        why);
        return -1;
    }
    pthread_mutex_lock(&mu);
    int active = A.state == ST_ACTIVE, streaming = A.streaming;
    pthread_mutex_unlock(&mu);
    if (!active)
        return not_active("ls_checkpoint");
    if (!streaming)
        return 0;
    if (send_checkpoint(step, path, why, sizeof(why)) < 0) {
        agent_set_error("%s", why);
        return -1;
    }
    return 0;
}
