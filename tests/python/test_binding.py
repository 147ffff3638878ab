"""test_binding.py - the ctypes binding against the real liblockstep: fingerprints, dtypes, shapes, steps, windows, errors, loading, pip."""

import array
import ctypes
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

from helpers import BUILD_ABS, CLI, LIB, SRC, dump, env_for, run_py

sys.path.insert(0, os.path.join(SRC, "agent", "python"))
import lockstep  # noqa: E402

VECTORS = os.path.join(SRC, "tests", "data", "lsfp1-vectors.json")


def _vector_bytes(c):
    if c.get("hex") is not None:
        return bytes.fromhex(c["hex"])
    n = c["nbytes"]
    if c["name"] == "pattern_4096":
        return bytes((i * 31 + 7) % 256 for i in range(n))
    i = np.arange(n, dtype=np.int64)
    return ((i * 131 + (i >> 8)) % 256).astype(np.uint8).tobytes()


class Traced(unittest.TestCase):
    """Each test gets a fresh trace directory and a fresh ls_init."""

    trace = "modules"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ls-py-")
        self.saved = {k: os.environ.get(k) for k in ("LOCKSTEP_TRACE", "LOCKSTEP_TRACE_DIR", "LOCKSTEP_MODE",
                                                    "LOCKSTEP_RANK", "LOCKSTEP_RUN_ID")}
        for k in self.saved:
            os.environ.pop(k, None)
        lockstep.init(trace=self.trace, trace_dir=self.dir, rank=0, run_id="py-test")

    def tearDown(self):
        lockstep.shutdown()
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.dir, ignore_errors=True)

    def records(self):
        lockstep.shutdown()
        return dump(os.path.join(self.dir, "rank-00000.lstrace"))


class TestFingerprint(unittest.TestCase):
    def test_vectors(self):
        with open(VECTORS) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 10)
        for c in cases:
            data = _vector_bytes(c)
            self.assertEqual(len(data), c["nbytes"], c["name"])
            self.assertEqual("%016x" % lockstep.fingerprint(data), c["fp"], c["name"])
            self.assertEqual("%016x" % lockstep.fingerprint(bytearray(data)), c["fp"], c["name"])
            self.assertEqual("%016x" % lockstep.fingerprint(np.frombuffer(data, dtype=np.uint8)), c["fp"], c["name"])

    def test_same_values_same_fp_across_containers(self):
        vals = [1.0, 2.0, 3.0, 4.0]
        want = lockstep.fingerprint(struct.pack("<4f", *vals))
        self.assertEqual(lockstep.fingerprint(np.array(vals, dtype=np.float32)), want)
        self.assertEqual(lockstep.fingerprint(torch.tensor(vals, dtype=torch.float32)), want)
        self.assertEqual(lockstep.fingerprint(array.array("f", vals)), want)
        self.assertEqual(lockstep.fingerprint(np.array(vals, dtype=">f4")), want)  # byte order normalized

        class MyTensor(torch.Tensor):  # a subclass from outside torch
            pass

        self.assertEqual(lockstep.fingerprint(torch.tensor(vals).as_subclass(MyTensor)), want)
        self.assertEqual(lockstep.fingerprint(torch.nn.Parameter(torch.tensor(vals))), want)
        swapped = lockstep.fingerprint(np.array([2.0, 1.0, 3.0, 4.0], dtype=np.float32))
        self.assertNotEqual(swapped, want)

    def test_non_contiguous_hashes_logical_order(self):
        a = np.arange(24, dtype=np.float64).reshape(4, 6)
        self.assertEqual(lockstep.fingerprint(a.T), lockstep.fingerprint(np.ascontiguousarray(a.T)))
        self.assertEqual(lockstep.fingerprint(a[:, ::2]), lockstep.fingerprint(a[:, ::2].copy()))
        t = torch.arange(24, dtype=torch.float64).reshape(4, 6)
        self.assertEqual(lockstep.fingerprint(t.t()), lockstep.fingerprint(a.T))
        self.assertNotEqual(lockstep.fingerprint(t.t()), lockstep.fingerprint(t))

    def test_unsupported_object(self):
        with self.assertRaises(TypeError) as cm:
            lockstep.fingerprint(object())
        self.assertIn("buffer protocol", str(cm.exception))
        with self.assertRaises(TypeError):
            lockstep.fingerprint(torch.zeros(3).to_sparse())


