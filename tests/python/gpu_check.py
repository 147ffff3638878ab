"""gpu_check.py - device checks of the Python binding, for a machine with a GPU (run by gpu-check.sh).

With a CUDA build of torch: CUDA tensors recorded by lockstep.tensor, and replicas recorded by
lockstep.replicated (hashed on the GPU), carry the fingerprint of their host copy, and
lockstep.torch.watch on a CUDA model gives matching twins. Without one
(Debian's torch is CPU-only): the same device fingerprints through buffers allocated with the
CUDA runtime over ctypes, through the binding's own liblockstep_cuda prototypes.
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import CLI, dump  # noqa: E402

import lockstep  # noqa: E402
from lockstep import _lib  # noqa: E402

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s %s" % ("ok  " if ok else "FAIL", name, detail))


def sizes():
    return [0, 1, 7, 8, 9, 4096, 1 << 20, (3 << 20) + 5]


def pattern(n):
    return bytes(((i * 131 + (i >> 8)) % 256) for i in range(n)) if n < 5000 else \
        (bytes(range(256)) * (n // 256 + 1))[:n]


def with_cudart(d):
    cudart = None
    for p in ("libcudart.so", "/usr/local/cuda/lib64/libcudart.so"):
        try:
            cudart = ctypes.CDLL(p)
            break
        except OSError:
            continue
    if cudart is None:
        check("cudart loads", False, "no libcudart")
        return
    dev = _lib.load_device()
    check("liblockstep_cuda loads", dev is not None, _lib.device_note())
    if dev is None:
        return
    lockstep.init(trace="modules", trace_dir=d, rank=0)
    want = []
    with lockstep.step(0):
        for n in sizes():
            host = pattern(n)
            ptr = ctypes.c_void_p()
            if cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(max(n, 1))) != 0:
                check("cudaMalloc %d" % n, False)
                continue
            cudart.cudaMemcpy(ptr, host, ctypes.c_size_t(n), 1)  # host to device
            shape = (ctypes.c_int64 * 1)(n)
            rc = dev.lsk_tensor_device_at(2, b"buf", ptr if n else None, n, 12, 1, shape, None)
            check("device record %d bytes" % n, rc == 0, lockstep.last_error())
            want.append("%016x" % lockstep.fingerprint(host))
            cudart.cudaFree(ptr)
    lockstep.shutdown()
    got = [r["fp"] for r in dump(d)]
    check("device fingerprints equal host LSFP-1", len(got) == len(sizes()) and got == want,
          "%s vs %s" % (got, want))


def with_torch(d, torch):
    lockstep.init(trace="modules", trace_dir=d, rank=0)
    ts = [torch.randn(n, device="cuda") for n in (1, 1000, 300000)] + [torch.randn(64, 32, device="cuda").t()]
    with lockstep.step(0):
        for t in ts:
            lockstep.tensor("t", t)
    lockstep.shutdown()
    got = [r["fp"] for r in dump(d)]
    want = ["%016x" % lockstep.fingerprint(t.cpu()) for t in ts]
    check("CUDA tensors hash like their host copies", got == want, "%s vs %s" % (got, want))
    check("hashed on the device", _lib.load_device() is not None, _lib.device_note())
    # replicas on the GPU: hashed there (ls_replica_device), no copy to the host, the same fingerprints
    rep = os.path.join(d, "rep")
    lockstep.init(trace="collectives", trace_dir=rep, rank=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lockstep.step(0):
            for t in ts:
                lockstep.replicated("w", t)
    lockstep.shutdown()
    got = [r["fp"] for r in dump(rep) if r["name"] == "w"]
    copied = [str(x.message) for x in caught if "copied to the host" in str(x.message)]
    check("CUDA replicas hash on the device like their host copies", got == want and not copied,
          "%s vs %s%s" % (got, want, " (copied: %s)" % copied[0] if copied else ""))
    runs = []
    for k in ("a", "b"):
        out = os.path.join(d, k)
        code = ("import torch, lockstep, lockstep.torch\n"
                "torch.manual_seed(0)\nm = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), "
                "torch.nn.Linear(256, 1)).cuda()\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                "c = torch.nn.MSELoss()\nlockstep.torch.watch(m, o, loss_fn=c)\n"
                "x = torch.randn(512, 64, device='cuda'); y = torch.randn(512, 1, device='cuda')\n"
                "for _ in range(5):\n    o.zero_grad(); c(m(x), y).backward(); o.step()\nlockstep.shutdown()\n")
        env = dict(os.environ, LOCKSTEP_TRACE_DIR=out, LOCKSTEP_MODE="det")
        p = subprocess.run([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
        check("CUDA training run %s" % k, p.returncode == 0, p.stderr[-500:])
        runs.append(out)
    p = subprocess.run([CLI, "diff", runs[0], runs[1]], stdout=subprocess.PIPE, text=True)
    check("CUDA twins match under det", p.returncode == 0, p.stdout[-800:])


def main():
    d = tempfile.mkdtemp(prefix="ls-gpu-")
    try:
        import torch
        has = torch.cuda.is_available()
    except ImportError:
        torch, has = None, False
    if has:
        with_torch(d, torch)
    else:
        print("note: no CUDA build of torch here; checking device fingerprints through the CUDA runtime")
        with_cudart(d)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
