/* lockstep.h - the public C API a training program includes to fingerprint its run. */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_API __attribute__((visibility("default")))

/* Element types of recorded tensors. The numeric values are part of the
 * record format: never renumber, only append. */
typedef enum ls_dtype {
    LS_BYTES = 0, /* opaque bytes, no element type */
    LS_F64 = 1,
    LS_F32 = 2,
    LS_F16 = 3,
    LS_BF16 = 4,
    LS_I64 = 5,
    LS_I32 = 6,
    LS_I16 = 7,
    LS_I8 = 8,
    LS_U64 = 9,
    LS_U32 = 10,
    LS_U16 = 11,
    LS_U8 = 12,
    LS_BOOL = 13,
    LS_F8E4M3 = 14,
    LS_F8E5M2 = 15,
    LS_F4E2M1 = 16, /* FP4 (1 sign, 2 exponent, 1 mantissa bits), two per byte, the first in the low nibble */
    LS_E8M0 = 17,   /* an unsigned power-of-two scale (MX block scales): 2^(bits - 127); 0xff is NaN */
    LS_DTYPE_COUNT
} ls_dtype;

/* Trace levels, coarse to fine. A record is kept only when its level is at
 * or below the level that LOCKSTEP_TRACE switches on for its step and rank. */
typedef enum ls_level {
    LS_LEVEL_METRIC = 0,
    LS_LEVEL_COLLECTIVE = 1,
    LS_LEVEL_MODULE = 2,
    LS_LEVEL_OP = 3,
    LS_LEVEL_COUNT
} ls_level;

/* Most dimensions a recorded tensor may have. */
#define LS_MAX_DIMS 8
/* Longest record name in bytes, without the terminating NUL. */
#define LS_NAME_MAX 255

/* ls_init - configure from the environment and open this rank's trace.
 *
 * Reads LOCKSTEP_TRACE_DIR, LOCKSTEP_RANK (else SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, else 0), LOCKSTEP_RUN_ID (else a new
 * UUID), LOCKSTEP_TRACE (level and window) and LOCKSTEP_MODE (off: do
 * nothing). Returns 0 on success, also when called again while already
 * initialized. Returns -1 on error; ls_last_error() says why, and every
 * later ls_* call fails until ls_init succeeds. After ls_shutdown, ls_init
 * may be called again to start a new trace. */
LS_API int ls_init(void);

/* ls_shutdown - flush and close the trace. Safe to call twice, and before
 * ls_init. */
LS_API void ls_shutdown(void);

/* ls_shutdown_with - ls_shutdown, reporting `exit_code` as this rank's end
 * (ls_shutdown and a normal exit report the process's own status): for a
 * program or wrapper about to end the process by other means, e.g. an
 * interposed MPI_Abort, whose launcher then kills the ranks with a signal.
 * Waits at most LOCKSTEP_FLUSH_TIMEOUT for the server. */
LS_API void ls_shutdown_with(int exit_code);

/* ls_shutdown_abort - ls_shutdown_with for a process about to be aborted
 * (MPI_Abort): the end is reported as this rank's abort with `exit_code`, so
 * that lockstepd shows the run's exit as the abort's code, not as the signal
 * the launcher then kills its other ranks with. */
LS_API void ls_shutdown_abort(int exit_code);

/* ls_flush - send what this rank recorded so far, its open consensus windows' digests included, and wait until
 * lockstepd took it, at most `timeout_ms` milliseconds (negative: LOCKSTEP_FLUSH_TIMEOUT): for a program about to
 * stop making collectives while its process lives on. Once every rank's flush returned, lockstepd has every
 * consensus window of the run complete, judges them at once, and each rank's end can still be asked for the records
 * of a window that differs (digest streaming). The MPI wrappers call it in MPI_Finalize. Open nonblocking
 * collectives complete first (ls_on_step_change); a consensus window closed here is not reopened, so call it where
 * the program's collectives end. Returns 0 when lockstepd took everything (or nothing streams: trace files only),
 * 1 when the wait ended first, the server is away (the rest waits in the spool, as at exit) or it refused a batch,
 * -1 before ls_init. */
