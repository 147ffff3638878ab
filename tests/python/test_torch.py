"""test_torch.py - lockstep.torch on a real PyTorch training loop: twins match; thread count and a perturbed op are named; manifests, windows, det mode."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import warnings
from collections import OrderedDict

import torch
import torch.nn as nn

from helpers import CLI, HERE, LIB, SRC, Lockstepd, dump, env_for, run_py

sys.path.insert(0, os.path.join(SRC, "agent", "python"))
import lockstep  # noqa: E402
import lockstep.torch  # noqa: E402

TRAIN = os.path.join(HERE, "train_mlp.py")
STEPS = 4

# name -> (train_mlp.py arguments, extra environment)
RUNS = {
    "m_a": ([], {}),
    "m_b": ([], {}),
    "m_t2": (["--threads", "2"], {}),
    "m_pert": (["--perturb", "fc1:2"], {}),
    "m_explicit": (["--explicit-steps"], {}),
    "o_a": (["--level", "ops"], {}),
    "o_b": (["--level", "ops"], {}),
    "o_t2": (["--level", "ops", "--threads", "2"], {}),
    "o_pert": (["--level", "ops", "--perturb", "fc1:2"], {}),
    "o_window": (["--level", "ops"], {"LOCKSTEP_TRACE": "metrics;modules:steps=1-2;ops:steps=2"}),
    "det_a": ([], {"LOCKSTEP_MODE": "det"}),
    "det_b": ([], {"LOCKSTEP_MODE": "det"}),
    "coll": ([], {"LOCKSTEP_TRACE": "collectives"}),
    "off": ([], {"LOCKSTEP_MODE": "off"}),
    # streaming to a lockstepd that is not there (nothing listens on port 1): the agent spools
    # its batches and its own manifest, which must carry what Python knows
    "spool": ([], {"LOCKSTEP_SERVER": "http://127.0.0.1:1", "LOCKSTEP_FLUSH_TIMEOUT": "200",
                   "LOCKSTEP_MANIFEST_HASH": "0", "LOCKSTEP_SPOOL_DIR": "{dir}-spool"}),
    # two ranks under DistributedDataParallel (gloo on loopback), ranks from torchrun's variables
    "ddp_a": (["--ddp"], {}),
    "ddp_b": (["--ddp"], {}),
    "ddp_t2": (["--ddp", "--rank1-threads", "2"], {}),
    # the agent preloaded and started by itself, as under the Slurm plugin
    "pre": ([], {"LD_PRELOAD": ":".join(x for x in (os.environ.get("LD_PRELOAD"), LIB) if x),
                 "LOCKSTEP_TRACE": "modules"}),
}


def run_ranks(args, env, world):
    """Start `world` ranks of `python3 ARGS...` as torchrun would (RANK, LOCAL_RANK, WORLD_SIZE,
    MASTER_ADDR/PORT on loopback) and wait for all; one CompletedProcess-like result (the worst
    exit status, stderr of all, rank 0's stdout)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(world):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([sys.executable] + args, env=e, cwd=SRC, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    rc = max(abs(p.returncode) for p in procs)
    return subprocess.CompletedProcess(args, rc, outs[0][0], "".join(o[1] for o in outs))


class TrainingRuns(unittest.TestCase):
    """Runs every training loop of RUNS once (two at a time), then compares them."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-torch-")
        cls.out = {}

        def one(name):
            args, extra = RUNS[name]
            d = os.path.join(cls.tmp, name)
            extra = {k: v.replace("{dir}", d) for k, v in extra.items()}
            env = env_for(LOCKSTEP_TRACE_DIR=d, LOCKSTEP_RUN_ID=name, **extra)
            if "--ddp" in args:
                return name, run_ranks([TRAIN, "--steps", str(STEPS)] + args, env, 2)
            return name, run_py([TRAIN, "--steps", str(STEPS)] + args, env)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            for name, p in ex.map(one, sorted(RUNS)):
                cls.out[name] = p

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def d(self, name):
        p = self.out[name]
        self.assertEqual(p.returncode, 0, "%s failed:\n%s" % (name, p.stderr[-3000:]))
        return os.path.join(self.tmp, name)

    def first(self, a, b):
        rep = lockstep.diff(self.d(a), self.d(b))
        self.assertFalse(rep["match"], "%s and %s should diverge" % (a, b))
        return rep, lockstep.first_divergence(rep)

    # --- the precondition of the thread-count test, checked rather than assumed
    def test_batchnorm_bits_depend_on_thread_count(self):
        x = torch.randn(4096, 64, generator=torch.Generator().manual_seed(5))
        bn = nn.BatchNorm1d(64)
        saved = torch.get_num_threads()
        try:
            torch.set_num_threads(1)
            one = bn(x)
            torch.set_num_threads(2)
            two = bn(x)
        finally:
            torch.set_num_threads(saved)
        self.assertFalse(torch.equal(one, two), "BatchNorm1d no longer changes bits with the thread count")
        self.assertTrue(torch.allclose(one, two, atol=1e-5))

    # --- twins
    def test_twins_match(self):
        rep = lockstep.diff(self.d("m_a"), self.d("m_b"))
        self.assertTrue(rep["match"], json.dumps(rep)[:2000])
        recs = dump(self.d("m_a"))
        names = {r["name"] for r in recs}
        for n in ("loss", "grad_norm", "fc1.out", "bn.out", "model.out", "fc1.out.grad", "fc1.weight.grad",
                  "bn.bias.grad"):
            self.assertIn(n, names)
        self.assertEqual(sorted({r["step"] for r in recs}), list(range(STEPS)))
        self.assertEqual(len(recs), len(dump(self.d("m_b"))))
        p = subprocess.run([CLI, "diff", self.d("m_a"), self.d("m_b")], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0)

    def test_ops_twins_match(self):
        rep = lockstep.diff(self.d("o_a"), self.d("o_b"))
        self.assertTrue(rep["match"], json.dumps(rep)[:2000])
        ops = [r for r in dump(self.d("o_a")) if r["level"] == "op"]
        names = {r["name"] for r in ops}
        for n in ("fc1/addmm", "bn/native_batch_norm#0", "act/relu", "loss/mse_loss",
                  "bwd.bn/native_batch_norm_backward#0", "bwd.fc1/mm", "optimizer/add_"):
            self.assertIn(n, names)
        self.assertFalse([n for n in names if n.endswith("/t") or n.endswith("/view") or "empty" in n],
                         "views and uninitialized memory must not be recorded")

    # --- divergences are named
    def test_thread_count_names_the_module(self):
        rep, f = self.first("m_a", "m_t2")
        self.assertEqual((f["step"], f["kind"], f["a"]["name"], f["a"]["level"]), (0, "content", "bn.out", "module"))
        self.assertEqual(f["a"]["seq"], 1)  # fc1.out (seq 0) still matched
        p = subprocess.run([CLI, "diff", self.d("m_a"), self.d("m_t2")], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn('record "bn.out"', p.stdout)

    def test_thread_count_names_the_op(self):
        rep, f = self.first("o_a", "o_t2")
        self.assertEqual((f["step"], f["a"]["name"], f["a"]["level"]), (0, "bn/native_batch_norm#0", "op"))
        # the op itself changed bits: its inputs (x, weight, bias, running mean, var) matched
        self.assertEqual(len(f["a"]["inputs"]), 5)
        self.assertEqual(f["a"]["inputs"], f["b"]["inputs"])
        self.assertNotEqual(f["a"]["fp"], f["b"]["fp"])

    def test_perturbed_op_names_module_and_op(self):
        _, f = self.first("m_a", "m_pert")
        self.assertEqual((f["step"], f["a"]["name"]), (2, "fc1.out"))
        _, f = self.first("o_a", "o_pert")
        self.assertEqual((f["step"], f["a"]["name"], f["a"]["level"]), (2, "fc1/addmm", "op"))
        # addmm(bias, x, weight.t()): the flipped weight bit is already in its third input,
        # written outside any op (numpy), which a cache of fingerprints would have hidden
        ia, ib = f["a"]["inputs"], f["b"]["inputs"]
        self.assertEqual((len(ia), ia[:2], ia[2] != ib[2]), (3, ib[:2], True))
        # steps before the fault match record for record
        a = [r for r in dump(self.d("o_a")) if r["step"] < 2]
        b = [r for r in dump(self.d("o_pert")) if r["step"] < 2]
        self.assertEqual([(r["name"], r["fp"]) for r in a], [(r["name"], r["fp"]) for r in b])

    # --- manifests
    def test_manifest_diff_names_the_thread_count(self):
        env = env_for()
        p = run_py(["-m", "lockstep", "manifest-diff", "--json", self.d("m_a"), self.d("m_t2")], env)
        self.assertEqual(p.returncode, 1, p.stderr)
        diffs = {x["key"]: (x["a"], x["b"]) for x in json.loads(p.stdout)["differences"]}
        self.assertEqual(diffs.get("num_threads"), (1, 2))
        p = run_py(["-m", "lockstep", "manifest-diff", self.d("m_a"), self.d("m_t2")], env)
        self.assertIn("num_threads", p.stdout)
        p = run_py(["-m", "lockstep", "manifest-diff", self.d("m_a"), self.d("m_b")], env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = run_py(["-m", "lockstep", "manifest-diff", self.d("m_a"), os.path.join(self.tmp, "none")], env)
        self.assertEqual(p.returncode, 2)

    def test_manifest_contents(self):
        with open(os.path.join(self.d("m_a"), "rank-00000.python.json")) as f:
            m = json.load(f)
        self.assertEqual(m["torch_version"], torch.__version__)
        self.assertEqual((m["num_threads"], m["run_id"], m["rank"], m["level"]), (1, "m_a", 0, "modules"))
        self.assertFalse(m["determinism"]["deterministic_algorithms"])
        self.assertEqual(m["env"]["LOCKSTEP_TRACE"], "modules")

    # --- det mode
    def test_det_mode(self):
        with open(os.path.join(self.d("det_a"), "rank-00000.python.json")) as f:
            m = json.load(f)
        self.assertTrue(m["determinism"]["deterministic_algorithms"])
        self.assertTrue(m["determinism"]["cudnn_deterministic"])
        self.assertFalse(m["determinism"]["cudnn_benchmark"])
        self.assertEqual(m["determinism"]["cublas_workspace_config"], ":4096:8")
        self.assertEqual(m["lockstep_mode"], "det")
        self.assertTrue(lockstep.diff(self.d("det_a"), self.d("det_b"))["match"])
        p = run_py(["-m", "lockstep", "manifest-diff", "--json", self.d("m_a"), self.d("det_a")], env_for())
        keys = {x["key"] for x in json.loads(p.stdout)["differences"]}
        self.assertIn("determinism.deterministic_algorithms", keys)

    # --- windows, levels, steps
    def test_trace_window(self):
        recs = dump(self.d("o_window"))
        steps = lambda lv: sorted({r["step"] for r in recs if r["level"] == lv})  # noqa: E731
        self.assertEqual(steps("op"), [2])
        self.assertEqual(steps("module"), [1, 2])
        self.assertEqual(steps("metric"), list(range(STEPS)))
        # outside the window the model trains the same: its step-3 loss equals the unwindowed run's
        loss = lambda d: [r["value_bits"] for r in dump(d) if r["name"] == "loss"]  # noqa: E731
        self.assertEqual(loss(self.d("o_window")), loss(self.d("m_a")))

    def test_collectives_keeps_only_metrics(self):
        recs = dump(self.d("coll"))
        self.assertEqual({r["level"] for r in recs}, {"metric"})
        self.assertEqual([r["name"] for r in recs], ["loss", "grad_norm"] * STEPS)

    def test_agent_manifest_carries_torch_facts(self):
        self.assertTrue(lockstep.diff(self.d("m_a"), self.d("spool"))["match"])
        found = []
        for root, _, files in os.walk(self.d("spool") + "-spool"):
            if "manifest.json" in files:
                with open(os.path.join(root, "manifest.json")) as f:
                    found.append(json.load(f))
        self.assertEqual(len(found), 1, "one rank, one spooled manifest")
        env = found[0]["env"]
        self.assertEqual(env.get("LOCKSTEP_PY_NUM_THREADS"), "1")
        self.assertEqual(env.get("LOCKSTEP_PY_TORCH_VERSION"), torch.__version__)
        self.assertEqual(env.get("LOCKSTEP_PY_DETERMINISTIC"), "0")

    def test_ddp_ranks(self):
        rep = lockstep.diff(self.d("ddp_a"), self.d("ddp_b"))
        self.assertTrue(rep["match"], json.dumps(rep)[:2000])
        self.assertEqual(sorted(os.listdir(self.d("ddp_a"))), ["rank-00000.lstrace", "rank-00000.python.json",
                                                               "rank-00001.lstrace", "rank-00001.python.json"])
        self.assertEqual([r["rank"] for r in rep["ranks"]], [0, 1])
        rep = lockstep.diff(self.d("ddp_a"), self.d("ddp_t2"))
        self.assertFalse(rep["match"])
        by_rank = {r["rank"]: r for r in rep["ranks"]}
        # rank 1 ran BatchNorm with 2 threads; rank 0 sees it first in its averaged gradients
        self.assertEqual((by_rank[1]["step"], by_rank[1]["a"]["name"], by_rank[1]["a"]["seq"]), (0, "module.bn.out", 1))
        self.assertEqual((by_rank[0]["step"], by_rank[0]["a"]["name"]), (0, "module.fc1.weight.grad"))
        p = run_py(["-m", "lockstep", "manifest-diff", "--json", self.d("ddp_a"), self.d("ddp_t2")], env_for())
        diffs = [(x["rank"], x["key"], x["a"], x["b"]) for x in json.loads(p.stdout)["differences"]]
        self.assertEqual(diffs, [(1, "num_threads", 1, 2)])

    def test_preloaded_agent_is_used_and_matches(self):
        env = env_for(LD_PRELOAD=RUNS["pre"][1]["LD_PRELOAD"], LOCKSTEP_TRACE_DIR=os.path.join(self.tmp, "pre-where"))
        p = run_py(["-m", "lockstep", "where"], env)
        self.assertEqual((p.returncode, p.stdout.split()[0]), (0, "preloaded"), p.stdout + p.stderr)
        self.assertTrue(lockstep.diff(self.d("m_a"), self.d("pre"))["match"])
        self.assertTrue(os.path.exists(os.path.join(self.d("pre"), "rank-00000.python.json")))

    def test_mode_off_records_nothing_and_trains_the_same(self):
        self.assertFalse(os.path.exists(self.d("off")) and os.listdir(self.d("off")))
        self.assertEqual(self.out["off"].stdout, self.out["m_a"].stdout)  # the same final loss

    def test_explicit_steps_equal_auto_steps(self):
        self.assertTrue(lockstep.diff(self.d("m_a"), self.d("m_explicit"))["match"])

    def test_loss_metric_is_the_training_loss(self):
        losses = [r for r in dump(self.d("m_a")) if r["name"] == "loss"]
        self.assertEqual(len(losses), STEPS)
        printed = self.out["m_a"].stdout.split()[-1]
        self.assertEqual("%.9g" % losses[-1]["value"], printed)
        norms = [r["value"] for r in dump(self.d("m_a")) if r["name"] == "grad_norm"]
        self.assertEqual(len(norms), STEPS)
        self.assertTrue(all(n > 0 for n in norms))


class ThroughLockstepd(unittest.TestCase):
    """The same loops streamed to a real lockstepd (embedded PostgreSQL): the server compares the
    twins, names the first diverging module, and its manifest diff names the thread count."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-torch-srv-")
        cls.srv = Lockstepd(cls.tmp)
        cls.out = {}

        def one(job):
            group, threads = {"a1": ("py-twins", 1), "a2": ("py-twins", 1), "b1": ("py-threads", 1),
                              "b2": ("py-threads", 2)}[job]
            env = env_for(LOCKSTEP_SERVER=cls.srv.url, LOCKSTEP_TWIN_GROUP=group, LOCKSTEP_JOB_ID="py-" + job,
                          LOCKSTEP_MANIFEST_HASH="0", LOCKSTEP_TRACE="modules",
                          LOCKSTEP_SPOOL_DIR=os.path.join(cls.tmp, "spool-" + job))
            return job, run_py([TRAIN, "--steps", str(STEPS), "--threads", str(threads)], env)

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
                cls.out = dict(ex.map(one, ["a1", "a2", "b1", "b2"]))
        except BaseException:
            cls.srv.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def twins(self, group):
        for job, p in self.out.items():
            self.assertEqual(p.returncode, 0, "%s: %s" % (job, p.stderr[-2000:]))
        deadline = time.monotonic() + 20
        while True:
            t = self.srv.get("/api/v1/twins/" + group)
            if t["status"] != "pending" or time.monotonic() > deadline:
                return t
            time.sleep(0.2)

    def test_server_twins_match(self):
        t = self.twins("py-twins")
        self.assertEqual((t["status"], len(t["runs"])), ("match", 2), json.dumps(t)[:1500])

    def test_server_names_module_and_thread_count(self):
        t = self.twins("py-threads")
        self.assertEqual(t["status"], "diverged", json.dumps(t)[:1500])
        f = t["first_divergence"]
        self.assertEqual((f["step"], f["rank"], f["name"], f["kind"]), (0, 0, "bn.out", "mismatch"))
        d = self.srv.get("/api/v1/twins/py-threads/manifest-diff")
        vals = {x["key"]: [v["value"] for v in x["values"]] for x in d["diffs"]}
        self.assertEqual(sorted(vals.get("env.LOCKSTEP_PY_NUM_THREADS", [])), ["1", "2"], json.dumps(d)[:1500])
        self.assertNotIn("env.LOCKSTEP_PY_TORCH_VERSION", vals)
        # the thread count is configuration: it explains the divergence (no hardware to suspect)
        self.assertEqual(sorted(vals.get("used.threads.torch_intra", [])), ["1", "2"], json.dumps(d)[:1500])
        self.assertEqual(f["cause"], "configuration", json.dumps(f)[:1500])


