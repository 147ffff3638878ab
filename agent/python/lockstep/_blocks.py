"""_blocks.py - state blocks (what a program saves with a checkpoint and restores from one), shards of logical tensors, and scaled low-precision tensors."""

import contextlib
import ctypes
import struct

from . import _core, _lib
from ._buffers import view_of

_KINDS = {"saved": _lib.STATE_SAVED, "restored": _lib.STATE_RESTORED,
          _lib.STATE_SAVED: _lib.STATE_SAVED, _lib.STATE_RESTORED: _lib.STATE_RESTORED}


def _shape(dims):
    nd = len(dims)
    return nd, ((ctypes.c_int64 * nd)(*[int(d) for d in dims]) if nd else None)


def _host(v):
    """A host View of `v` (a CUDA tensor is copied, with the one-time note)."""
    if v.device:
        _core.note_host_copy()
        return view_of(v.keep.cpu())
    return v


def state_begin(step, kind):
    """Open a state block at `step` (ls_state_begin): kind "saved" where the program writes a
    checkpoint, "restored" right after it loaded one (the same step number in both). Raises
    LockstepError (a block is open already, an unknown kind)."""
    _core.need("ls_state_begin", "lockstep.state_begin")
    if kind not in _KINDS:
        raise ValueError("unknown state block kind %r\nhint: \"saved\" or \"restored\"" % (kind,))
    if _lib.load().ls_state_begin(int(step), _KINDS[kind]) < 0:
        _core.fail("lockstep.state_begin(%r, %r)" % (step, kind))


def state_end():
    """Close the open state block (ls_state_end) and write it out. Raises LockstepError."""
    _core.need("ls_state_end", "lockstep.state_end")
    if _lib.load().ls_state_end() < 0:
        _core.fail("lockstep.state_end()")


@contextlib.contextmanager
def state(step, kind):
    """Context manager: state_begin(step, kind) on entry, state_end() on exit (also on an exception)."""
    state_begin(step, kind)
    try:
        yield
    finally:
        state_end()


def _value_view(obj):
    """A View of a state entry's value: tensors, arrays and buffers as lockstep.tensor takes them;
    Python ints as i64, floats as f64 (exact bits), bools as bool, str as UTF-8 bytes, None as
    nothing, and lists or tuples of numbers as an f64 array."""
    if isinstance(obj, bool):
        return view_of(struct.pack("<?", obj)), _lib.DTYPES["bool"], ()
    if isinstance(obj, int):
        return view_of(struct.pack("<q", obj)), _lib.DTYPES["i64"], ()
    if isinstance(obj, float):
        return view_of(struct.pack("<d", obj)), _lib.DTYPES["f64"], ()
    if isinstance(obj, str):
        b = obj.encode("utf-8")
        return view_of(b), _lib.DTYPES["bytes"], (len(b),)
    if obj is None:
        return view_of(b""), _lib.DTYPES["bytes"], (0,)
    if isinstance(obj, (list, tuple)) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in obj):
        b = struct.pack("<%dd" % len(obj), *[float(x) for x in obj])
        return view_of(b), _lib.DTYPES["f64"], (len(obj),)
    v = view_of(obj)
    return v, v.dtype, v.shape


def state_entry(name, obj):
    """Record one entry of the open state block (ls_state): LSFP-1 of `obj` (a torch tensor — a CUDA
    one hashed on its device through liblockstep_cuda when it is there —, a numpy array, a buffer,
    or a Python number, string or list of numbers). A one-element entry keeps its value bits.
    Raises LockstepError (no block is open), TypeError."""
    _core.need("ls_state", "lockstep.state_entry")
    lib = _lib.load()
    v, dtype, dims = _value_view(obj)
    nd, shape = _shape(dims)
    bname = _core._name(name)
    if v.device:
        dev = _lib.load_device()
        if dev is not None and hasattr(dev, "ls_state_device"):
            if dev.ls_state_device(bname, v.ptr, v.nbytes, dtype, nd, shape, v.stream) < 0:
                _core.fail("lockstep.state_entry(%r) on the device" % (name,))
            return
        v = _host(v)
    if lib.ls_state(bname, v.ptr, v.nbytes, dtype, nd, shape) < 0:
        _core.fail("lockstep.state_entry(%r)" % (name,))


