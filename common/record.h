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
 *            i64 shape[ndim], name, u64 inputs[n_inputs], u64 chunks[n_chunks],
 *            and when flags has REC_HAS_EXT (2): u16 ext_len, then ext_len bytes
 *            of extension fields (u8 key, u8 0, u16 len, bytes), to the payload's end
 *   flags    1 `value` holds a scalar's bits, 2 an extension block follows the
 *            chunks, 4 a saved state entry, 8 a restored state entry
 *
 * The extension block is the one way a record carries more than the fields
 * above; every optional part is a field of it, in any order, each at most once:
 *   1 site    u64 offset, u64 function_offset, u16 module_len, u16 function_len,
 *             u16 caller_len, module, function, caller: where the application
 *             issued the call an interposed record stands for (rec_site)
 *   2 shard   u64 offset, u64 total_nbytes, u64 acc: the record is the bytes
 *             [offset, offset + nbytes) of a logical tensor of total_nbytes
 *             bytes; acc is their LSFP-1 accumulator at global word positions,
 *             and chunks[] are the partials of the global chunks they touch
 *   3 chunk   u64 chunk_bytes: chunks[] are partials of chunks of this size
 *             (a multiple of 8 in REC_CHUNK_MIN..REC_CHUNK_MAX), not 1 MiB
 *   4 scales  u8 dtype, u8 ndim, u16 0, u32 0, u64 nbytes, u64 fp, i64 shape[ndim]:
 *             the scale buffer that goes with the record's values (MXFP8, NVFP4)
 *   5 comm    u32 size, u32 n_listed, u64 id, u32 world_ranks[n_listed]: the
 *             communicator of a collective: its process count, the world ranks
 *             it spans in its own rank order (listed when size <= REC_COMM_LIST_MAX,
 *             else n_listed 0), and an id that is the same for the same world
 *             ranks in the same order (rec_comm_id). Metadata: not part of the
 *             record's equality or step digest
 *   6 consensus u64 key, u32 index, u32 0: the record's output must be bit-identical
 *             on every rank of the communicator (or replica group) whose sorted
 *             world ranks give `key` (cons_key, common/consensus.h); it is the
 *             index-th such record of (step, key) on this rank, counted from 0.
 *             Metadata: not part of the record's equality or step digest
 * The encoder writes the site first, then the other fields in key order.
 *
 * Compatibility, both ways. Unknown header fields and unknown extension keys
 * are skipped (a reader drops them), so fields can be added without a new
 * version. A record that carries nothing optional has no block and no flag:
 * it is encoded byte for byte as before extensions existed, so every older
 * trace, spool and batch still reads, and older readers read such records.
 * A reader of the first block format (call sites only) reads records with the
 * later fields as plain records (it skips keys 2..4 and does not know flags 4
 * and 8), so upgrade lockstepd before agents that record state blocks, shards,
 * scales or chunk sizes. A reader returns every complete record before a torn
 * or corrupt tail and says where and why it stopped.
 */
#ifndef COMMON_RECORD_H
#define COMMON_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define REC_MAGIC "LOCKSTEP"
#define REC_VERSION 1
#define REC_HDR_FIXED 40  /* bytes before the header fields */
#define REC_HDR_MAX 65536 /* the largest header a reader accepts */
#define REC_FIXED 64      /* payload bytes before shape */
#define REC_MAX_INPUTS 16
#define REC_MAX_CHUNKS (1u << 20) /* 1 TiB of 1 MiB chunks */
#define REC_SITE_MODULE_MAX 255   /* longest module name of a call site */
#define REC_SITE_NAME_MAX 1023    /* longest function or caller name of a call site */
#define REC_SITE_FIXED 22         /* site field bytes before its strings */
#define REC_SITE_FIELD_MAX (4 + REC_SITE_FIXED + REC_SITE_MODULE_MAX + 2 * REC_SITE_NAME_MAX)
#define REC_EXT_MAX 1024 /* the most bytes of extension fields other than the site (rec_record.ext) */
#define REC_EXT_BLOCK_MAX (2 + REC_SITE_FIELD_MAX + REC_EXT_MAX) /* a whole block, its length word included */
#define REC_MAX_PAYLOAD                                                                                                \
    (REC_FIXED + 8 * LS_MAX_DIMS + LS_NAME_MAX + 8 * REC_MAX_INPUTS + 8 * REC_MAX_CHUNKS + REC_EXT_BLOCK_MAX)
