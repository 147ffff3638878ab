"""_lib.py - find and load liblockstep with ctypes, and declare the C prototypes of include/lockstep.h."""

import ctypes
import ctypes.util
import os

# Levels and dtypes: the numeric values of include/lockstep.h (part of the record format).
LEVEL_METRIC, LEVEL_COLLECTIVE, LEVEL_MODULE, LEVEL_OP = 0, 1, 2, 3

DTYPES = {
    "bytes": 0, "f64": 1, "f32": 2, "f16": 3, "bf16": 4, "i64": 5, "i32": 6, "i16": 7, "i8": 8,
    "u64": 9, "u32": 10, "u16": 11, "u8": 12, "bool": 13, "f8e4m3": 14, "f8e5m2": 15, "f4e2m1": 16, "e8m0": 17,
}

# ls_state_begin kinds (include/lockstep.h)
STATE_SAVED, STATE_RESTORED = 1, 2

MAX_DIMS = 8
NAME_MAX = 255
MAX_INPUTS = 16

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# agent/python/lockstep -> the repository root, when the package is imported from the build tree.
_REPO_ROOT = os.path.normpath(os.path.join(_PKG_DIR, "..", "..", ".."))


class Comm(ctypes.Structure):
    """struct ls_comm: a group's process count and the world ranks it spans."""
    _fields_ = [("size", ctypes.c_int), ("world_ranks", ctypes.POINTER(ctypes.c_int))]


class LibraryNotFound(OSError):
    """liblockstep could not be found or loaded."""


def _preloaded():
    """The process's global symbol scope when liblockstep is already in it (LD_PRELOAD, or a
    program that links it and embeds Python), else None. Loading a second copy would open the
    same per-rank trace file twice, so an agent already in the process always wins."""
    try:
        glob = ctypes.CDLL(None)
        glob.ls_init  # noqa: B018 - AttributeError when the symbol is absent
        return glob
    except (AttributeError, OSError):
        return None


def _build_tree_candidates():
    """liblockstep paths in the build tree beside this package: $LOCKSTEP_BUILD/lib first (the
    test harness sets it), then build/lib and build/san/lib."""
    dirs = []
    b = os.environ.get("LOCKSTEP_BUILD")
    if b:
        dirs.append(b if os.path.isabs(b) else os.path.join(_REPO_ROOT, b))
    dirs += [os.path.join(_REPO_ROOT, "build"), os.path.join(_REPO_ROOT, "build", "san")]
    return [os.path.join(d, "lib", "liblockstep.so") for d in dirs]


def find_library():
    """(how, path) of the library that load() would use; how is one of "preloaded",
    "LOCKSTEP_LIB", "build tree", "install prefix", "system". Raises LibraryNotFound with a hint when none is
    found."""
    if _preloaded() is not None:
        return "preloaded", None
    env = os.environ.get("LOCKSTEP_LIB")
    if env:
        if not os.path.exists(env):
            raise LibraryNotFound(
                "liblockstep not found\ndetail: LOCKSTEP_LIB=%s does not exist\n"
                "hint: point LOCKSTEP_LIB at build/lib/liblockstep.so, or unset it" % env)
        return "LOCKSTEP_LIB", env
    for p in _build_tree_candidates():
        if os.path.exists(p):
            return "build tree", p
    # `make python-install` puts the package in PREFIX/lib/python3.X/dist-packages, and
    # `make install` the library in PREFIX/lib
    p = os.path.normpath(os.path.join(_PKG_DIR, "..", "..", "..", "liblockstep.so"))
    if os.path.exists(p):
        return "install prefix", p
    p = ctypes.util.find_library("lockstep")
    if p:
        return "system", p
    raise LibraryNotFound(
        "liblockstep not found\ndetail: no LOCKSTEP_LIB, no build/lib/liblockstep.so beside this "
        "package, none on the system library path\nhint: run `make` in the repository, "
        "`make install`, or set LOCKSTEP_LIB=/path/to/liblockstep.so")


