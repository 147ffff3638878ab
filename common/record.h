/* record.h - the record and its binary framing, shared by trace files, spool files and ingest bodies.
 *
 * A stream is a header followed by records, all little-endian:
 *
 *   header   "LOCKSTEP" u16 version=1, u16 kind, u32 hdr_len, u32 rank, u32 flags,
 *            u64 batch_seq, i64 created_ns, then fields (u8 key, u8 0, u16 len, bytes),
 *            then u32 CRC32C of everything before it in the header
 *   record   u32 payload_len, u32 CRC32C(payload), payload
 *   payload  u64 seq, i64 step, i64 t_ns, u64 nbytes, u64 fp, u64 value,
 *            u32 occurrence, u8 level, u8 dtype, u8 ndim, u8 flags,
 *            u16 name_len, u16 n_inputs, u32 n_chunks,
 *            i64 shape[ndim], name, u64 inputs[n_inputs], u64 chunks[n_chunks]
 *
 * Unknown header field keys are skipped, so fields can be added without a new
 * version. A reader returns every complete record before a torn or corrupt
 * tail and says where and why it stopped.
 */
#ifndef COMMON_RECORD_H
#define COMMON_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define REC_MAGIC "LOCKSTEP"
#define REC_VERSION 1
#define REC_HDR_FIXED 40             /* bytes before the header fields */
#define REC_HDR_MAX 65536            /* the largest header a reader accepts */
#define REC_FIXED 64                 /* payload bytes before shape */
#define REC_MAX_INPUTS 16
#define REC_MAX_CHUNKS (1u << 20)    /* 1 TiB of 1 MiB chunks */
#define REC_MAX_PAYLOAD (REC_FIXED + 8 * LS_MAX_DIMS + LS_NAME_MAX + 8 * REC_MAX_INPUTS + 8 * REC_MAX_CHUNKS)
#define REC_STR_MAX 255              /* longest string header field */

enum rec_kind { REC_KIND_TRACE = 1, REC_KIND_SPOOL = 2, REC_KIND_BATCH = 3 };

/* Header field keys. */
enum rec_field {
    REC_F_RUN_ID = 1,
    REC_F_JOB_ID = 2,
    REC_F_STEP_ID = 3,
    REC_F_TWIN_GROUP = 4,
    REC_F_HOST = 5,
    REC_F_ALGO = 6,
};

/* Header flags. */
#define REC_HDR_HELD 0x01 /* a batch of records the agent held back and lockstepd asked for (digest streaming):
                             their step digests were sent before, in REC_STEP_DIGEST entries */

/* Record flags. */
#define REC_HAS_VALUE 0x01   /* `value` holds the scalar's raw bits */
#define REC_STEP_DIGEST 0x02 /* not a record but a step digest (digest streaming): `nbytes` records of `step` held
                                back by the agent, `fp` the XOR of their rec_digest_term (common/recmatch.h), `seq`
                                the last one's seq; named REC_STEP_DIGEST_NAME */
#define REC_STEP_DIGEST_NAME "step.digest"

typedef struct rec_header {
    uint16_t version;
    uint16_t kind;
    uint32_t rank;
    uint32_t flags;
    uint64_t batch_seq;
    int64_t created_ns;
    char run_id[REC_STR_MAX + 1];
    char job_id[REC_STR_MAX + 1];
    char step_id[REC_STR_MAX + 1];
    char twin_group[REC_STR_MAX + 1];
    char host[REC_STR_MAX + 1];
    char algo[REC_STR_MAX + 1];
} rec_header;

/* One fingerprinted event. `name` need not be NUL-terminated; `inputs` and
 * `chunks` are borrowed (from the caller when encoding, from the reader when
 * decoding). */
