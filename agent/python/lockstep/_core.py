"""_core.py - the Python face of the C API: init, steps, metrics, tensors, fingerprints."""

import contextlib
import ctypes
import os
import sys
import warnings

from . import _lib
from ._buffers import view_of


class LockstepError(RuntimeError):
    """An ls_* call failed; the message is the library's ls_last_error() plus a hint."""


LEVELS = {
    "metric": _lib.LEVEL_METRIC, "metrics": _lib.LEVEL_METRIC,
    "collective": _lib.LEVEL_COLLECTIVE, "collectives": _lib.LEVEL_COLLECTIVE,
    "module": _lib.LEVEL_MODULE, "modules": _lib.LEVEL_MODULE,
    "op": _lib.LEVEL_OP, "ops": _lib.LEVEL_OP,
}

# The LOCKSTEP_TRACE this binding sets when the environment names none: Python callers record
# tensors (level module), which the C default (collectives) would leave out.
DEFAULT_TRACE = "modules"


class _State:
    def __init__(self):
        self.initialized = False  # our init() succeeded and shutdown() has not run since
        self.step = None  # the open step, as this binding last set it
        self.user_steps = False  # the program calls step()/step_begin() itself
        self.listeners = []  # callables(event, step), event "begin" or "end"
        self.defaulted_trace = False  # init() started the agent with DEFAULT_TRACE, not the user's choice


_S = _State()


def level_of(level):
    """The ls_level number of `level`: a name ("metrics", "collectives", "modules", "ops", or
    the singular) or a number 0..3. Raises ValueError otherwise."""
    if isinstance(level, str):
        if level in LEVELS:
            return LEVELS[level]
    elif isinstance(level, int) and 0 <= level <= _lib.LEVEL_OP:
        return level
    raise ValueError("unknown trace level %r\nhint: one of metrics, collectives, modules, ops" % (level,))


def _name(name):
    if isinstance(name, bytes):
        return name
    if not isinstance(name, str):
        raise TypeError("a record name is a str, not %s" % type(name).__name__)
    return name.encode("utf-8")


def last_error():
    """The calling thread's last error from the library ("" when none)."""
    s = _lib.load().ls_last_error()
    return s.decode("utf-8", "replace") if s else ""


def _fail(what, hint=None):
    msg = "%s failed\ndetail: %s" % (what, last_error() or "no detail from the library")
    if hint:
        msg += "\nhint: " + hint
    raise LockstepError(msg)


def init(trace=None, trace_dir=None, rank=None, run_id=None):
    """Configure from the environment and open this rank's trace (ls_init).

    The keyword arguments, when given, set LOCKSTEP_TRACE, LOCKSTEP_TRACE_DIR, LOCKSTEP_RANK
    and LOCKSTEP_RUN_ID in os.environ first (so child processes see them too). When
    LOCKSTEP_TRACE is unset, it is set to DEFAULT_TRACE ("modules"). Calling init again
    while initialized does nothing. When the agent already started by itself (LD_PRELOAD
    under the Slurm plugin), its configuration stands and these arguments have no effect.
    Raises LockstepError with the library's reason on failure."""
    lib = _lib.load()
    if is_active():  # started already (by us, or by itself under LD_PRELOAD): its configuration stands
        _S.initialized = True
        return
    if trace is not None:
        os.environ["LOCKSTEP_TRACE"] = trace
        _S.defaulted_trace = False
    elif not os.environ.get("LOCKSTEP_TRACE"):
        os.environ["LOCKSTEP_TRACE"] = DEFAULT_TRACE
        _S.defaulted_trace = True
    else:
        _S.defaulted_trace = False
    for var, val in (("LOCKSTEP_TRACE_DIR", trace_dir), ("LOCKSTEP_RANK", rank), ("LOCKSTEP_RUN_ID", run_id)):
        if val is not None:
            os.environ[var] = str(val)
    if lib.ls_init() < 0:
        _fail("lockstep.init", "check the LOCKSTEP_* variables (docs/api.md)")
    _S.initialized = True


def shutdown():
    """Flush and close the trace (ls_shutdown). Safe to call twice and before init."""
    if _S.step is not None:
        for fn in list(_S.listeners):
            fn("end", _S.step)
    _lib.load().ls_shutdown()
    _S.initialized = False
    _S.step = None
    _S.user_steps = False  # the next init starts a new trace


