/* tracespec.h - LOCKSTEP_TRACE: which levels are recorded on which steps and ranks.
 *
 * Syntax: clauses separated by ';', each `LEVEL[:steps=A-B][:ranks=LIST]`.
 *   LEVEL  metrics | collectives | modules | ops | off (singular accepted)
 *   steps  A-B, A (one step), A- (from A on), -B (up to B); inclusive
 *   ranks  comma-separated numbers and ranges: 0,4-7
 * A record is kept when any clause admits it: its level is at or below the
 * clause's level and its step and rank are in the clause's window. Example:
 *   metrics;ops:steps=120-125:ranks=0,4-7
 * keeps metrics everywhere and every op on ranks 0 and 4-7 during 120-125.
 */
#ifndef COMMON_TRACESPEC_H
#define COMMON_TRACESPEC_H

#include <stddef.h>
#include <stdint.h>

#define TS_MAX_CLAUSES 8
#define TS_MAX_RANGES 16
#define TS_DEFAULT "collectives"

typedef struct ts_range {
    int64_t lo, hi;
} ts_range;

typedef struct ts_clause {
    int level; /* -1: off */
    int64_t step_lo, step_hi;
    int n_ranks; /* 0: every rank */
    ts_range ranks[TS_MAX_RANGES];
} ts_clause;

typedef struct trace_spec {
    int n;
    ts_clause c[TS_MAX_CLAUSES];
} trace_spec;

/* ts_parse - parse `s` (NULL or "" means TS_DEFAULT) into `out`. Returns 0,
 * or -1 with a reason in `why`. */
int ts_parse(const char *s, trace_spec *out, char *why, size_t cap);

/* ts_admits - 1 when a record of `level` at `step` on `rank` is kept. */
int ts_admits(const trace_spec *ts, int level, int64_t step, int64_t rank);

/* ts_admits_any_step - 1 when some clause keeps records of `level` on `rank`
 * at some step (state blocks are kept so, whatever the step window). */
int ts_admits_any_step(const trace_spec *ts, int level, int64_t rank);
/* ts_in_window - 1 when a clause with a step window (steps=...) admits the
 * record: an operator asked for these steps in detail, so an agent that
 * streams digests sends such records in full (docs/agent.md). */
int ts_in_window(const trace_spec *ts, int level, int64_t step, int64_t rank);

#endif /* COMMON_TRACESPEC_H */