LS_API int ls_flush(int timeout_ms);

/* ls_step_begin - open step `step`: later records carry it, and occurrence
 * counts restart. Steps need not be contiguous. */
LS_API void ls_step_begin(int64_t step);

/* ls_step_end - close the current step. Records made after it and before the
 * next ls_step_begin keep the closed step's number. */
LS_API void ls_step_end(void);

/* ls_metric - record a scalar metric (level metric) with its exact IEEE bits.
 * Returns 0 when recorded or filtered out by the trace window, -1 on error. */
LS_API int ls_metric(const char *name, double value);

/* ls_tensor - fingerprint `nbytes` bytes at `host_data` (LSFP-1) and record
 * them at level module. `shape` holds `ndim` extents (ndim <= LS_MAX_DIMS;
 * may be NULL when ndim is 0). The buffer is read during the call only.
 * Returns 0 when recorded or filtered out, -1 on error. */
LS_API int ls_tensor(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, int ndim,
                     const int64_t *shape);

/* ls_tensor_at - like ls_tensor, at an explicit level (collective, module or
 * op). */
LS_API int ls_tensor_at(ls_level level, const char *name, const void *host_data, size_t nbytes, ls_dtype dtype,
                        int ndim, const int64_t *shape);

/* Most input fingerprints one record may carry. */
#define LS_MAX_INPUTS 16

/* ls_record_fp - record a fingerprint computed elsewhere (on a device, by an
 * interposed collective) at `level`, with the fingerprints of the inputs
 * that produced it (`n_inputs` of them, 0..LS_MAX_INPUTS; `inputs` may be
 * NULL when 0), so that "the output differs while the inputs matched" can be
 * told apart from "the inputs already differed". `nbytes` is the size of the
 * fingerprinted data. Returns 0 when recorded or filtered out, -1 on error. */
LS_API int ls_record_fp(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                        const int64_t *shape, int n_inputs, const uint64_t *inputs);

/* ls_enabled - 1 when a record of `level` would be kept at the current step
 * on this rank, else 0. Lets callers skip work for records that would be
 * filtered out. */
LS_API int ls_enabled(ls_level level);

/* The call site of a record made on behalf of other code (an interposed
 * collective, a framework's own wrapper): where the application issued the
 * call. Every field may be NULL or 0 when unknown. */
typedef struct ls_site {
    const char *module;       /* the module's file name, e.g. "libsolver.so.2" */
    uint64_t offset;          /* the call's return address in the module, as an offset from its base */
    const char *function;     /* the (demangled) function that made the call, e.g. "Solver::run(int)" */
    uint64_t function_offset; /* the return address's offset into `function` */
    const char *caller;       /* when `function` is unknown: the nearest named function up the stack */
} ls_site;

/* ls_enabled_at - ls_enabled for a record `name` made on behalf of the code
 * that the caller returns to at `return_address` (__builtin_return_address(0)
 * in a wrapper; NULL for none): 0 also when LOCKSTEP_IGNORE matches the name
 * or a function of that call site. The first call for an address resolves
 * its call site (module, offset, function, named caller) from the calling
 * thread's stack, so call it in the thread that issued the call; later calls
 * for the address cost a table lookup. */
LS_API int ls_enabled_at(ls_level level, const char *name, const void *return_address);

/* ls_record_fp_at - ls_record_fp with the record's call site: `site` when
 * not NULL (the caller's own, strings read during the call only), else the
 * site of `return_address` as ls_enabled_at resolves it, else none.
 * LOCKSTEP_IGNORE and LOCKSTEP_STEP_ON see the site. Returns 0 when recorded
 * or left out, -1 on error. */
LS_API int ls_record_fp_at(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                           const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                           const ls_site *site);

/* The communicator of a collective record: its process count and the world
 * ranks it spans, in its own rank order (`world_ranks` holds `size` entries,
 * or is NULL when they are not known). lockstepd states a divergence's origin
 * within the communicator, and knows that one of one process moves no data. */
typedef struct ls_comm {
    int size;
    const int *world_ranks;
} ls_comm;