def is_active():
    """True when the library is initialized and recording (not LOCKSTEP_MODE=off)."""
    return _lib.load().ls_rank() >= 0


def _require(what):
    if not _S.initialized and not is_active():
        raise LockstepError("%s called before lockstep.init()\nhint: call lockstep.init() (or "
                            "lockstep.torch.watch(...), which calls it) first" % what)


def _begin(n):
    _lib.load().ls_step_begin(int(n))
    _S.step = int(n)
    for fn in list(_S.listeners):
        fn("begin", _S.step)


def _end():
    if _S.step is not None:
        for fn in list(_S.listeners):
            fn("end", _S.step)
    _lib.load().ls_step_end()


def step_begin(n):
    """Open step `n` (ls_step_begin): later records carry it and occurrence counts restart."""
    _require("lockstep.step_begin")
    _S.user_steps = True
    _begin(n)


def step_end():
    """Close the current step (ls_step_end), writing its records out."""
    _require("lockstep.step_end")
    _S.user_steps = True
    _end()


@contextlib.contextmanager
def step(n):
    """Context manager: step_begin(n) on entry, step_end() on exit (also on an exception)."""
    step_begin(n)
    try:
        yield n
    finally:
        _end()


def current_step():
    """The step this binding last opened, or None."""
    return _S.step


def metric(name, value):
    """Record a scalar (level metric) with its exact IEEE double bits. `value` may be anything
    float() takes (a Python number, a 0-d tensor, a numpy scalar). Raises LockstepError."""
    if _lib.load().ls_metric(_name(name), float(value)) < 0:
        _fail("lockstep.metric(%r)" % (name,))


def enabled(level="modules"):
    """True when a record of `level` would be kept at the current step on this rank."""
    return bool(_lib.load().ls_enabled(level_of(level)))


def tensor(name, obj, level="modules", chunk_bytes=None):
    """Fingerprint `obj` (LSFP-1 of its bytes) and record it at `level` (default module).

    `obj` is a torch tensor (CPU; CUDA hashed on the device through liblockstep_cuda's
    ls_tensor_device when it is there, else copied to the host with a one-time warning), a
    numpy array, or any buffer-protocol object. The record keeps the
    dtype and shape. `chunk_bytes` (a multiple of 8 from 64) sets the size of its chunk
    partials (ls_tensor_chunked): 4096 locates a change in a small routing map to its 4 KiB.
    Returns True when the record was kept, False when the trace window filters it out (then
    nothing is hashed or copied). Raises LockstepError, TypeError or ValueError on bad input."""
    lib = _lib.load()
    lv = level_of(level)
    bname = _name(name)
    if _S.initialized and not lib.ls_enabled(lv):
        return False
    v = view_of(obj)
    nd = len(v.shape)
    shape = (ctypes.c_int64 * nd)(*v.shape) if nd else None
    if chunk_bytes is not None:
        need("ls_tensor_chunked", "lockstep.tensor(chunk_bytes=...)")
        if v.device:
            _note_host_copy()
            v = view_of(v.keep.cpu())
        if lib.ls_tensor_chunked(lv, bname, v.ptr, v.nbytes, int(chunk_bytes), v.dtype, nd, shape) < 0:
            _fail("lockstep.tensor(%r, chunk_bytes=%r)" % (name, chunk_bytes))
        return True
    if v.device:
        dev = _lib.load_device()
        if dev is not None:
            rc = dev.lsk_tensor_device_at(lv, bname, v.ptr, v.nbytes, v.dtype, nd, shape, v.stream)
            if rc < 0:
                _fail("lockstep.tensor(%r) on the device" % (name,))
            return True
        _note_host_copy()
        v = view_of(v.keep.cpu())  # exact bytes; synchronizes with the device
    rc = lib.ls_tensor_at(lv, bname, v.ptr, v.nbytes, v.dtype, nd, shape)
    if rc < 0:
        _fail("lockstep.tensor(%r)" % (name,))
    return True