#define REC_CHUNK_MIN 64           /* the smallest per-record chunk size */
#define REC_CHUNK_MAX (1ULL << 30) /* the largest */
#define REC_STR_MAX 255            /* longest string header field */

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
/* a batch of records the agent held back and lockstepd asked for (digest streaming): their step digests were sent
 * before, in REC_STEP_DIGEST entries */
#define REC_HDR_HELD 0x01

/* Record flags. */
#define REC_HAS_VALUE 0x01 /* `value` holds the scalar's raw bits */
/* framing only: an extension block follows the chunks (the codec sets and clears it: a decoded record never has it) */
#define REC_HAS_EXT 0x02
#define REC_STATE_SAVED 0x04    /* an entry of a state block saved with a checkpoint (ls_state_begin) */
#define REC_STATE_RESTORED 0x08 /* an entry of a state block loaded from one */
#define REC_STATE_MASK (REC_STATE_SAVED | REC_STATE_RESTORED)
/* not a record but a step digest (digest streaming): `nbytes` records of `step` held back by the agent, `fp` the XOR of
 * their rec_digest_term (common/recmatch.h), `seq` the last one's seq; named REC_STEP_DIGEST_NAME */
#define REC_STEP_DIGEST 0x10
#define REC_STEP_DIGEST_NAME "step.digest"
/* not a record but a consensus digest (common/consensus.h): the records of one window of one (step, key) on this
 * rank: `occurrence` the window, `nbytes` how many records it folds, `fp` their cons_fold, `value` the key; its comm
 * extension field names the communicator (size, sorted world ranks, id = key); named REC_CONSENSUS_DIGEST_NAME */
#define REC_CONSENSUS_DIGEST 0x20
#define REC_CONSENSUS_DIGEST_NAME "consensus.digest"

/* Extension field keys. */
enum rec_ext_key {
    REC_X_SITE = 1,
    REC_X_SHARD = 2,
    REC_X_CHUNK = 3,
    REC_X_SCALES = 4,
    REC_X_COMM = 5,
    REC_X_CONSENSUS = 6
};

#define REC_COMM_LIST_MAX 64 /* world ranks a comm field lists (a larger communicator: its size and id only) */

/* The call site of a record made on behalf of other code (an interposed MPI
 * or NCCL call): where in the application the call was issued. `offset` is
 * the call's return address in `module` (a file name without its directory),
 * relative to the module's own addresses, so twins of the same binary agree
 * whatever the load addresses; `function` is the demangled function that
 * holds it (with `function_offset` into it), empty when no symbol table
 * names it; `caller` is then the nearest function up the stack that has a
 * name. Strings are borrowed and need not be NUL-terminated; a site whose
 * three lengths are 0 is no site. */
typedef struct rec_site {
    uint64_t offset;
    uint64_t function_offset;
    const char *module, *function, *caller;
    uint16_t module_len, function_len, caller_len;
} rec_site;

/* The extension fields of a record other than its call site, decoded (rec_ext_parse). */
typedef struct rec_ext {
    uint64_t chunk_bytes; /* 0: the default 1 MiB chunks */
    int has_shard;
    uint64_t shard_offset, shard_total, shard_acc;
    int has_scales;
    uint8_t scales_dtype, scales_ndim;
    uint64_t scales_nbytes, scales_fp;
    int64_t scales_shape[LS_MAX_DIMS];
    int has_comm;
    uint32_t comm_size, comm_nlisted;
    uint64_t comm_id;
    uint32_t comm_ranks[REC_COMM_LIST_MAX]; /* world ranks, in the communicator's rank order */
    int has_consensus;
    uint64_t consensus_key;   /* cons_key of the sorted world ranks that must hold the same output */
    uint32_t consensus_index; /* the record's place among this rank's consensus records of (step, key) */
} rec_ext;

/* The most bytes rec_ext_encode writes. */
#define REC_EXT_ENCODED_MAX (4 + 24 + 4 + 8 + 4 + 24 + 8 * LS_MAX_DIMS + 4 + 16 + 4 * REC_COMM_LIST_MAX + 4 + 16)

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
    rec_site site;            /* all zero: none (extension field 1) */
    const unsigned char *ext; /* the other extension fields, encoded (rec_ext_encode): borrowed like inputs */
    uint16_t ext_len;         /* 0: none (at most REC_EXT_MAX) */
} rec_record;