/* ls_record_fp_comm - ls_record_fp_at (call site from `return_address`) for
 * a collective on communicator `comm` (NULL: none recorded). Returns 0 when
 * recorded or left out, -1 on error. */
LS_API int ls_record_fp_comm(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                             const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                             const ls_comm *comm);

/* ls_record_fp_consensus - ls_record_fp_comm for a collective whose output is bit-identical on every member of
 * `comm` (allreduce with a predefined operation, allgather, broadcast): the record also carries its consensus place,
 * and this rank folds it into the digest lockstepd compares across the members, with no twin. `key` names the group
 * the same way on every member: cons_key of its world ranks (common/consensus.h), or, where world ranks are not
 * known (NCCL), a hash of what every member shares. Returns 0 when recorded or left out, -1 on error. */
LS_API int ls_record_fp_consensus(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype,
                                  int ndim, const int64_t *shape, int n_inputs, const uint64_t *inputs,
                                  const void *return_address, const ls_comm *comm, uint64_t key);

/* A record reserved when a nonblocking operation starts (ls_reserve) and made when it completes (ls_fill) or given up
 * (ls_drop): its step, occurrence and consensus place are the start's, taken in the order the program makes its
 * calls, so ranks and twins that complete their requests in other orders (MPI_Waitany, a poll with MPI_Test) still
 * line up. The caller's storage; what it holds is the agent's. */
typedef struct ls_ticket {
    uint64_t opaque[5];
} ls_ticket;

/* ls_reserve - reserve record `name` of `level` for the call that returns to `return_address` (its call site, for
 * LOCKSTEP_IGNORE and LOCKSTEP_STEP_ON), a consensus output of group `*key` (ls_record_fp_consensus) when `key` is not
 * NULL. Returns 1 reserved (then ls_fill or ls_drop it exactly once), 0 left out, -1 on error. */
LS_API int ls_reserve(ls_level level, const char *name, const void *return_address, const ls_comm *comm,
                      const uint64_t *key, ls_ticket *ticket);

/* ls_fill - make the reserved record: `name` as reserved, the fingerprint and shape as ls_record_fp_comm takes them.
 * Nothing when the step changed since ls_reserve (on this rank the record is absent). Returns 0, or -1 on error. */
LS_API int ls_fill(ls_ticket *ticket, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                   const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                   const ls_comm *comm);

/* ls_drop - give a reservation up: its operation failed or its output cannot be read. */
LS_API void ls_drop(ls_ticket *ticket);

/* ls_on_step_change - add `fn` to the functions called (in the thread that changes the step, outside the agent's
 * lock) before the step changes while reservations are open, to complete the operations they stand for, so that
 * their records are made in the step that started them. The MPI and the NCCL wrappers add theirs (at most 4 in all;
 * one added twice counts once); NULL removes every one. */
LS_API void ls_on_step_change(void (*fn)(void));

/* ls_replica - record `host_data` (a host buffer of `nbytes`) as a replica: a tensor every rank of `group` must hold
 * bit-identical at this point of the program (a data-parallel replica's parameters after the optimizer step, a norm
 * weight replicated across a tensor-parallel group). `group` lists world ranks (`world_ranks` may be in any order);
 * NULL means every rank of the job. Each member calls it in the same order; lockstepd compares the members' copies
 * within the run, with no twin (common/consensus.h). Returns 0 when recorded or left out, -1 on error. */
LS_API int ls_replica(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, const ls_comm *group);

/* ls_replica_fp - ls_replica of a buffer whose LSFP-1 fingerprint `fp` was computed elsewhere (ls_replica_device
 * computes it on the GPU). Returns 0 when recorded or left out, -1 on error. */
LS_API int ls_replica_fp(const char *name, uint64_t fp, size_t nbytes, ls_dtype dtype, const ls_comm *group);

/* ls_last_error - the calling thread's last error message, or "" if none.
 * The string is owned by the library and valid until the thread's next
 * ls_* call. */
LS_API const char *ls_last_error(void);

/* ls_fingerprint - LSFP-1 of a host buffer, as recorded by ls_tensor. */
LS_API uint64_t ls_fingerprint(const void *data, size_t nbytes);