def _process_group_ranks(group):
    """The world ranks of `group` when it is a torch.distributed ProcessGroup (torch is looked for only when the
    program imported it), else None."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is None or not dist.is_available() or not isinstance(group, dist.ProcessGroup):
        return None
    if not dist.is_initialized():
        raise ValueError("replica group is a ProcessGroup, but torch.distributed is not initialized")
    return sorted(int(r) for r in dist.get_process_group_ranks(group))


def group_ranks(group):
    """The world ranks of a replica group as a list of ints, or None for every rank of the job: `group` is None,
    a torch.distributed ProcessGroup (its ranks by get_process_group_ranks: torch's global ranks, which are the
    job's world ranks under torchrun and srun) or an iterable of non-negative ints (world ranks, in any order).
    Raises TypeError or ValueError."""
    if group is None:
        return None
    pg = _process_group_ranks(group)
    if pg is not None:
        return pg
    if isinstance(group, (str, bytes)):
        raise TypeError("a replica group is a list of world ranks or None, not %s" % type(group).__name__)
    try:
        ranks = [int(r) for r in group]
    except TypeError as e:
        raise TypeError("a replica group is a list of world ranks, a torch ProcessGroup or None, not %s"
                        % type(group).__name__) from e
    if not ranks or min(ranks) < 0:
        raise ValueError("replica group %r\ndetail: it needs at least one world rank, none negative" % (ranks,))
    return ranks


def replicated(name, obj, group=None):
    """Record `obj` as a replica (ls_replica): a tensor every rank of `group` must hold bit-identical here (a
    data-parallel replica's parameters after the optimizer step, a weight replicated across a tensor-parallel
    group). `group` lists world ranks (any order) or is a torch ProcessGroup; None means every rank of the job.
    Every member calls it in the same order, and lockstepd compares the members' copies within the run, with no
    twin. `obj` is what lockstep.tensor takes; a CUDA tensor is hashed on its GPU (ls_replica_device), or copied to
    the host where liblockstep_cuda is not found. Raises LockstepError, TypeError or ValueError."""
    lib = _lib.load()
    need("ls_replica", "lockstep.replicated")
    bname = _name(name)
    ranks = group_ranks(group)
    v = view_of(obj)
    comm = None
    if ranks is not None:
        arr = (ctypes.c_int * len(ranks))(*ranks)
        comm = _lib.Comm(len(ranks), arr)
    cref = ctypes.byref(comm) if comm is not None else None
    if v.device:
        if not _replica_admitted(lib):
            return  # the trace window leaves it out: no work on the device
        dev = _lib.load_device()
        if dev is not None and hasattr(dev, "ls_replica_device"):
            if dev.ls_replica_device(bname, v.ptr, v.nbytes, v.dtype, cref, v.stream) < 0:
                _fail("lockstep.replicated(%r) on the device" % (name,))
            return
        _note_replica_copy()
        v = view_of(v.keep.cpu())  # exact bytes; synchronizes with the device
    if lib.ls_replica(bname, v.ptr, v.nbytes, v.dtype, cref) < 0:
        _fail("lockstep.replicated(%r)" % (name,))


def _replica_admitted(lib):
    """Whether ls_replica would keep a record now (level collective, or the consensus mode, which keeps replicas
    whatever ls_enabled says of collectives)."""
    return os.environ.get("LOCKSTEP_MODE") == "consensus" or bool(lib.ls_enabled(_lib.LEVEL_COLLECTIVE))


_noted_replica_copy = False


def _note_replica_copy():
    global _noted_replica_copy
    if not _noted_replica_copy:
        _noted_replica_copy = True
        warnings.warn("lockstep: replicas on a GPU are copied to the host to be fingerprinted (the same bits)\n"
                      "detail: liblockstep_cuda (ls_replica_device, which hashes them on the GPU) was not found: %s\n"
                      "hint: build with CUDA=1 or set LOCKSTEP_CUDA_LIB; meanwhile check them less often "
                      "(LOCKSTEP_REPLICA_EVERY) when the copy shows in the step time" % (_lib.device_note() or
                                                                                        "it lacks the function"),
                      RuntimeWarning, stacklevel=3)


_noted_host_copy = False


def need(fn, what):
    """Raise LockstepError when the loaded library lacks `fn` (an older liblockstep)."""
    if not hasattr(_lib.load(), fn):
        raise LockstepError("%s needs %s\ndetail: %s predates it\nhint: rebuild liblockstep" %
                            (what, fn, (_lib.where() or (None, None))[1] or "the loaded liblockstep"))


def fail(what, hint=None):
    """Raise LockstepError for a failed ls_* call, with the library's reason."""
    _fail(what, hint)


def note_host_copy():
    """Warn once that CUDA tensors are copied to the host to be fingerprinted."""
    _note_host_copy()


def _note_host_copy():
    global _noted_host_copy
    if not _noted_host_copy:
        _noted_host_copy = True
        warnings.warn("lockstep: CUDA tensors are copied to the host to be fingerprinted (slower, same bits)\n"
                      "detail: %s\nhint: build with CUDA (`make` where nvcc exists) for device fingerprints"
                      % _lib.device_note(), RuntimeWarning, stacklevel=3)


def record_fp(name, fp, nbytes, dtype, shape=(), level="ops", inputs=()):
    """Record a fingerprint computed elsewhere (ls_record_fp): `fp` (int), `nbytes`, `dtype` (an
    ls_dtype number or name), `shape`, with the fingerprints of the inputs that produced it (at
    most 16), so that `lockstep narrow` can tell "the output differs while the inputs matched"
    from "the inputs already differed". Raises LockstepError, ValueError."""
    lib = _lib.load()
    if not hasattr(lib, "ls_record_fp"):
        raise LockstepError("lockstep.record_fp needs ls_record_fp\ndetail: %s predates it\nhint: rebuild "
                            "liblockstep" % (_lib.where()[1] or "the loaded liblockstep"))
    if len(inputs) > _lib.MAX_INPUTS:
        raise ValueError("%d input fingerprints; a record holds at most %d" % (len(inputs), _lib.MAX_INPUTS))
    dt = _lib.DTYPES[dtype] if isinstance(dtype, str) else int(dtype)
    nd = len(shape)
    sh = (ctypes.c_int64 * nd)(*shape) if nd else None
    ins = (ctypes.c_uint64 * len(inputs))(*inputs) if inputs else None
    if lib.ls_record_fp(level_of(level), _name(name), fp, nbytes, dt, nd, sh, len(inputs), ins) < 0:
        _fail("lockstep.record_fp(%r)" % (name,))


def host_fingerprint(obj):
    """(fp, nbytes, dtype, shape) of a host object, as lockstep.tensor would record it; None for
    a CUDA tensor (which is hashed on its device only when recorded)."""
    v = view_of(obj)
    if v.device:
        return None
    return int(_lib.load().ls_fingerprint(v.ptr, v.nbytes)), v.nbytes, v.dtype, v.shape


def fingerprint(obj):
    """LSFP-1 of `obj`'s bytes (as lockstep.tensor records it), an int. CUDA tensors are
    copied to the host."""
    v = view_of(obj)
    if v.device:
        v = view_of(v.keep.cpu())
    return int(_lib.load().ls_fingerprint(v.ptr, v.nbytes))


def manifest_set(key, value):
    """Report a fact of the configuration this rank really runs with (ls_manifest_set): the manifest lockstepd
    holds carries it as used.KEY, and twins compare it as configuration. Returns False when the loaded library
    predates ls_manifest_set or refuses the fact; never raises."""
    try:
        lib = _lib.load()
    except _lib.LibraryNotFound:
        return False
    if not hasattr(lib, "ls_manifest_set"):
        return False
    return lib.ls_manifest_set(str(key).encode(), str(value).encode()) == 0


def run_id():
    """This process's run id (str), or None before init."""
    s = _lib.load().ls_run_id()
    return s.decode() if s else None


def rank():
    """This process's rank, or -1 before init."""
    return int(_lib.load().ls_rank())


def add_step_listener(fn):
    """Call fn(event, step) after each step begins ("begin") and before each ends ("end")."""
    _S.listeners.append(fn)


def remove_step_listener(fn):
    """Undo add_step_listener (no error when absent)."""
    if fn in _S.listeners:
        _S.listeners.remove(fn)


def defaulted_trace():
    """True when init() started the agent with DEFAULT_TRACE because LOCKSTEP_TRACE was unset."""
    return _S.defaulted_trace and _S.initialized


def user_steps():
    """True once the program has called step()/step_begin()/step_end() itself."""
    return _S.user_steps


def auto_step_begin(n):
    """Open step `n` for an integration that numbers steps by itself (lockstep.torch.watch
    with an optimizer); unlike step_begin it does not mark the program as numbering steps."""
    _begin(n)


def auto_step_end():
    """Close the open step for such an integration."""
    _end()
