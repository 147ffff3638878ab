/* frames.h - records as stored: a batch's CRC-checked frames cut per step into page-sized segments (record_frames), and
 * the reads that decode them.
 *
 * A segment is the frames (common/record.h: u32 length, u32 CRC32C, payload) of consecutive records of one step
 * of one batch, in seq order, at most FRAMES_SEG_MAX bytes unless one record alone is larger, so that its row stays
 * inline in one 8 KB heap page: PostgreSQL writes one row and one index entry for ~70 records instead of one of
 * each per record. Scalar records of occurrence 0 (the series endpoint's points) go into segments of their own
 * (kind 1), so that a curve reads only those; so do entries of state blocks (kinds 2 saved and 4 restored, for the
 * restore checks) and other records with extension fields (kind 3, for the logical comparison). Frames carry every
 * field of a record: its call site and extension fields in the frame's extension block (common/record.h). Every read
 * checks each frame's CRC and decodes it here, and orders records by step, then seq, as the row layout's queries did.
 *
 * A segment of series points may span consecutive steps of one block of 1 << FRAMES_BLOCK_SHIFT steps, each with
 * points in it, as a batch brings them (its column step_last, NULL for one step: sql/migrations/030_series_spans.sql):
 * a digest batch of 10 steps then writes one such row instead of 10. Every read asks for the segments that start before
 * its first step and span it (FRAMES_SPANNING), and keeps of each segment only the records of the steps it asked for.
 */
#ifndef SERVER_STORE_FRAMES_H
#define SERVER_STORE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "server/store/batch.h"

#define FRAMES_SEG_MAX 7800        /* frame bytes of an uncompressed segment: with its columns the row fits a page */
#define FRAMES_SEG_LZ4_MAX 32768   /* ... of a segment PostgreSQL compresses with lz4 */
#define FRAMES_SEG_LZ4_BUDGET 6000 /* its estimated compressed bytes (frames_lz4_cost): it stays inline */
#define FRAMES_KIND_RECORDS 0
#define FRAMES_KIND_SERIES 1 /* scalar records of occurrence 0: the series endpoint's points */
#define FRAMES_KIND_SAVED 2  /* entries of state blocks saved with a checkpoint (REC_STATE_SAVED) */
/* other records with extension fields (shards, scales, chunk sizes): the logical comparison reads only these (and the
 * series points that have some) */
#define FRAMES_KIND_EXT 3
/* entries of restored state blocks (REC_STATE_RESTORED): kinds 2 and 4 are the restore checks' index of state entries
 * (record_frames_state) */
#define FRAMES_KIND_RESTORED 4
#define FRAMES_KINDS 5
/* A segment of series points spans steps of one block (step >> FRAMES_BLOCK_SHIFT) only: lockstep_step_block in
 * sql/functions/compare.sql, which tests/sql/test_step_packs.c holds to the same block. */
#define FRAMES_BLOCK_SHIFT 5

/* FRAMES_SPANNING(x) - the SQL condition on record_frames of the segments that start before step `x` (an SQL
 * expression: a parameter) and span it. Only series points span (kind 1): the rank's index, whose last column is the
 * kind, finds them among the block's (migrations/034_frames_one_rank_index.sql). */
#define FRAMES_SPANNING(x)                                                                                             \
    "kind = 1 AND step_last IS NOT NULL AND step >= lockstep_block_first(" x ") AND step < " x " AND step_last >= " x

/* FRAMES_REACHING(lo, hi) - the SQL condition on record_frames of the segments with records of steps lo..hi (SQL
 * expressions): those that start there, and those of series points that start earlier in lo's block and reach it. */
#define FRAMES_REACHING(lo, hi)                                                                                        \
    "step BETWEEN lockstep_block_first(" lo ") AND " hi " AND coalesce(step_last, step) >= " lo

/* One segment of a batch being written: its frames are frames_out.buf[off .. off+len). */
typedef struct frames_seg {
    int64_t step, last; /* its first and last steps */
    uint64_t seq_lo;
    int n;
    int kind;
    size_t off, len;
} frames_seg;

/* The segments of one batch (or a group's), ready for lockstep_store_batches. */
typedef struct frames_out {
    frames_seg *seg;
    size_t n_seg, cap_seg;
    unsigned char *buf; /* every segment's frames, segment after segment */
    size_t len, cap;
} frames_out;

/* frames_configure - read whether record_frames compresses its frames
 * (lz4) on this thread's connection, and size segments for it. Call once at
 * start, after the migrations; until then segments are sized uncompressed.
 * Returns 1 compressed, 0 not, -1 on a database error. */
int frames_configure(void);

/* frames_lz4_cost - an estimate of the bytes record `r` takes once lz4
 * compressed: its fingerprint, input and chunk words and value are random,
 * the rest (names, shapes, counts, seq and times) repeats. */
size_t frames_lz4_cost(const rec_record *r);

/* frames_kind - the segment kind record `r` is stored in. */
int frames_kind(const rec_record *r);

/* frames_cut - cut the records of batch `b` into segments (its binary frames
 * as they arrived, or JSON records framed here). `out` must be zeroed or
 * released before. Never fails (the server's allocator aborts). */
void frames_cut(const srv_batch *b, frames_out *out);

/* frames_bytea_array - the segments' frames as a one-dimensional bytea[] in
 * PostgreSQL's binary array form: a new buffer (caller frees) of *len bytes. */