/* ls_run_id - this process's run id (a UUID string), or NULL before
 * ls_init. Owned by the library. */
LS_API const char *ls_run_id(void);

/* ls_rank - this process's rank, or -1 before ls_init. */
LS_API int ls_rank(void);

/* ls_tensor_chunked - like ls_tensor_at, with chunk partials of
 * `chunk_bytes` instead of 1 MiB, so that a difference in a small,
 * order-sensitive tensor (a routing map, an index list) is located to its
 * chunk: 4096 cuts a 64 KiB routing map into 16 chunks. `chunk_bytes` is a
 * multiple of 8 from 64 to 1 GiB, and nbytes / chunk_bytes must not exceed
 * 2^20 chunks. The fingerprint is the same as ls_tensor's. Returns 0 when
 * recorded or filtered out, -1 on error. */
LS_API int ls_tensor_chunked(ls_level level, const char *name, const void *host_data, size_t nbytes, size_t chunk_bytes,
                             ls_dtype dtype, int ndim, const int64_t *shape);

/* ls_tensor_shard - record bytes [offset, offset + nbytes) of a logical
 * tensor of `total_nbytes` bytes whose shape is `full_shape` (level module):
 * a contiguous shard, such as a row block of a row-major matrix or a slice of
 * a flattened parameter. Its LSFP-1 partial is taken at the shard's global
 * word positions, so the shards of one step, whatever the number of ranks
 * that hold them, add up to the whole tensor's LSFP-1 (`lockstep diff
 * --logical`, `lockstep dump --logical`). `offset` must be a multiple of 8
 * bytes, and a shard that does not end the tensor must end at a multiple of
 * 8 too; offset + nbytes must not exceed total_nbytes. Non-contiguous pieces
 * (a column block of a row-major matrix) are not shards: record them as
 * ls_tensor, or copy them contiguous first. Returns 0 when recorded or
 * filtered out, -1 on error (ls_last_error says which rule was broken). */
LS_API int ls_tensor_shard(const char *name, const void *host_data, size_t nbytes, uint64_t offset,
                           uint64_t total_nbytes, ls_dtype dtype, int ndim, const int64_t *full_shape);

/* ls_tensor_scaled - record a low-precision tensor and its scale buffer as
 * one record (level module): the values (`dtype`, e.g. LS_F8E4M3 or packed
 * LS_F4E2M1, with their shape) and the scales (`scales_dtype`, e.g. LS_E8M0
 * for MXFP8 or LS_F8E4M3 for NVFP4, with theirs) each get an LSFP-1
 * fingerprint; a change in either is a divergence that says which. The
 * values carry 1 MiB chunk partials; the scales do not. Returns 0 when
 * recorded or filtered out, -1 on error. */
LS_API int ls_tensor_scaled(const char *name, const void *values, size_t values_nbytes, ls_dtype dtype, int ndim,
                            const int64_t *shape, const void *scales, size_t scales_nbytes, ls_dtype scales_dtype,
                            int scales_ndim, const int64_t *scales_shape);

/* Kinds of state block. */
#define LS_STATE_SAVED 1    /* the program writes a checkpoint */
#define LS_STATE_RESTORED 2 /* the program has loaded one */

/* ls_state_begin - open a state block: what the program holds at `step`
 * (the same number where it saves and where it restores that checkpoint) as
 * it saves a checkpoint (LS_STATE_SAVED) or right after it loaded one
 * (LS_STATE_RESTORED). Entries follow with ls_state, then ls_state_end.
 * Blocks do not change the current step and never take part in step
 * comparisons: `lockstep diff` and lockstepd pair a run's restored block at
 * step k with its twin's saved block at step k (or, when the twin saved
 * nothing there, its records of step k with the same names) and report a
 * restore difference naming the entry before any later step. One block is
 * open at a time per process. Entries are kept whenever this rank records
 * anything (whatever the trace window's steps). Returns 0, or -1 (a block is
 * open already, `kind` is unknown, outside ls_init..ls_shutdown). */