class AgentFirst(unittest.TestCase):
    """As under Slurm, the agent starts before Python (preloaded, LOCKSTEP_SERVER set): the thread count Python
    sets afterwards still reaches lockstepd's manifest (ls_manifest_set, the manifest posted again), and twins
    that differ only by torch.set_num_threads are `configuration` with the thread count named."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-torch-pre-")
        cls.srv = Lockstepd(cls.tmp)
        cls.out = {}
        preload = " ".join(x for x in (os.environ.get("LD_PRELOAD", ""), LIB) if x)

        def one(job):
            # the same command line: the thread count comes from the environment, which the manifest does not keep
            env = env_for(LOCKSTEP_SERVER=cls.srv.url, LOCKSTEP_TWIN_GROUP="py-threads-pre",
                          LOCKSTEP_JOB_ID="py-" + job, LOCKSTEP_MANIFEST_HASH="0", LOCKSTEP_TRACE="modules",
                          LOCKSTEP_SPOOL_DIR=os.path.join(cls.tmp, "spool-" + job), LD_PRELOAD=preload,
                          TRAIN_MLP_THREADS={"p1": 1, "p2": 2}[job])
            return job, run_py([TRAIN, "--steps", str(STEPS)], env)

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
                cls.out = dict(ex.map(one, ["p1", "p2"]))
        except BaseException:
            cls.srv.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_thread_count_is_configuration(self):
        for job, p in self.out.items():
            self.assertEqual(p.returncode, 0, "%s: %s" % (job, p.stderr[-2000:]))
        deadline = time.monotonic() + 20
        while True:
            t = self.srv.get("/api/v1/twins/py-threads-pre")
            if t["status"] != "pending" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(t["status"], "diverged", json.dumps(t)[:1500])
        d = self.srv.get("/api/v1/twins/py-threads-pre/manifest-diff")
        vals = {x["key"]: [v["value"] for v in x["values"]] for x in d["diffs"]}
        self.assertNotIn("env.LOCKSTEP_PY_NUM_THREADS", vals)  # the agent started first: only the facts carry it
        self.assertNotIn("command", vals)
        self.assertEqual(sorted(vals.get("used.threads.torch_intra", [])), ["1", "2"], json.dumps(d)[:1500])
        f = t["first_divergence"]
        self.assertEqual(f["cause"], "configuration", json.dumps(f)[:1500])
        self.assertRegex(f["configuration"], r"used\.threads\.torch_intra differs \(rank 0\): '(1' vs '2|2' vs '1)'")
        # the fleet's classification: software, by configuration; no node gets evidence from it
        deadline = time.monotonic() + 20
        while not t.get("classification") and time.monotonic() < deadline:
            time.sleep(0.2)
            t = self.srv.get("/api/v1/twins/py-threads-pre")
        c = t.get("classification") or {}
        self.assertEqual((c.get("class"), c.get("code")), ("software", "configuration"), json.dumps(t)[:1500])


class InProcess(unittest.TestCase):
    """watch() inside this process: it changes no numerics, and close() undoes everything."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ls-torch-ip-")
        lockstep.shutdown()
        lockstep.init(trace="ops", trace_dir=self.dir, rank=0, run_id="inproc")

    def tearDown(self):
        lockstep.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def parts():
        """A fresh model, its Adam optimizer, the criterion and one batch (x, y), the same every time."""
        torch.manual_seed(7)
        model = nn.Sequential(OrderedDict(fc1=nn.Linear(8, 16), act=nn.Tanh(), fc2=nn.Linear(16, 2)))
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        crit = nn.CrossEntropyLoss()
        x = torch.randn(64, 8, generator=torch.Generator().manual_seed(3))
        y = torch.randint(0, 2, (64,), generator=torch.Generator().manual_seed(4))
        return model, opt, crit, x, y

    @classmethod
    def train(cls, watch_level=None, steps=3):
        model, opt, crit, x, y = cls.parts()
        w = lockstep.torch.watch(model, opt, level=watch_level, loss_fn=crit) if watch_level else None
        for _ in range(steps):
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        return model, opt, w

    @staticmethod
    def hooked(model, crit):
        """The module hooks left on model and crit."""
        return [m for m in list(model.modules()) + [crit] if m._forward_hooks or m._forward_pre_hooks]

    def test_with_block_closes_the_watch(self):
        model, opt, crit, x, y = self.parts()
        with lockstep.torch.watch(model, opt, level="modules", loss_fn=crit) as w:
            self.assertIsInstance(w, lockstep.torch.Watch)
            self.assertIn("step", opt.__dict__)
            self.assertTrue(self.hooked(model, crit))
            for _ in range(2):
                opt.zero_grad()
                crit(model(x), y).backward()
                opt.step()
        self.assertNotIn("step", opt.__dict__)
        self.assertEqual(self.hooked(model, crit), [])
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()  # after the block: trained, not recorded
        lockstep.shutdown()
        recs = dump(self.dir)
        self.assertEqual([r["step"] for r in recs if r["name"] == "loss"], [0, 1])
        self.assertEqual([r["step"] for r in recs if r["name"] == "grad_norm"], [0, 1])
        w.close()  # closing again after the block is harmless

    def test_with_block_closes_on_an_exception(self):
        model, opt, crit, x, y = self.parts()
        with self.assertRaises(ZeroDivisionError):
            with lockstep.torch.watch(model, opt, loss_fn=crit):
                crit(model(x), y).backward()
                1 / 0
        self.assertNotIn("step", opt.__dict__)
        self.assertEqual(self.hooked(model, crit), [])

    def schedule(self, order):
        """Train 3 steps with a StepLR halving the rate each step, watched (order "watch-first": watch(), then
        the scheduler; "scheduler-first": the other way round) or not (None), then close the watch and train
        one step more. Returns (model, optimizer, the rate after each step, torch's warnings about the two)."""
        model, opt, crit, x, y = self.parts()
        w = None
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if order == "watch-first":
                w = lockstep.torch.watch(model, opt, level="modules", loss_fn=crit)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            if order == "scheduler-first":
                w = lockstep.torch.watch(model, opt, level="modules", loss_fn=crit)
            lrs = []
            for i in range(4):
                if i == 3 and w is not None:
                    w.close()
                opt.zero_grad()
                crit(model(x), y).backward()
                opt.step()
                sched.step()
                lrs.append(opt.param_groups[0]["lr"])
        said = [str(m.message) for m in seen if "optimizer.step()" in str(m.message)]
        return model, opt, lrs, said

    def test_lr_scheduler_built_after_watch(self):
        # torch's scheduler wraps optimizer.step to count the calls (and warns when that wrapper is gone by its
        # first step): it must wrap watch's step as it wraps the optimizer's own, and watch must still record.
        plain, _, want_lrs, _ = self.schedule(None)
        for order in ("watch-first", "scheduler-first"):
            lockstep.shutdown()
            d = os.path.join(self.dir, order)
            lockstep.init(trace="modules", trace_dir=d, rank=0, run_id=order)
            model, opt, lrs, said = self.schedule(order)
            self.assertEqual(said, [], order)
            self.assertEqual(lrs, want_lrs, order)
            self.assertEqual(lrs, [0.005, 0.0025, 0.00125, 0.000625])
            self.assertEqual(opt._step_count, 4, "%s: the scheduler's count survives close()" % order)
            for (n, p), (_, q) in zip(plain.named_parameters(), model.named_parameters()):
                self.assertTrue(torch.equal(p, q), "%s: %s" % (order, n))
            lockstep.shutdown()
            self.assertEqual([r["step"] for r in dump(d) if r["name"] == "grad_norm"], [0, 1, 2], order)
            if order == "scheduler-first":
                self.assertTrue(getattr(opt.__dict__.get("step"), "_with_counter", False) or
                                getattr(opt.__dict__.get("step"), "_wrapped_by_lr_sched", False),
                                "close() gives back the scheduler's wrapper")

    def test_watch_changes_no_numerics(self):
        plain, _, _ = self.train()
        watched, _, w = self.train("ops")
        w.close()
        for (n, p), (_, q) in zip(plain.named_parameters(), watched.named_parameters()):
            self.assertTrue(torch.equal(p, q), n)

    def test_close_removes_hooks(self):
        model, opt, w = self.train("ops", steps=1)
        self.assertIn("step", opt.__dict__)
        w.close()
        w.close()
        self.assertNotIn("step", opt.__dict__)
        lockstep.shutdown()
        n = len(dump(self.dir))
        self.assertGreater(n, 10)
        lockstep.init(trace="ops", trace_dir=self.dir + "-2", rank=0)
        try:
            with lockstep.step(0):
                model(torch.zeros(2, 8)).sum().backward()
                opt.step()
            lockstep.shutdown()
            self.assertEqual(dump(self.dir + "-2"), [])
        finally:
            shutil.rmtree(self.dir + "-2", ignore_errors=True)

    def test_manifest_records_thread_changes(self):
        saved = torch.get_num_threads()
        model, opt, w = self.train("modules", steps=1)  # auto step 0 -> step 1
        try:
            first = json.load(open(os.path.join(self.dir, "rank-00000.python.json")))
            self.assertEqual(first["num_threads"], saved)
            torch.set_num_threads(saved + 1)
            opt.step()  # opens step 2 with the new count
            torch.set_num_threads(saved)
            opt.step()  # step 3: back to the first count
        finally:
            torch.set_num_threads(saved)
            w.close()
        m = json.load(open(os.path.join(self.dir, "rank-00000.python.json")))
        self.assertEqual(m["num_threads_changes"], [[2, saved + 1], [3, saved]])

    def test_grad_norm_does_not_depend_on_thread_count(self):
        grads = [torch.randn(1000, 1000, generator=torch.Generator().manual_seed(1)), torch.randn(77)]
        saved = torch.get_num_threads()
        got = {}
        try:
            for n in (1, 2, 3):
                torch.set_num_threads(n)
                got[n] = lockstep.torch.grad_norm(grads)
                got["torch-only %d" % n] = lockstep.torch._sum_squares_cpu(grads[0], use_numpy=False)
            # the premise: torch's own sum does change with the thread count
            torch.set_num_threads(1)
            one = grads[0].double().pow(2).sum().item()
            torch.set_num_threads(2)
            two = grads[0].double().pow(2).sum().item()
        finally:
            torch.set_num_threads(saved)
        self.assertNotEqual(one, two)
        self.assertEqual(len({got[n] for n in (1, 2, 3)}), 1, got)
        self.assertEqual(len({got["torch-only %d" % n] for n in (1, 2, 3)}), 1, got)
        want = float(torch.cat([g.double().reshape(-1) for g in grads]).norm())
        self.assertAlmostEqual(got[1], want, delta=want * 1e-12)
        self.assertAlmostEqual(got["torch-only 1"], one, delta=one * 1e-12)

    def test_sparse_gradients(self):
        torch.manual_seed(0)
        model = nn.Sequential(OrderedDict(emb=nn.Embedding(10, 4, sparse=True), fc=nn.Linear(4, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        w = lockstep.torch.watch(model, opt, level="modules")
        x = torch.tensor([1, 2, 3, 2])
        for _ in range(2):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        w.close()
        lockstep.shutdown()
        recs = {(r["step"], r["name"]): r for r in dump(self.dir)}
        for s in (0, 1):
            self.assertEqual(recs[(s, "emb.weight.grad.indices")]["shape"], [1, 3])  # 3 distinct rows
            self.assertEqual(recs[(s, "emb.weight.grad.values")]["shape"], [3, 4])
            self.assertIn((s, "grad_norm"), recs)

    def test_ops_after_default_init_warns(self):
        lockstep.shutdown()
        saved = os.environ.pop("LOCKSTEP_TRACE", None)
        try:
            lockstep.init(trace_dir=self.dir)  # defaults to modules
            with self.assertWarnsRegex(RuntimeWarning, "call watch\\(\\) first"):
                _, _, w = self.train("ops", steps=1)
            w.close()
        finally:
            if saved is not None:
                os.environ["LOCKSTEP_TRACE"] = saved

    def test_user_ops_unchanged_in_ops_window(self):
        model, opt, w = self.train("ops", steps=1)
        try:
            i = torch.arange(6, dtype=torch.int32)
            self.assertTrue(torch.equal(i ^ 5, torch.tensor([5, 4, 7, 6, 1, 0], dtype=torch.int32)))
            self.assertEqual((i ^ 5).dtype, torch.int32)
            h = torch.ones(3, dtype=torch.float16)
            self.assertEqual((h + 1.5).dtype, torch.float16)
        finally:
            w.close()


if __name__ == "__main__":
    unittest.main()