class TestRecords(Traced):
    def test_numpy_dtypes_and_shapes(self):
        cases = [(np.float64, "f64"), (np.float32, "f32"), (np.float16, "f16"), (np.int64, "i64"),
                 (np.int32, "i32"), (np.int16, "i16"), (np.int8, "i8"), (np.uint64, "u64"), (np.uint32, "u32"),
                 (np.uint16, "u16"), (np.uint8, "u8"), (np.bool_, "bool"), (np.complex64, "bytes")]
        arrays = {}
        with lockstep.step(3):
            for dt, name in cases:
                a = (np.arange(30) % 7).astype(dt).reshape(2, 3, 5)
                arrays[name] = a
                self.assertTrue(lockstep.tensor("np." + name, a))
        recs = self.records()
        self.assertEqual([r["name"] for r in recs], ["np." + n for _, n in cases])
        for r, (_, name) in zip(recs, cases):
            self.assertEqual(r["dtype"], name)
            self.assertEqual(r["shape"], [2, 3, 5])
            self.assertEqual(r["step"], 3)
            self.assertEqual(r["level"], "module")
            self.assertEqual(r["nbytes"], arrays[name].nbytes)
            self.assertEqual(r["fp"], "%016x" % lockstep.fingerprint(arrays[name].tobytes()))

    def test_torch_dtypes(self):
        cases = [(torch.float64, "f64"), (torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16"),
                 (torch.int64, "i64"), (torch.int32, "i32"), (torch.int16, "i16"), (torch.int8, "i8"),
                 (torch.uint8, "u8"), (torch.bool, "bool")]
        with lockstep.step(0):
            for dt, name in cases:
                lockstep.tensor("t." + name, (torch.arange(12) % 5).to(dt).reshape(3, 4).t())
        recs = self.records()
        for r, (dt, name) in zip(recs, cases):
            self.assertEqual((r["name"], r["dtype"], r["shape"]), ("t." + name, name, [4, 3]))
            want = (torch.arange(12) % 5).to(dt).reshape(3, 4).t().contiguous()
            raw = want.view(torch.uint8) if want.element_size() > 1 else want.view(torch.uint8) if dt != torch.bool else want.to(torch.uint8)
            self.assertEqual(r["fp"], "%016x" % lockstep.fingerprint(raw.numpy().tobytes()), name)

    def test_scalar_keeps_exact_bits(self):
        with lockstep.step(1):
            lockstep.metric("neg_zero", -0.0)
            lockstep.metric("nan", float("nan"))
            lockstep.metric("loss", torch.tensor(0.1, dtype=torch.float32))  # float() of a 0-d tensor
            lockstep.tensor("bias0", torch.tensor([2.5], dtype=torch.float32))
        r = {x["name"]: x for x in self.records()}
        self.assertEqual(r["neg_zero"]["value_bits"], "0x8000000000000000")
        self.assertEqual(r["nan"]["value_bits"], "0x%016x" % struct.unpack("<Q", struct.pack("<d", math.nan))[0])
        self.assertEqual(r["loss"]["value_bits"], "0x%016x" % struct.unpack("<Q", struct.pack("<d", float(
            torch.tensor(0.1, dtype=torch.float32))))[0])
        self.assertEqual(r["loss"]["level"], "metric")
        self.assertEqual(r["bias0"]["value"], 2.5)

    def test_buffers(self):
        with lockstep.step(0):
            lockstep.tensor("bytes", b"lockstep")
            lockstep.tensor("bytearray", bytearray(b"lockstep"))
            lockstep.tensor("memoryview", memoryview(b"xxlockstepxx")[2:10])
            lockstep.tensor("array", array.array("d", [1.0, 2.0]))
            lockstep.tensor("empty", b"")
        r = {x["name"]: x for x in self.records()}
        for k in ("bytes", "bytearray", "memoryview"):
            self.assertEqual(r[k]["fp"], "cdda81c2e1be4267", k)
        self.assertEqual((r["array"]["dtype"], r["array"]["shape"]), ("f64", [2]))
        self.assertEqual((r["empty"]["nbytes"], r["empty"]["fp"]), (0, "48b78bdb0902dc73"))

    def test_record_fp_with_inputs(self):
        with lockstep.step(2):
            lockstep.record_fp("op.out", 0x0123456789ABCDEF, 64, "f32", (4, 4), "ops", [1, 2, 0xFFFFFFFFFFFFFFFF])
            lockstep.record_fp("coll.out", 7, 8, lockstep.DTYPES["f64"], (), "collectives")
            with self.assertRaises(ValueError):
                lockstep.record_fp("x", 1, 8, "u8", (8,), "collectives", list(range(17)))
        self.assertEqual([x["name"] for x in self.records()], ["coll.out"])  # "modules" leaves the op out
        lockstep.init(trace="ops", trace_dir=self.dir, rank=0, run_id="py-test")
        with lockstep.step(2):
            lockstep.record_fp("op.out", 0x0123456789ABCDEF, 64, "f32", (4, 4), "ops", [1, 2, 0xFFFFFFFFFFFFFFFF])
        r = self.records()
        self.assertEqual([(x["name"], x["level"]) for x in r], [("op.out", "op")])
        self.assertEqual((r[0]["fp"], r[0]["shape"], r[0]["dtype"], r[0]["nbytes"]), ("0123456789abcdef", [4, 4], "f32", 64))
        self.assertEqual(r[0]["inputs"], ["0000000000000001", "0000000000000002", "ffffffffffffffff"])

    def test_occurrences_restart_per_step(self):
        for s in (5, 6):
            with lockstep.step(s):
                for _ in range(3):
                    lockstep.tensor("layer.out", np.zeros(4, dtype=np.float32))
        recs = self.records()
        self.assertEqual([(r["step"], r["occurrence"]) for r in recs], [(5, 0), (5, 1), (5, 2), (6, 0), (6, 1), (6, 2)])
        self.assertEqual([r["seq"] for r in recs], list(range(6)))

    def test_levels(self):
        with lockstep.step(0):
            lockstep.tensor("c", b"c", level="collectives")
            lockstep.tensor("m", b"m", level=lockstep.LEVELS["module"])
            self.assertFalse(lockstep.tensor("o", b"o", level="ops"))  # trace is "modules"
            self.assertFalse(lockstep.enabled("ops"))
            self.assertTrue(lockstep.enabled("modules"))
            with self.assertRaises(ValueError):
                lockstep.tensor("x", b"x", level="layers")
        self.assertEqual([(r["name"], r["level"]) for r in self.records()], [("c", "collective"), ("m", "module")])

    def test_errors_carry_the_library_reason(self):
        with self.assertRaises(lockstep.LockstepError) as cm:
            lockstep.tensor("bad\nname", b"x")
        self.assertIn("control character", str(cm.exception))
        with self.assertRaises(lockstep.LockstepError) as cm:
            lockstep.metric("x" * 300, 1.0)
        self.assertIn("1 to 255", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            lockstep.tensor("deep", np.zeros((1,) * 9))
        self.assertIn("at most 8", str(cm.exception))

    def test_identity(self):
        self.assertEqual(lockstep.run_id(), "py-test")
        self.assertEqual(lockstep.rank(), 0)
        self.assertTrue(lockstep.is_active())
        self.assertEqual(lockstep.library()[0], "LOCKSTEP_LIB" if os.environ.get("LOCKSTEP_LIB") else "build tree")


class TestWindow(Traced):
    trace = "metrics;modules:steps=2-3"

    def test_window_filters_and_skips_work(self):
        kept = []
        for s in range(5):
            with lockstep.step(s):
                lockstep.metric("loss", s)
                kept.append(lockstep.tensor("w", np.full(3, s, dtype=np.float32)))
        self.assertEqual(kept, [False, False, True, True, False])
        recs = self.records()
        self.assertEqual([(r["name"], r["step"]) for r in recs if r["name"] == "w"], [("w", 2), ("w", 3)])
        self.assertEqual(len([r for r in recs if r["name"] == "loss"]), 5)


class TestLifecycle(unittest.TestCase):
    def test_calls_before_init_fail_clearly(self):
        lockstep.shutdown()
        with self.assertRaises(lockstep.LockstepError) as cm:
            lockstep.metric("loss", 1.0)
        self.assertIn("before ls_init", str(cm.exception))
        with self.assertRaises(lockstep.LockstepError) as cm:
            lockstep.step_begin(0)
        self.assertIn("lockstep.init()", str(cm.exception))
        self.assertEqual(lockstep.rank(), -1)
        self.assertIsNone(lockstep.run_id())

    def test_bad_environment(self):
        lockstep.shutdown()
        old = os.environ.get("LOCKSTEP_TRACE")
        try:
            with self.assertRaises(lockstep.LockstepError) as cm:
                lockstep.init(trace="everything")
            self.assertIn("LOCKSTEP_TRACE is invalid", str(cm.exception))
        finally:
            if old is None:
                os.environ.pop("LOCKSTEP_TRACE", None)
            else:
                os.environ["LOCKSTEP_TRACE"] = old

    def test_mode_off_is_silent(self):
        d = tempfile.mkdtemp(prefix="ls-py-off-")
        try:
            p = run_py(["-c", "import lockstep, numpy\nlockstep.init()\nwith lockstep.step(0):\n"
                        "    lockstep.metric('loss', 1.0)\n    print(lockstep.tensor('w', numpy.zeros(3)))\n"
                        "lockstep.shutdown()"], env_for(LOCKSTEP_MODE="off", LOCKSTEP_TRACE_DIR=d))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "False")
            self.assertEqual(os.listdir(d), [])
        finally:
            shutil.rmtree(d)

    def test_default_trace_keeps_module_records(self):
        d = tempfile.mkdtemp(prefix="ls-py-def-")
        try:
            p = run_py(["-c", "import lockstep, os\nlockstep.init()\nprint(os.environ['LOCKSTEP_TRACE'])\n"
                        "lockstep.tensor('w', b'abc')\nlockstep.shutdown()"], env_for(LOCKSTEP_TRACE_DIR=d))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "modules")
            self.assertEqual([r["name"] for r in dump(d)], ["w"])
        finally:
            shutil.rmtree(d)