LS_API int ls_state_begin(int64_t step, int kind);

/* ls_state - one entry of the open state block: LSFP-1 of a host buffer
 * (parameters, optimizer moments, an RNG state, the data position...), with
 * its dtype and shape; a one-element entry keeps its value bits. Names
 * follow the rules of record names and should be the same in the saving and
 * the restoring program (`momentum`, `rng`, `data_pos`). Returns 0, or -1
 * (no block is open, bad arguments). */
LS_API int ls_state(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, int ndim,
                    const int64_t *shape);

/* ls_state_fp - an entry of the open state block whose fingerprint was
 * computed elsewhere (on a device). Returns 0 or -1. */
LS_API int ls_state_fp(const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape);

/* ls_state_end - close the open state block and write the buffered records
 * out. Returns 0, or -1 when no block is open. */
LS_API int ls_state_end(void);

/* ls_checkpoint - declare that the program wrote a checkpoint holding the
 * state after step `step`, at `path` (NULL or "" when it names none; a path
 * every node can read, e.g. absolute on a shared file system). Streamed to
 * lockstepd beside the records, so that `lockstep narrow` replays a late step
 * from the newest checkpoint before it, through the job's resume template
 * (--lockstep-resume). Call it once per checkpoint, from one rank, after the
 * checkpoint is complete. `step` is the step a saved state block of that
 * checkpoint carries (ls_state_begin(step, LS_STATE_SAVED)): both name the
 * one checkpoint, and lockstepd replays from either (a block has no path). Never waits on the network. Returns 0 (also
 * when not streaming to a server: nothing to declare), -1 on error, also for a path lockstepd refuses (a control
 * character, not UTF-8, longer than 4096 bytes, a leading '-'; said once on stderr). */
LS_API int ls_checkpoint(int64_t step, const char *path);

/* ls_manifest_set - report a fact of the configuration this rank really runs
 * with, as the program learns it (a binding's thread count:
 * "threads.torch_intra" = "4"): the manifest's "used" object carries it,
 * twins compare it as configuration, and lockstepd gets the manifest again
 * when a fact changes after it went out. `key`: 1 to 63 letters, digits, '_',
 * '-' or '.'; `value`: at most 127 bytes of UTF-8; at most 32 keys. Works
 * before ls_init too. Never waits on the network. Returns 0, or -1 on a bad
 * key or value or a full table (ls_last_error says which). */
LS_API int ls_manifest_set(const char *key, const char *value);

#ifdef LOCKSTEP_CUDA
/* The CUDA runtime's stream type (driver_types.h), so that this header needs
 * no CUDA headers; repeating an identical typedef is allowed. */
typedef struct CUstream_st *cudaStream_t;

/* ls_tensor_device - like ls_tensor, for a tensor in GPU memory: LSFP-1 is
 * computed on the device (bit-identical to ls_tensor on the same bytes), in
 * `stream` after the work already queued there, and only its result is
 * copied back; the call waits for that small result. Any alignment and
 * size. Nothing is launched when the trace window filters the record out.
 * Programs define LOCKSTEP_CUDA and link -llockstep_cuda -llockstep.
 * Returns 0 when recorded or filtered out, -1 on error. */
LS_API int ls_tensor_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim,
                            const int64_t *shape, cudaStream_t stream);

/* ls_state_device - like ls_state, for a buffer in GPU memory: LSFP-1 is
 * computed on the device in `stream` and recorded with ls_state_fp (from
 * liblockstep_cuda.so). Returns 0, or -1 (no block open, a CUDA error). */
LS_API int ls_state_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim,
                           const int64_t *shape, cudaStream_t stream);

/* ls_replica_device - like ls_replica, for a replica in GPU memory: LSFP-1 is computed on the device in `stream`
 * (nothing is copied but the 8-byte result) and recorded with ls_replica_fp (from liblockstep_cuda.so). Nothing is
 * launched when the replica would not be kept. Returns 0 when recorded or left out, -1 on error. */
LS_API int ls_replica_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, const ls_comm *group,
                             cudaStream_t stream);
#endif /* LOCKSTEP_CUDA */

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_H */