typedef struct rec_record {
    uint64_t seq;
    int64_t step;
    int64_t t_ns;
    uint64_t nbytes;
    uint64_t fp;
    uint64_t value;
    uint32_t rank; /* from the stream header; not encoded per record */
    uint32_t occurrence;
    uint8_t level;
    uint8_t dtype;
    uint8_t ndim;
    uint8_t flags;
    int64_t shape[LS_MAX_DIMS];
    const char *name;
    uint16_t name_len;
    uint16_t n_inputs;
    uint32_t n_chunks;
    const uint64_t *inputs;
    const uint64_t *chunks;
} rec_record;

/* rec_header_size - encoded size of `h`. */
size_t rec_header_size(const rec_header *h);

/* rec_header_encode - write `h` to `out` (rec_header_size(h) bytes). Returns
 * the bytes written. Strings longer than REC_STR_MAX are cut. */
size_t rec_header_encode(const rec_header *h, unsigned char *out);

/* rec_encoded_size - bytes rec_encode writes for `r`, framing included. */
size_t rec_encoded_size(const rec_record *r);

/* rec_encode - frame `r` into `out` (rec_encoded_size(r) bytes). Returns the
 * bytes written, or 0 if `r` is invalid (see rec_check). */
size_t rec_encode(const rec_record *r, unsigned char *out);

/* rec_check - 0 if `r` can be framed, else -1 with a reason in `why`. */
int rec_check(const rec_record *r, char *why, size_t cap);

/* Why a reader stopped. */
typedef enum rec_status {
    REC_OK = 0,       /* clean end of input */
    REC_TORN,         /* input ends inside a record or header: a torn write */
    REC_BAD_CRC,      /* a checksum does not match: corruption */
    REC_BAD_LENGTH,   /* a length field is impossible */
    REC_BAD_FIELD,    /* a field holds an impossible value */
    REC_BAD_MAGIC,    /* not a Lockstep stream */
    REC_BAD_VERSION,  /* a format version this reader does not know */
} rec_status;

const char *rec_status_name(rec_status s);

typedef struct rec_reader {
    const unsigned char *buf;
    size_t len;
    size_t off;          /* where the next record starts */
    rec_header hdr;
    uint64_t count;      /* records returned so far */
    rec_status status;   /* why reading stopped (REC_OK at a clean end) */
    size_t err_off;      /* byte offset of the bad frame */
    char err[256];       /* the reason, for people */
    uint64_t *scratch;   /* aligned copies of inputs and chunks */
    size_t scratch_cap;
} rec_reader;

/* rec_reader_init - start reading `len` bytes at `buf` (borrowed; it must
 * outlive the reader), parsing the header. Returns 0, or -1 with status and
 * err set when the header is torn or invalid. */
int rec_reader_init(rec_reader *rd, const void *buf, size_t len);

/* rec_reader_frames - start reading `len` bytes of bare frames (records
 * without a stream header, as lockstepd stores them) of rank `rank`. */
void rec_reader_frames(rec_reader *rd, const void *buf, size_t len, uint32_t rank);

/* rec_reader_next - decode the next record into `out`, whose pointers stay
 * valid until the next call. Returns 1 for a record, 0 at the end: then
 * rd->status is REC_OK for a clean end, else the reason it stopped, with
 * rd->err_off and rd->err. Returns -1 only when out of memory. */
int rec_reader_next(rec_reader *rd, rec_record *out);

/* rec_reader_release - free what the reader allocated (not the buffer). */
void rec_reader_release(rec_reader *rd);

/* rec_decode_payload - decode one record payload (without its length and
 * CRC). Returns 0, or -1 with a reason in `why`. `scratch` must hold
 * n_inputs + n_chunks words; use rec_payload_words to size it. */
int rec_decode_payload(const unsigned char *p, size_t len, rec_record *out, uint64_t *scratch, char *why, size_t cap);

/* rec_payload_words - how many scratch words the payload at `p` needs, or
 * -1 when it is too short to say. */
long rec_payload_words(const unsigned char *p, size_t len);

/* rec_same_shape - 1 when two records have the same ndim and extents. */
int rec_same_shape(const rec_record *a, const rec_record *b);

#endif /* COMMON_RECORD_H */