def _declare(lib):
    """Set argtypes/restype of every public function on `lib`. Optional symbols
    (ls_tensor_device, only in a CUDA build) are declared when present."""
    c = ctypes
    i64p = c.POINTER(c.c_int64)
    lib.ls_init.argtypes, lib.ls_init.restype = [], c.c_int
    lib.ls_shutdown.argtypes, lib.ls_shutdown.restype = [], None
    lib.ls_step_begin.argtypes, lib.ls_step_begin.restype = [c.c_int64], None
    lib.ls_step_end.argtypes, lib.ls_step_end.restype = [], None
    lib.ls_metric.argtypes, lib.ls_metric.restype = [c.c_char_p, c.c_double], c.c_int
    lib.ls_tensor.argtypes = [c.c_char_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, i64p]
    lib.ls_tensor.restype = c.c_int
    lib.ls_tensor_at.argtypes = [c.c_int, c.c_char_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, i64p]
    lib.ls_tensor_at.restype = c.c_int
    lib.ls_enabled.argtypes, lib.ls_enabled.restype = [c.c_int], c.c_int
    lib.ls_last_error.argtypes, lib.ls_last_error.restype = [], c.c_char_p
    lib.ls_fingerprint.argtypes, lib.ls_fingerprint.restype = [c.c_void_p, c.c_size_t], c.c_uint64
    lib.ls_run_id.argtypes, lib.ls_run_id.restype = [], c.c_char_p
    lib.ls_rank.argtypes, lib.ls_rank.restype = [], c.c_int
    u64, sz, vp = c.c_uint64, c.c_size_t, c.c_void_p
    optional = {  # newer entry points: declared when the loaded library has them
        "ls_tensor_chunked": ([c.c_int, c.c_char_p, vp, sz, sz, c.c_int, c.c_int, i64p], c.c_int),
        "ls_tensor_shard": ([c.c_char_p, vp, sz, u64, u64, c.c_int, c.c_int, i64p], c.c_int),
        "ls_tensor_scaled": ([c.c_char_p, vp, sz, c.c_int, c.c_int, i64p, vp, sz, c.c_int, c.c_int, i64p], c.c_int),
        "ls_state_begin": ([c.c_int64, c.c_int], c.c_int),
        "ls_state": ([c.c_char_p, vp, sz, c.c_int, c.c_int, i64p], c.c_int),
        "ls_state_fp": ([c.c_char_p, u64, u64, c.c_int, c.c_int, i64p], c.c_int),
        "ls_state_end": ([], c.c_int),
        "ls_manifest_set": ([c.c_char_p, c.c_char_p], c.c_int),
        "ls_replica": ([c.c_char_p, vp, sz, c.c_int, c.POINTER(Comm)], c.c_int),
    }
    for fn, (args, res) in optional.items():
        if hasattr(lib, fn):
            f = getattr(lib, fn)
            f.argtypes, f.restype = args, res
    if hasattr(lib, "ls_record_fp"):
        lib.ls_record_fp.argtypes = [c.c_int, c.c_char_p, c.c_uint64, c.c_uint64, c.c_int, c.c_int, i64p, c.c_int,
                                     c.POINTER(c.c_uint64)]
        lib.ls_record_fp.restype = c.c_int


def _declare_device(dev):
    """Prototype of lsk_tensor_device_at(level, name, dptr, nbytes, dtype, ndim, shape,
    stream), the explicit-level form of ls_tensor_device (kernels/tensor_device.h), and of
    ls_state_device and ls_replica_device where the library has them."""
    c = ctypes
    dev.lsk_tensor_device_at.argtypes = [c.c_int, c.c_char_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int,
                                         c.POINTER(c.c_int64), c.c_void_p]
    dev.lsk_tensor_device_at.restype = c.c_int
    if hasattr(dev, "ls_state_device"):
        dev.ls_state_device.argtypes = [c.c_char_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.POINTER(c.c_int64),
                                        c.c_void_p]
        dev.ls_state_device.restype = c.c_int
    if hasattr(dev, "ls_replica_device"):
        dev.ls_replica_device.argtypes = [c.c_char_p, c.c_void_p, c.c_size_t, c.c_int, c.POINTER(Comm), c.c_void_p]
        dev.ls_replica_device.restype = c.c_int


_lib = None
_where = None


def load():
    """The loaded library (cached), with its prototypes declared. Raises LibraryNotFound."""
    global _lib, _where
    if _lib is not None:
        return _lib
    how, path = find_library()
    if how == "preloaded":
        lib = _preloaded()
    else:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryNotFound("liblockstep could not be loaded\ndetail: %s: %s\n"
                                  "hint: rebuild it with `make`, or set LOCKSTEP_LIB" % (path, e)) from e
    _declare(lib)
    _lib, _where = lib, (how, path)
    return lib


def where():
    """(how, path) of the loaded library, or None before load()."""
    return _where


_dev = None
_dev_note = None


def load_device():
    """The library with lsk_tensor_device_at (device LSFP-1, the kernels part), or None with
    device_note() saying why. Looked up, once, in the process (preloaded), in LOCKSTEP_CUDA_LIB,
    beside the loaded liblockstep (liblockstep_cuda.so), then on the system path. It needs the
    CUDA runtime, so it is only loaded when a CUDA tensor is first recorded."""
    global _dev, _dev_note
    if _dev is not None or _dev_note is not None:
        return _dev
    main = load()
    cands = []
    if hasattr(main, "lsk_tensor_device_at"):
        cands.append(("", main))
    g = _preloaded()
    if g is not None and hasattr(g, "lsk_tensor_device_at"):
        cands.append(("", g))
    if os.environ.get("LOCKSTEP_CUDA_LIB"):
        cands.append((os.environ["LOCKSTEP_CUDA_LIB"], None))
    if _where and _where[1]:
        cands.append((os.path.join(os.path.dirname(_where[1]), "liblockstep_cuda.so"), None))
    sysp = ctypes.util.find_library("lockstep_cuda")
    if sysp:
        cands.append((sysp, None))
    why = []
    for path, lib in cands:
        if lib is None:
            if os.sep in path and not os.path.exists(path):
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                why.append("%s: %s" % (path, e))
                continue
        if hasattr(lib, "lsk_tensor_device_at"):
            _declare_device(lib)
            _dev = lib
            return _dev
    _dev_note = ("; ".join(why) if why else "no liblockstep_cuda.so (the library was built without CUDA)")
    return None


def device_note():
    """Why load_device() found no device library ("" when it did or was not asked yet)."""
    return _dev_note or ""