unsigned char *frames_bytea_array(const frames_out *o, size_t *len);

/* frames_seg_arrays - the segments' steps, first seqs, record counts, kinds
 * and last steps (NULL: one step) as five PostgreSQL array literals
 * ("{1,2}"), new strings in out[0..4] (caller frees each). */
#define FRAMES_SEG_ARRAYS 5
void frames_seg_arrays(const frames_out *o, char *out[FRAMES_SEG_ARRAYS]);

/* frames_out_release - free what frames_cut made. */
void frames_out_release(frames_out *o);

/* Decoded records read back. Names point into the query results the set
 * keeps; inputs and chunks into its own words. Valid until frame_set_release. */
typedef struct frame_set {
    size_t n, cap;
    rec_record *recs;
    int64_t *run_key; /* the run of each record */
    void **results;   /* PGresult *, kept alive for the names */
    size_t n_results, cap_results;
    uint64_t *words;
    size_t n_words, cap_words;
    size_t *word_off; /* while decoding: where record i's words sit */
} frame_set;

/* What a read returns when a stored frame fails its CRC or length checks (the rows were changed outside
 * lockstepd, or the disk damaged them): nothing of the read is trusted. Other failures return -1. */
#define FRAMES_DAMAGED (-2)

/* frames_read_step - every stored record at (`rank`, `step`) of the runs
 * `keys` (nkeys of them), sorted by run (in the order of `keys`), then seq.
 * Returns 0, or -1 (database error) or FRAMES_DAMAGED with the reason in
 * `err`. `out` must be released either way. */
int frames_read_step(const int64_t *keys, int nkeys, uint32_t rank, int64_t step, frame_set *out, char *err,
                     size_t cap);

/* frames_step_result - as frames_read_step, from rows a caller's own binary
 * query returned (`r`, a PGresult the set takes over and clears): the rows
 * whose int2 column `sel` is 0 are segments of (`rank`, `step`) or spanning
 * it (FRAMES_SPANNING), column `key` their run, column `fr` their frames.
 * Returns 0, or FRAMES_DAMAGED with `err`. `out` must be released either
 * way. */
int frames_step_result(frame_set *out, void *r, int sel, int key, int fr, const int64_t *keys, int nkeys, uint32_t rank,
                       int64_t step, char *err, size_t cap);

/* frames_be64, frames_be32, frames_be16 - a big-endian integer of a binary result. */
int64_t frames_be64(const char *p);
int32_t frames_be32(const char *p);
int16_t frames_be16(const char *p);

/* frames_read_range - the records of run `key`, rank `rank`, steps
 * from..to, in (step, seq) order, skipping `offset` and returning at most
 * `limit` of them. Returns 0, or -1 or FRAMES_DAMAGED with `err`. `out` must
 * be released either way. */
int frames_read_range(int64_t key, uint32_t rank, int64_t from, int64_t to, long long offset, long long limit,
                      frame_set *out, char *err, size_t cap);

/* frames_read_series - the series points (scalar records of occurrence 0)
 * of run `key`, rank `rank` whose name is one of `names` (n_names of them), in
 * (step, seq) order, at most `limit`. Returns 0, or -1 or FRAMES_DAMAGED with
 * `err`. `out` must be released either way. */
int frames_read_series(int64_t key, uint32_t rank, const char *const *names, int n_names, long long limit,
                       frame_set *out, char *err, size_t cap);

/* frames_points_next - the next series points (scalar records of occurrence 0, any name) of run `key`, rank
 * `rank`, from step *from up to step `to`, in (step, seq) order, whole steps only: about FRAMES_POINTS_SEGS
 * segments (FRAMES_POINTS_SEGS * FRAMES_SEG_MAX bytes of frames), more only when one step holds more, so that a
 * caller reads a run chunk by chunk in bounded memory. Moves *from past the steps read. Returns 1 when steps
 * after those read may remain, 0 when none does (what it read is in `out` either way), or -1 or FRAMES_DAMAGED
 * with `err`. `out` must be released either way. */
#define FRAMES_POINTS_SEGS 256
int frames_points_next(int64_t key, uint32_t rank, int64_t to, int64_t *from, frame_set *out, char *err, size_t cap);

/* frames_rows - every segment of `res` (a PGresult of a caller's binary query, which the set takes over and
 * clears): column `key` the run (int8), `rank_col` (int4), `step_col` (int8), `fr` the frames; keeping only the
 * records of steps lo..hi (the query's; a spanning segment holds others) that `keep` accepts (NULL: all), in the
 * rows' order, then seq within a segment. Returns 0, or FRAMES_DAMAGED with `err`. `out` must be released either
 * way. */
int frames_rows(frame_set *out, void *res, int key, int rank_col, int step_col, int fr, int64_t lo, int64_t hi,
                int (*keep)(const rec_record *), char *err, size_t cap);

/* frames_sort_steps - the set's records in (step, run, rank, seq) order: what a query ordered by step reads when
 * a segment of series points spans steps. */
void frames_sort_steps(frame_set *s);

/* frame_set_release - free the set; it may be read into again. */
void frame_set_release(frame_set *s);

/* frames_register - this module's prepared statements. */
void frames_register(void);

#endif /* SERVER_STORE_FRAMES_H */
