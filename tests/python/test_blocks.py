"""test_blocks.py - the binding's shards, scaled low-precision tensors, chunk sizes and state blocks against the real liblockstep and `lockstep diff`."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
import unittest

import numpy as np
import torch

from helpers import CLI, SRC, Lockstepd, dump, env_for, run_py

sys.path.insert(0, os.path.join(SRC, "agent", "python"))
import lockstep  # noqa: E402
from lockstep import _buffers  # noqa: E402

# One rank of a row-sharded 2-D weight (rows split unevenly over WORLD ranks); FLIP=step:byte flips a bit.
SHARD_PROG = r"""
import os, sys, torch
sys.path.insert(0, os.environ["PYTHONPATH"])
import lockstep
world, rank = int(os.environ["WORLD"]), int(os.environ["LOCKSTEP_RANK"])
flip = os.environ.get("FLIP")
lockstep.init()
rows, cols = 600, 700                          # f32: 1,680,000 bytes, two 1 MiB chunks
full = (torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols) % 1013 / 7).float()
base, extra = divmod(rows, world)
lo = rank * base + min(rank, extra)
hi = lo + base + (1 if rank < extra else 0)
row_bytes = cols * 4
for step in range(3):
    with lockstep.step(step):
        w = (full * (step + 1))[lo:hi].contiguous()
        if flip and int(flip.split(":")[0]) == step:
            b = int(flip.split(":")[1]) - lo * row_bytes
            if 0 <= b < w.numel() * 4:
                w.view(torch.uint8).view(-1)[b] ^= 1
        lockstep.tensor_shard("tp.w", w, lo * row_bytes, rows * row_bytes, (rows, cols))
lockstep.shutdown()
"""


class Sharded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-shards-")
        cls.bad = []
        for name, world, flip in (("w2", 2, None), ("w3", 3, None), ("w4", 4, None), ("f3", 3, "1:1200000")):
            for r in range(world):
                env = env_for(LOCKSTEP_TRACE_DIR=os.path.join(cls.tmp, name), LOCKSTEP_RANK=r, LOCKSTEP_TRACE="modules",
                              WORLD=world, FLIP=flip or "")
                p = run_py(["-c", SHARD_PROG], env)
                if p.returncode:
                    cls.bad.append("%s rank %d: %s" % (name, r, p.stderr[-2000:]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_dir(self, name):
        self.assertEqual(self.bad, [])
        return os.path.join(self.tmp, name)

    def test_rank_counts_agree(self):
        for a, b in (("w2", "w3"), ("w3", "w4"), ("w2", "w4")):
            rep = lockstep.diff(self.run_dir(a), self.run_dir(b), logical=True)
            self.assertTrue(rep["match"], (a, b, rep))
            self.assertEqual(rep["logical"]["a_tensors"], 3)

    def test_logical_fp_is_the_whole_tensors(self):
        p = subprocess.run([CLI, "dump", "--logical", self.run_dir("w3")], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0)
        last = json.loads(p.stdout.splitlines()[-1])
        full = (torch.arange(600 * 700, dtype=torch.float64).reshape(600, 700) % 1013 / 7).float() * 3
        self.assertEqual(int(last["fp"], 16), lockstep.fingerprint(full))
        self.assertEqual([s["rank"] for s in last["shards"]], [0, 1, 2])

    def test_flipped_byte_named_with_its_chunk(self):
        rep = lockstep.diff(self.run_dir("w4"), self.run_dir("f3"), logical=True)
        self.assertFalse(rep["match"])
        r = rep["ranks"][0]
        self.assertEqual((rep["first_step"], r["a"]["name"], r["first_chunk"]), (1, "tp.w", 1))
        self.assertEqual(r["chunk_holders"], {"a": [2, 3], "b": [1, 2]})  # bytes 1 MiB.. sit on ranks 2-3 of 4, 1-2 of 3


# One rank that records only a loss (no shard); BAD adds 0.5 to it.
METRIC_PROG = r"""
import os, sys
sys.path.insert(0, os.environ["PYTHONPATH"])
import lockstep
lockstep.init()
for step in range(3):
    with lockstep.step(step):
        lockstep.metric("loss", 1.0 + step + (0.5 if os.environ.get("BAD") else 0.0))