class TestDeviceLibrary(Traced):
    """The CUDA helper library: found beside liblockstep when it was built, and its prototypes
    agree with kernels/tensor_device.h and include/lockstep.h (checked through argument validation,
    which needs no GPU)."""

    trace = "metrics"

    def test_device_library(self):
        from lockstep import _lib
        dev = _lib.load_device()
        if not os.path.exists(os.path.join(os.path.dirname(LIB), "liblockstep_cuda.so")):
            self.assertIsNone(dev)
            self.assertIn("without CUDA", _lib.device_note())
            return
        self.assertIsNotNone(dev, _lib.device_note())
        shape = (ctypes.c_int64 * 1)(4)
        f32 = lockstep.DTYPES["f32"]
        with lockstep.step(0):
            # level module is filtered out by "metrics": nothing is launched, 0 comes back
            self.assertEqual(dev.lsk_tensor_device_at(2, b"x", None, 0, f32, 1, shape, None), 0)
            self.assertEqual(dev.lsk_tensor_device_at(9, b"x", None, 0, f32, 1, shape, None), -1)
            self.assertIn("level 9", lockstep.last_error())
            self.assertEqual(dev.lsk_tensor_device_at(2, b"bad\x01", None, 0, f32, 1, shape, None), -1)
            self.assertIn("control character at byte 3", lockstep.last_error())
            self.assertEqual(dev.lsk_tensor_device_at(2, b"x", None, 0, f32, 9, shape, None), -1)
            self.assertIn("ndim 9", lockstep.last_error())
            # ls_replica_device: collectives are filtered out too, so nothing is launched; the arguments are checked
            self.assertEqual(dev.ls_replica_device(b"r", None, 0, f32, None, None), 0)
            self.assertEqual(dev.ls_replica_device(b"bad\x01", None, 0, f32, None, None), -1)
            self.assertIn("control character at byte 3", lockstep.last_error())
            self.assertEqual(dev.ls_replica_device(b"r", None, 0, 99, None, None), -1)
            self.assertIn("dtype 99 is unknown", lockstep.last_error())
        self.assertEqual(self.records(), [])