/* rec_has_site - 1 when `r` carries a call site. */
static inline int rec_has_site(const rec_record *r)
{
    return r->site.module_len || r->site.function_len || r->site.caller_len;
}

/* rec_comm_id - the id of a communicator that spans world ranks `ranks[0..n)`
 * in that order (the comm field's id): the same on every rank and in every run
 * that builds the same communicator. */
uint64_t rec_comm_id(const uint32_t *ranks, size_t n);

/* rec_ext_encode - encode the fields `x` holds (a shard, a chunk size other
 * than the default, scales, a communicator, a consensus place) into `out` (REC_EXT_ENCODED_MAX bytes), in key
 * order, as rec_record.ext. Returns the length; 0 when there is nothing to
 * encode. */
size_t rec_ext_encode(const rec_ext *x, unsigned char *out);

/* rec_ext_parse - decode `len` extension bytes (rec_record.ext) into `out`
 * (zeroed first; unknown keys skipped; a site field here is refused: the
 * site is rec_record.site). Returns 0, or -1 with a reason in `why` when a
 * field is cut short, repeated or holds an impossible value. */
int rec_ext_parse(const unsigned char *ext, size_t len, rec_ext *out, char *why, size_t cap);

/* rec_ext_of - the extension fields of `r` (all zero when it has none, or,
 * for a record that never passed rec_check, when they do not parse). */
void rec_ext_of(const rec_record *r, rec_ext *out);

/* rec_chunk_bytes - the size of the chunks r->chunks are partials of. */
uint64_t rec_chunk_bytes(const rec_record *r);

/* rec_is_state - 1 for an entry of a state block (saved or restored). */
static inline int rec_is_state(const rec_record *r)
{
    return (r->flags & REC_STATE_MASK) != 0;
}

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

/* rec_check - 0 if `r` can be framed, else -1 with a reason in `why`
 * (extension fields included: the site's strings fit and hold no NUL, a
 * shard's offset a multiple of 8 and inside its total, a chunk size in range,
 * known scale dtypes, a state entry saved or restored, not both). */
int rec_check(const rec_record *r, char *why, size_t cap);

/* Why a reader stopped. */
typedef enum rec_status {
    REC_OK = 0,      /* clean end of input */
    REC_TORN,        /* input ends inside a record or header: a torn write */
    REC_BAD_CRC,     /* a checksum does not match: corruption */
    REC_BAD_LENGTH,  /* a length field is impossible */
    REC_BAD_FIELD,   /* a field holds an impossible value */
    REC_BAD_MAGIC,   /* not a Lockstep stream */
    REC_BAD_VERSION, /* a format version this reader does not know */
} rec_status;

const char *rec_status_name(rec_status s);

typedef struct rec_reader {
    const unsigned char *buf;
    size_t len;
    size_t off; /* where the next record starts */
    rec_header hdr;
    uint64_t count;    /* records returned so far */
    rec_status status; /* why reading stopped (REC_OK at a clean end) */
    size_t err_off;    /* byte offset of the bad frame */
    char err[256];     /* the reason, for people */
    uint64_t *scratch; /* aligned copies of inputs and chunks */
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
 * valid until the next call (name and site strings: while the buffer lives). Returns 1 for a record, 0 at the end: then
 * rd->status is REC_OK for a clean end, else the reason it stopped, with
 * rd->err_off and rd->err. Returns -1 only when out of memory. */
int rec_reader_next(rec_reader *rd, rec_record *out);

/* rec_reader_release - free what the reader allocated (not the buffer). */
void rec_reader_release(rec_reader *rd);

/* rec_decode_payload - decode one record payload (without its length and
 * CRC). Returns 0, or -1 with a reason in `why`. The inputs, chunks and
 * extension fields other than the site are copied to `scratch`, which must
 * hold rec_payload_words(p, len) words; name and site point into `p`. */
int rec_decode_payload(const unsigned char *p, size_t len, rec_record *out, uint64_t *scratch, char *why, size_t cap);

/* rec_payload_words - how many scratch words the payload of `len` bytes at
 * `p` needs (inputs, chunks, extension bytes), or -1 when it is too short to
 * say. */
long rec_payload_words(const unsigned char *p, size_t len);

/* rec_same_shape - 1 when two records have the same ndim and extents. */
int rec_same_shape(const rec_record *a, const rec_record *b);

#endif /* COMMON_RECORD_H */