lockstep.shutdown()
"""


class ShardsThroughLockstepd(unittest.TestCase):
    """Runs of 4 and 3 ranks streamed to a real lockstepd, every record and as digests: the server compares their
    logical tensors and names the flipped byte's tensor and step either way (streaming digests, the agent sends
    shards in full: nothing would ask for them)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-shards-srv-")
        cls.srv = Lockstepd(cls.tmp)
        cls.bad = []
        jobs = [(mode, name, world, flip, r) for mode in ("records", "digests", "noshard")
                for name, world, flip in (("w4", 4, None), ("f3", 3, "1:1200000")) for r in range(world)]

        def one(job):
            mode, name, world, flip, r = job
            env = env_for(LOCKSTEP_SERVER=cls.srv.url, LOCKSTEP_TWIN_GROUP="py-shards-" + mode,
                          LOCKSTEP_JOB_ID="sh-%s-%s" % (mode, name), LOCKSTEP_STEP_ID="0", LOCKSTEP_RANK=r,
                          LOCKSTEP_RANKS=world, LOCKSTEP_STREAM="records" if mode == "noshard" else mode,
                          LOCKSTEP_TRACE="modules",
                          LOCKSTEP_SPOOL_DIR=os.path.join(cls.tmp, "spool-%s-%s-%d" % (mode, name, r)),
                          WORLD=world, FLIP=flip or "", BAD="1" if flip else "")
            p = run_py(["-c", METRIC_PROG if mode == "noshard" else SHARD_PROG], env)
            return None if p.returncode == 0 else "%s %s rank %d: %s" % (mode, name, r, p.stderr[-2000:])

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
                cls.bad = [b for b in ex.map(one, jobs) if b]
        except BaseException:
            cls.srv.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def group(self, name, want="diverged"):
        self.assertEqual(self.bad, [])
        deadline = time.monotonic() + 30
        while True:
            t = self.srv.get("/api/v1/twins/" + name)
            if t["status"] == want or time.monotonic() > deadline:
                return t
            time.sleep(0.2)

    def test_no_shards_is_not_a_match(self):
        """Runs of 4 and 3 ranks whose losses differ but that record no shard: nothing is compared (other records
        are rank-local facts in such groups), and the group says so instead of calling them a match."""
        t = self.group("py-shards-noshard", "incomplete")
        self.assertEqual(t["status"], "incomplete", json.dumps(t)[:2000])
        self.assertIn("no shards", t["status_reason"])

    def test_logical_divergence_both_ways(self):
        for mode in ("records", "digests"):
            t = self.group("py-shards-" + mode)
            self.assertEqual((t["status"], t["logical"]), ("diverged", True), (mode, json.dumps(t)[:2000]))
            f = t["first_divergence"]
            self.assertEqual((f["step"], f["rank"], f["name"]), (1, -1, "tp.w"), (mode, json.dumps(f)[:2000]))