class TestLoading(unittest.TestCase):
    def test_lockstep_lib_missing(self):
        p = run_py(["-m", "lockstep", "where"], env_for(LOCKSTEP_LIB="/nonexistent/liblockstep.so"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("LOCKSTEP_LIB=/nonexistent/liblockstep.so does not exist", p.stderr)
        self.assertIn("hint:", p.stderr)

    def test_lockstep_lib_and_build_tree(self):
        p = run_py(["-m", "lockstep", "where"], env_for(LOCKSTEP_LIB=LIB))
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "LOCKSTEP_LIB " + LIB), p.stderr)
        p = run_py(["-m", "lockstep", "where"], env_for())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split()[:2], ["build", "tree"])
        self.assertTrue(os.path.samefile(p.stdout.split()[2], LIB))

    def test_pip_install_and_import(self):
        tgt = tempfile.mkdtemp(prefix="ls-pip-")
        try:
            # pip builds in the folder it is given: hand it a copy, so the source tree stays clean
            pkg = os.path.join(tgt, "src")
            shutil.copytree(os.path.join(SRC, "agent", "python"), pkg,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            site = os.path.join(tgt, "site")
            p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                                "--no-deps", "--no-index", "--target", site, pkg],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                               env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertTrue(os.path.exists(os.path.join(site, "lockstep", "torch.py")))
            env = env_for(LOCKSTEP_LIB=LIB)
            env["PYTHONPATH"] = site
            p = run_py(["-c", "import lockstep, lockstep.torch; print(lockstep.__file__); "
                        "print('%016x' % lockstep.fingerprint(b'lockstep'))"], env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.startswith(site), p.stdout)
            self.assertEqual(p.stdout.split()[-1], "cdda81c2e1be4267")
        finally:
            shutil.rmtree(tgt, ignore_errors=True)

    def test_make_install_prefix(self):
        pre = tempfile.mkdtemp(prefix="ls-prefix-")
        try:
            p = subprocess.run(["make", "--no-print-directory", "-C", SRC, "python-install", "PREFIX=" + pre,
                                "B=" + os.path.relpath(BUILD_ABS, SRC)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout)
            site = os.path.join(pre, "lib", "python%d.%d" % sys.version_info[:2], "dist-packages")
            os.makedirs(os.path.join(pre, "lib"), exist_ok=True)
            shutil.copy(LIB, os.path.join(pre, "lib", "liblockstep.so"))  # what make install puts there
            env = env_for()
            env["PYTHONPATH"] = site
            env.pop("LOCKSTEP_BUILD")
            p = subprocess.run([sys.executable, "-m", "lockstep", "where"], env=env, cwd=pre, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual((p.returncode, p.stdout.strip()),
                             (0, "install prefix " + os.path.join(pre, "lib", "liblockstep.so")), p.stderr)
        finally:
            shutil.rmtree(pre, ignore_errors=True)

    def test_diff_helper_uses_the_build_cli(self):
        from lockstep import cli
        self.assertTrue(os.path.samefile(cli.find_cli(), CLI))
        with self.assertRaises(lockstep.DiffError):
            lockstep.diff(os.path.join(BUILD_ABS, "nonexistent-a"), os.path.join(BUILD_ABS, "nonexistent-b"))


if __name__ == "__main__":
    unittest.main()
