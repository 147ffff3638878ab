/* recmatch.h - when two records are the same, and the step digest built from that rule: one fact for every program.
 *
 * `lockstep diff` (files), lockstepd's comparison and lockstepd's per-step digests all decide "same
 * record" here. Records are matched on their key (rank, step, name, occurrence) elsewhere; this module
 * judges what a matched pair holds: dtype, shape, byte count, LSFP-1 fingerprint and, for scalars, the
 * exact value bits; for a shard, where it sits in its logical tensor; for a scaled low-precision tensor,
 * its scales' dtype, shape, size and fingerprint. Timestamps, seq, level, inputs, chunk partials and the
 * chunk size are never compared (inputs and chunks explain a difference; they do not make one).
 *
 * State blocks (ls_state_begin) are not step records: rec_in_steps() says which records take part in
 * step comparisons and digests, and rec_restore_check() pairs a restored block with its reference.
 */
#ifndef COMMON_RECMATCH_H
#define COMMON_RECMATCH_H

#include <stdint.h>

#include "common/record.h"

/* How a matched pair differs, in the order the rule checks. */
typedef enum rec_diff {
    REC_SAME = 0,
    REC_DIFF_DTYPE,   /* another element type */
    REC_DIFF_SHAPE,   /* other extents, another byte count (the size is part of a record), another place
                         in the logical tensor (a shard), other scale dtype, extents or size */
    REC_DIFF_CONTENT, /* another fingerprint, another scalar value, or a value on one side only (the
                         scales may differ too: rec_scales_differ) */
    REC_DIFF_SCALES,  /* the same values with other scales, or scales on one side only */
} rec_diff;

/* rec_compare - how `b` differs from `a` (their keys are assumed equal). */
rec_diff rec_compare(const rec_record *a, const rec_record *b);

/* rec_diff_name - "same", "dtype", "shape", "content", "scales". */
const char *rec_diff_name(rec_diff d);

/* rec_scales_differ - 1 when `a` and `b` carry scales and their fingerprints
 * differ (with REC_DIFF_CONTENT: the values and the scales both changed). */
int rec_scales_differ(const rec_record *a, const rec_record *b);

/* rec_in_steps - 1 when `r` takes part in step comparisons and step digests:
 * every record but the entries of state blocks. */
static inline int rec_in_steps(const rec_record *r)
{
    return !rec_is_state(r);
}

/* rec_digest_term - the 64-bit term of one record in its step's digest:
 * the step digest of a rank is the XOR of its records' terms (with the
 * record count beside it). Two records of the same key have the same term
 * exactly when rec_compare calls them REC_SAME (up to 64-bit collisions), so
 * equal digests mean equal steps. Digest version 2: the byte count is in
 * the term (version 1, before it, left it out). */
uint64_t rec_digest_term(const rec_record *r);

/* rec_inputs_term - the term of one record in its step's inputs digest: the
 * XOR over a rank's step of these tells whether two runs' records of that step
 * carried the same input fingerprints. 0 for a record without inputs. Beside
 * equal step digests, unequal inputs digests mean an absorbed difference: some
 * collective's inputs differed while its output matched. */
uint64_t rec_inputs_term(const rec_record *r);

/* rec_held_answers - whether records can be those a step digest stands for (digest streaming: an agent sends
 * a step's digest and holds the records back until lockstepd asks): `n_have` records whose terms XOR to `x_have`
 * against a digest of `n_digest` records XORing to `digest`. Returns 1 when they are its whole answer, 0 when they
 * may be part of it (fewer: the rest may still come), -1 when they cannot be (more, or as many with another XOR).
 * lockstepd applies it to held records before storing them (server/store/held.c) and to a step's stored records
 * before comparing them (server/twins/step.c). Tested in tests/unit/test_recmatch.c. */
int rec_held_answers(int64_t n_have, uint64_t x_have, int64_t n_digest, uint64_t digest);

#define REC_DIGEST_VERSION 2 /* a shard's place and a record's scales add terms; records without them are unchanged */

/* How a restored state block compares with its reference. */
typedef enum rec_restore_status {
    REC_RESTORE_SAME = 0,     /* every entry compared matches (at least one was compared) */
    REC_RESTORE_DIFFERS,      /* an entry holds something else (`diff` says what) */
    REC_RESTORE_NOT_RESTORED, /* an entry of the saved block is absent from the restored one */
    REC_RESTORE_NOT_SAVED,    /* the restored block holds an entry the saved one lacks */
    REC_RESTORE_UNVERIFIED,   /* no entry has a counterpart: nothing could be compared */
} rec_restore_status;

typedef struct rec_restore_result {
    rec_restore_status status;
    rec_diff diff;              /* with REC_RESTORE_DIFFERS */
    const rec_record *restored; /* the first differing entry of the restored block (NULL: absent there) */
    const rec_record *ref;      /* its counterpart in the reference (NULL: absent there) */
    size_t compared;            /* entries with a counterpart */
    size_t unverified;          /* restored entries without one (records as the reference only) */
    size_t not_restored;        /* saved entries the restored block lacks (against a saved block) */
    size_t not_saved;           /* restored entries the saved block lacks (against a saved block) */
    const rec_record *first_not_restored, *first_not_saved; /* the first of each, in their block's order */
} rec_restore_result;

/* rec_restore_status_name - "same", "differs", "not-restored", "not-saved", "unverified". */
const char *rec_restore_status_name(rec_restore_status s);

/* rec_restore_check - compare a run's restored state block (`restored`, n
 * entries in record order) with its reference from a twin: the twin's saved
 * block of the same step (`ref_saved` 1: m entries in record order) or, when
 * the twin saved nothing at that step, the twin's records of that step
 * (`ref_saved` 0; state entries among them are ignored). Entries are matched
 * on (name, occurrence) and judged by rec_compare. Against a saved block
 * every entry must be on both sides: the first difference in the saved
 * block's order wins, then an entry only the restored block holds. Against
 * records, restored entries without a record of their name are counted as
 * unverified, and records without an entry are ignored. Returns 0 with
 * `out` filled (pointers into the arrays), -1 when out of memory. */
int rec_restore_check(const rec_record *const *restored, size_t n, const rec_record *const *ref, size_t m,
                      int ref_saved, rec_restore_result *out);

/* rec_resume_start - the first step a run is compared from: the step after its earliest restored state block
 * (`restored_step`, -1 when it restored none), or its declared start (`declared`: 0, or LOCKSTEP_START_STEP) when
 * that is later. A run that restored the checkpoint of step k recomputes nothing before k+1, however it was launched
 * (what it records of step k itself, an evaluation after loading, is not the step its twin computed). A run with
 * step records before its restored step (`ran_before`: it computed those steps itself, and reloaded a checkpoint on
 * the way) keeps its declared start. lockstepd's twin comparison and `lockstep diff --overlap` both start a run
 * here; tested from a table in tests/unit/test_recmatch.c. */
int64_t rec_resume_start(int64_t declared, int64_t restored_step, int ran_before);

#endif /* COMMON_RECMATCH_H */
