"""_buffers.py - turn torch tensors, numpy arrays and buffer-protocol objects into (pointer, bytes, dtype, shape)."""

import ctypes
import struct
import sys

from ._lib import DTYPES, MAX_DIMS


class View:
    """Host bytes ready for ls_tensor: `ptr` (an int address, or a bytes object ctypes passes
    as is), `nbytes`, `dtype` (an ls_dtype number), `shape` (tuple). `keep` holds whatever owns
    the memory (a contiguous copy, the original tensor) until the C call returns. `device`
    is set for CUDA tensors (ptr is then a device address and `stream` the current CUDA stream
    handle, for ls_tensor_device)."""

    __slots__ = ("ptr", "nbytes", "dtype", "shape", "keep", "device", "stream")

    def __init__(self, ptr, nbytes, dtype, shape, keep, device=False, stream=None):
        self.ptr, self.nbytes, self.dtype, self.shape = ptr, nbytes, dtype, tuple(int(s) for s in shape)
        self.keep, self.device, self.stream = keep, device, stream


# struct/buffer-protocol format characters (native size) -> ls_dtype.
_FORMATS = {
    "d": "f64", "f": "f32", "e": "f16", "q": "i64", "l": "i64", "i": "i32", "h": "i16", "b": "i8",
    "Q": "u64", "L": "u64", "I": "u32", "H": "u16", "B": "u8", "c": "u8", "?": "bool",
}

_TORCH_DTYPES = None


def _torch_dtypes(torch):
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        m = {
            torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
            torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
            torch.uint8: "u8", torch.bool: "bool",
        }
        for attr, name in (("float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2"), ("float8_e8m0fnu", "e8m0"),
                           ("float4_e2m1fn_x2", "f4e2m1"),
                           ("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64")):
            if hasattr(torch, attr):
                m[getattr(torch, attr)] = name
        _TORCH_DTYPES = {k: DTYPES[v] for k, v in m.items()}
    return _TORCH_DTYPES


def _check_ndim(shape):
    if len(shape) > MAX_DIMS:
        raise ValueError("tensor has %d dimensions\ndetail: a record holds at most %d\n"
                         "hint: record a reshaped view, e.g. t.flatten(%d)" % (len(shape), MAX_DIMS, MAX_DIMS - 1))


def from_torch(t):
    """View of a torch tensor's logical contents (detached; made contiguous, conj/neg bits
    resolved). A CUDA tensor stays on its device (View.device; the caller hashes it there or
    copies it to the host); other devices are copied to the host."""
    import torch

    if t.layout != torch.strided:
        raise TypeError("cannot fingerprint a %s tensor\ndetail: only strided (dense) tensors hold plain "
                        "bytes\nhint: record t.to_dense()" % t.layout)
    if t.is_quantized:
        t = t.int_repr()
    t = t.detach()
    if t.is_complex():
        t = t.resolve_conj()
    if hasattr(t, "resolve_neg"):
        t = t.resolve_neg()
    dtype = _torch_dtypes(torch).get(t.dtype, DTYPES["bytes"])
    _check_ndim(t.shape)
    shape = tuple(t.shape)
    if dtype == DTYPES["f4e2m1"] and shape:  # float4_e2m1fn_x2 packs two values a byte: the record counts values
        shape = shape[:-1] + (shape[-1] * 2,)
    if t.device.type == "cuda":
        t = t.contiguous()
        stream = torch.cuda.current_stream(t.device).cuda_stream
        return View(t.data_ptr(), t.numel() * t.element_size(), dtype, shape, t, device=True, stream=stream)
    if t.device.type != "cpu":
        t = t.cpu()  # synchronizes with the device; exact bytes
    t = t.contiguous()
    return View(t.data_ptr(), t.numel() * t.element_size(), dtype, shape, t)


def from_numpy(a):
    """View of a numpy array (made C-contiguous and native-endian: the same values hash the same)."""
    import numpy as np

    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    a = np.ascontiguousarray(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    name = {("f", 8): "f64", ("f", 4): "f32", ("f", 2): "f16", ("i", 8): "i64", ("i", 4): "i32",
            ("i", 2): "i16", ("i", 1): "i8", ("u", 8): "u64", ("u", 4): "u32", ("u", 2): "u16",
            ("u", 1): "u8", ("b", 1): "bool"}.get((kind, size), "bytes")
    _check_ndim(a.shape)
    return View(a.ctypes.data, a.nbytes, DTYPES[name], a.shape, a)


def from_buffer(obj):
    """View of any object with the buffer protocol (bytes, bytearray, memoryview, array.array,
    a numpy array)."""
    mv = memoryview(obj)
    fmt = mv.format.lstrip("@=<")
    dtype = DTYPES[_FORMATS[fmt]] if fmt in _FORMATS and mv.itemsize == struct.calcsize(fmt) else DTYPES["bytes"]
    shape = mv.shape if mv.shape is not None else (mv.nbytes,)
    _check_ndim(shape)
    if isinstance(obj, bytes):
        return View(obj, len(obj), dtype, shape, obj)  # ctypes passes a bytes object's storage as is
    if not mv.c_contiguous:
        data = mv.tobytes()  # C order
        return View(data, len(data), dtype, shape, data)
    if mv.readonly:
        data = mv.tobytes()
        return View(data, len(data), dtype, shape, data)
    if mv.nbytes == 0:
        return View(None, 0, dtype, shape, mv)
    arr = (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B"))
    return View(ctypes.addressof(arr), mv.nbytes, dtype, shape, (arr, mv))


def view_of(obj):
    """A View of `obj`: a torch tensor, a numpy array, or any buffer-protocol object. Raises
    TypeError for anything else."""
    torch = sys.modules.get("torch")  # a tensor exists only once torch is imported: never import it here
    if torch is not None and isinstance(obj, torch.Tensor):
        return from_torch(obj)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(obj, np.ndarray):
            return from_numpy(obj)
        if isinstance(obj, np.generic):
            return from_numpy(np.asarray(obj))
    try:
        return from_buffer(obj)
    except TypeError:
        raise TypeError("cannot fingerprint a %s\ndetail: lockstep.tensor takes torch tensors, numpy arrays "
                        "and objects with the buffer protocol\nhint: convert it, e.g. numpy.asarray(x)"
                        % type(obj).__name__) from None