class Traced(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ls-blocks-")
        for k in ("LOCKSTEP_TRACE", "LOCKSTEP_TRACE_DIR", "LOCKSTEP_MODE", "LOCKSTEP_RANK", "LOCKSTEP_RUN_ID"):
            os.environ.pop(k, None)
        lockstep.init(trace="modules", trace_dir=self.dir, rank=0, run_id="blocks")

    def tearDown(self):
        lockstep.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def records(self):
        lockstep.shutdown()
        return dump(os.path.join(self.dir, "rank-00000.lstrace"))


class TestShardErrors(Traced):
    def test_bad_shards_are_clear_errors(self):
        t = torch.zeros(16)
        with self.assertRaisesRegex(lockstep.LockstepError, "offset 4 is not a multiple of 8"):
            lockstep.tensor_shard("w", t, 4, 128, (32,))
        with self.assertRaisesRegex(lockstep.LockstepError, "does not fit in the tensor's total of 32 bytes"):
            lockstep.tensor_shard("w", t, 0, 32, (8,))
        with self.assertRaisesRegex(lockstep.LockstepError, "inside a 64-bit word"):
            lockstep.tensor_shard("w", torch.zeros(3), 0, 64, (16,))
        self.assertTrue(lockstep.tensor_shard("w", t, 64, 128, (32,)))
        recs = self.records()
        self.assertEqual(len(recs), 1)
        self.assertEqual(recs[0]["shard"]["offset"], 64)
        self.assertEqual(recs[0]["shard"]["total"], 128)
        self.assertEqual(recs[0]["shape"], [32])


class TestScaled(unittest.TestCase):
    """Two runs of one MXFP8-like tensor: a change in the scales only, then in the values only."""

    def run_one(self, d, scale_bump, value_bump):
        prog = (
            "import os, sys, numpy as np\nsys.path.insert(0, os.environ['PYTHONPATH'])\nimport lockstep\n"
            "lockstep.init()\nvals = np.arange(256, dtype=np.uint8)\nsc = np.array([127, 128], dtype=np.uint8)\n"
            "sc[1] += %d\nvals[200] ^= %d\n"
            "with lockstep.step(0):\n"
            "    lockstep.tensor_scaled('mx.w', vals, sc)\nlockstep.shutdown()\n" % (scale_bump, value_bump))
        p = run_py(["-c", prog], env_for(LOCKSTEP_TRACE_DIR=d, LOCKSTEP_TRACE="modules"))
        self.assertEqual(p.returncode, 0, p.stderr)
        return d

    def test_scale_only_and_value_only(self):
        tmp = tempfile.mkdtemp(prefix="ls-scaled-")
        try:
            a = self.run_one(os.path.join(tmp, "a"), 0, 0)
            s = self.run_one(os.path.join(tmp, "s"), 1, 0)
            v = self.run_one(os.path.join(tmp, "v"), 0, 1)
            rec = dump(a)[0]
            self.assertEqual(rec["scales"]["nbytes"], 2)
            rep = lockstep.diff(a, s)
            self.assertEqual(rep["ranks"][0]["kind"], "scales")
            self.assertEqual(rep["ranks"][0]["a"]["fp"], rep["ranks"][0]["b"]["fp"])
            rep = lockstep.diff(a, v)
            self.assertEqual(rep["ranks"][0]["kind"], "content")
            self.assertNotIn("scales_differ", rep["ranks"][0])
            p = subprocess.run([CLI, "diff", a, s], stdout=subprocess.PIPE, text=True)
            self.assertIn("scales differ (the values match)", p.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class TestChunksAndState(Traced):
    def test_chunk_bytes(self):
        route = torch.arange(16384, dtype=torch.int32) % 8
        self.assertTrue(lockstep.tensor("moe.route", route, chunk_bytes=4096))
        with self.assertRaisesRegex(lockstep.LockstepError, "chunk size 100"):
            lockstep.tensor("moe.route", route, chunk_bytes=100)
        r = self.records()[0]
        self.assertEqual(r["chunk_bytes"], 4096)
        self.assertEqual(len(r["chunks"]), 16)

    def test_state_block_of_python_values(self):
        with self.assertRaisesRegex(lockstep.LockstepError, "no state block is open"):
            lockstep.state_entry("x", 1.0)
        with lockstep.state(7, "saved"):
            lockstep.state_entry("data_pos", 1234)
            lockstep.state_entry("loss_scale", 65536.0)
            lockstep.state_entry("sampler", "epoch-3")
            lockstep.state_entry("betas", (0.9, 0.999))
            lockstep.state_entry("momentum", np.ones(4))
            lockstep.state_entry("flag", True)
        with self.assertRaises(ValueError):
            lockstep.state_begin(7, "loaded")
        recs = {r["name"]: r for r in self.records()}
        self.assertEqual(recs["data_pos"]["value_bits"], "0x4d2")
        self.assertEqual(recs["data_pos"]["dtype"], "i64")
        self.assertEqual(recs["loss_scale"]["value"], 65536.0)
        self.assertEqual(recs["betas"]["shape"], [2])
        self.assertEqual(recs["sampler"]["nbytes"], 7)
        self.assertTrue(all(r["state"] == "saved" and r["step"] == 7 for r in recs.values()))


class TestLowPrecisionDtypes(unittest.TestCase):
    def test_float8_and_float4_map_where_torch_has_them(self):
        # torch >= 2.1 has float8_e4m3fn/float8_e5m2, >= 2.7 float8_e8m0fnu, >= 2.8 float4_e2m1fn_x2; the
        # mapping is exercised on a stand-in module so that it is tested with any torch
        fake = types.SimpleNamespace(**{n: getattr(torch, n) for n in (
            "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")})
        for attr in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2"):
            setattr(fake, attr, object())
        saved = _buffers._TORCH_DTYPES
        try:
            _buffers._TORCH_DTYPES = None
            m = _buffers._torch_dtypes(fake)
        finally:
            _buffers._TORCH_DTYPES = saved
        self.assertEqual(m[fake.float8_e4m3fn], lockstep.DTYPES["f8e4m3"])
        self.assertEqual(m[fake.float8_e5m2], lockstep.DTYPES["f8e5m2"])
        self.assertEqual(m[fake.float8_e8m0fnu], lockstep.DTYPES["e8m0"])
        self.assertEqual(m[fake.float4_e2m1fn_x2], lockstep.DTYPES["f4e2m1"])
        if hasattr(torch, "float8_e4m3fn"):  # the real thing, where this torch has it
            v = _buffers.view_of(torch.zeros(4, dtype=torch.float8_e4m3fn))
            self.assertEqual(v.dtype, lockstep.DTYPES["f8e4m3"])


if __name__ == "__main__":
    unittest.main()