def tensor_shard(name, shard, offset, total_nbytes, full_shape):
    """Record `shard`, the bytes [offset, offset + nbytes) of a logical tensor of `total_nbytes`
    bytes and shape `full_shape` (ls_tensor_shard, level module): a contiguous piece such as a
    block of rows of a row-major matrix, or a slice of a flattened parameter. Its fingerprint is
    taken at the shard's global word positions, so the shards of a step add up to the whole
    tensor's LSFP-1 whatever the number of ranks (`lockstep diff --logical`). `offset` must be a
    multiple of 8 bytes; a column block of a row-major matrix is not contiguous and is not a shard
    (record it with lockstep.tensor, or its .contiguous() copy as its own tensor). Returns True
    when recorded, False when the trace window filters it out. Raises LockstepError with the
    rule that was broken."""
    _core.need("ls_tensor_shard", "lockstep.tensor_shard")
    lib = _lib.load()
    if not lib.ls_enabled(_lib.LEVEL_MODULE) and _core.is_active():
        return False
    v = _host(view_of(shard))
    nd, shape = _shape(full_shape)
    if lib.ls_tensor_shard(_core._name(name), v.ptr, v.nbytes, int(offset), int(total_nbytes), v.dtype, nd,
                           shape) < 0:
        _core.fail("lockstep.tensor_shard(%r)" % (name,),
                   "offsets are in bytes of the whole tensor: a block of rows lo.. of a row-major matrix "
                   "starts at lo * row_bytes")
    return True


def tensor_scaled(name, values, scales):
    """Record a low-precision tensor and its scale buffer as one record (ls_tensor_scaled, level
    module): both get a fingerprint, and a change in either is a divergence that says which
    (MXFP8: float8 values with e8m0 scales; NVFP4: packed fp4 values with float8_e4m3 scales).
    `values` and `scales` are torch tensors (float8 and float4 dtypes where torch has them),
    numpy arrays or buffers. Returns True when recorded, False when filtered out."""
    _core.need("ls_tensor_scaled", "lockstep.tensor_scaled")
    lib = _lib.load()
    if not lib.ls_enabled(_lib.LEVEL_MODULE) and _core.is_active():
        return False
    v = _host(view_of(values))
    s = _host(view_of(scales))
    nd, shape = _shape(v.shape)
    snd, sshape = _shape(s.shape)
    if lib.ls_tensor_scaled(_core._name(name), v.ptr, v.nbytes, v.dtype, nd, shape, s.ptr, s.nbytes, s.dtype, snd,
                            sshape) < 0:
        _core.fail("lockstep.tensor_scaled(%r)" % (name,))
    return True


def rng_entries():
    """The random number generators' states this process holds, as (name, value) pairs: "rng.torch"
    (torch's CPU generator), "rng.cuda.N" (each initialized CUDA device), "rng.numpy" (numpy's global
    generator) and "rng.python" (the random module), for those that are imported."""
    import random
    import sys

    out = []
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append(("rng.torch", torch.get_rng_state()))
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            for i, st in enumerate(torch.cuda.get_rng_state_all()):
                out.append(("rng.cuda.%d" % i, st))
    np = sys.modules.get("numpy")
    if np is not None:
        algo, keys, pos, has_gauss, cached = np.random.get_state()
        out.append(("rng.numpy", algo.encode() + np.asarray(keys, dtype="<u4").tobytes() +
                    struct.pack("<iid", int(pos), int(has_gauss), float(cached))))
    version, internal, gauss = random.getstate()
    gauss_bits = struct.pack("<d", gauss) if gauss is not None else b"none"
    out.append(("rng.python", struct.pack("<i%dQ" % len(internal), version, *internal) + gauss_bits))
    return out

