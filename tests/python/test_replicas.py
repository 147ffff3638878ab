"""test_replicas.py - replicas in the binding: DDP parameters checked after the optimizer step agree across ranks in a
clean run, a corrupted update is found at its step and rank, groups given by hand, and what watch() leaves out."""

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

from helpers import BUILD_ABS, HERE, SRC, Lockstepd, dump, env_for, run_py

sys.path.insert(0, os.path.join(SRC, "agent", "python"))
import lockstep  # noqa: E402
import lockstep.torch  # noqa: E402
from lockstep import _torch_replicas  # noqa: E402

TRAIN = os.path.join(HERE, "train_ddp.py")
PARAMS = ["param.module.fc1.weight", "param.module.fc1.bias", "param.module.fc2.weight", "param.module.fc2.bias"]

# name -> (train_ddp.py arguments, extra environment, world size)
RUNS = {
    "clean": (["--every", "1", "--extra"], {}, 3),
    "adam_env": (["--opt", "adam"], {"LOCKSTEP_REPLICA_EVERY": "2"}, 2),
    "default": ([], {}, 2),
    "bad": (["--every", "1", "--corrupt", "1:2"], {}, 3),
    "bad_every2": (["--every", "2", "--corrupt", "2:1"], {"LOCKSTEP_MODE": "consensus"}, 3),
    # no false alarms: a whole run of 10,000 steps in the production mode, every update checked
    "long": (["--opt", "adam", "--every", "1", "--steps", str(10000)], {"LOCKSTEP_MODE": "consensus"}, 2),
}


def traces(d, world):
    """Every record of each rank's trace in run directory `d`: {rank: [record dicts]}."""
    return {r: dump(os.path.join(d, "rank-%05d.lstrace" % r)) for r in range(world)}


def digests(recs):
    """The consensus digests of a run's traces: {(step, key, window): {rank: (records folded, fold, comm ranks)}}."""
    out = {}
    for r, rs in recs.items():
        for x in rs:
            if x["name"] == "consensus.digest":
                out.setdefault((x["step"], x["comm"]["id"], x["occurrence"]), {})[r] = (
                    x["nbytes"], x["fp"], tuple(x["comm"].get("ranks", ())))
    return out


def odd_ranks(copies):
    """The ranks outside the majority of `copies` ({rank: (n, fold, ranks)}); [] when every copy agrees."""
    values = [v[:2] for v in copies.values()]
    major = max(values, key=values.count)
    return sorted(r for r, v in copies.items() if v[:2] != major)


def replica_fps(recs, name):
    """{step: {rank: fp}} of the replica records called `name`."""
    out = {}
    for r, rs in recs.items():
        for x in rs:
            if x["name"] == name:
                out.setdefault(x["step"], {})[r] = x["fp"]
    return out


class ReplicaRuns(unittest.TestCase):
    """Runs each DDP program of RUNS once (two at a time), then reads the traces back."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-replicas-")
        cls.out = {}

        def one(name):
            args, extra, world = RUNS[name]
            d = os.path.join(cls.tmp, name)
            env = env_for(LOCKSTEP_TRACE_DIR=d, LOCKSTEP_RUN_ID=name, **extra)  # no inherited LOCKSTEP_*
            return name, run_py([TRAIN, "--world", str(world), "--steps", "5"] + args, env, timeout=900)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:  # the long run first, beside the others
            for name, p in ex.map(one, sorted(RUNS, key=lambda n: (n != "long", n))):
                cls.out[name] = p

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def recs(self, name):
        p = self.out[name]
        self.assertEqual(p.returncode, 0, "%s failed:\n%s" % (name, p.stderr[-3000:]))
        self.assertNotIn("lockstep:", p.stderr, "%s warned:\n%s" % (name, p.stderr[-3000:]))
        return traces(os.path.join(self.tmp, name), RUNS[name][2])

    def first_disagreement(self, name):
        """(step, key, odd ranks) of the first window whose copies differ, or None; every member reports."""
        for (step, key, window), copies in sorted(digests(self.recs(name)).items()):
            members = set(next(iter(copies.values()))[2])
            self.assertEqual(set(copies), members, "%s: step %d key %s window %d: ranks reporting" %
                             (name, step, key, window))
            odd = odd_ranks(copies)
            if odd:
                return step, key, odd
        return None

    # --- a clean run agrees at every checked step
    def test_clean_run_agrees_every_step(self):
        recs = self.recs("clean")
        ds = digests(recs)
        world = (0, 1, 2)
        steps_world = sorted(s for (s, _, _), c in ds.items() if next(iter(c.values()))[2] == world)
        self.assertEqual(steps_world, [0, 1, 2, 3, 4])  # checked after every optimizer step (replica_every=1)
        for key, copies in ds.items():
            self.assertEqual(odd_ranks(copies), [], "clean run disagrees at %s" % (key,))
            self.assertEqual(sorted(copies), list(next(iter(copies.values()))[2]))
        for (step, _, _), copies in ds.items():
            if next(iter(copies.values()))[2] == world:  # DDP's four parameters and extra.world (group None)
                self.assertEqual({v[0] for v in copies.values()}, {5}, "step %d" % step)
        for name in PARAMS:
            fps = replica_fps(recs, name)
            self.assertEqual(sorted(fps), [0, 1, 2, 3, 4], name)
            for step, by_rank in fps.items():
                self.assertEqual(sorted(by_rank), [0, 1, 2])
                self.assertEqual(len(set(by_rank.values())), 1, "%s differs at step %d" % (name, step))
        # the parameters changed from step to step: the records are the trained parameters, not a constant
        self.assertEqual(len({v[0] for v in replica_fps(recs, PARAMS[0]).values()}), 5)
        self.assertIsNone(self.first_disagreement("clean"))

    def test_groups_by_hand(self):
        recs = self.recs("clean")
        ds = digests(recs)
        pair = {k: c for k, c in ds.items() if next(iter(c.values()))[2] == (0, 1)}
        self.assertEqual(sorted(k[0] for k in pair), [0, 1, 2, 3, 4])
        for copies in pair.values():
            self.assertEqual(sorted(copies), [0, 1])  # rank 2 is no member: it reports nothing for the pair
            self.assertEqual({v[0] for v in copies.values()}, {2})  # extra.pair (a list) and extra.pg (a group)
        world_keys = {k[1] for k, c in ds.items() if next(iter(c.values()))[2] == (0, 1, 2)}
        self.assertEqual(len(world_keys), 1)  # DDP's process group and group None are one group: one key
        self.assertNotIn(next(iter(world_keys)), {k[1] for k in pair})
        for name, ranks in (("extra.world", [0, 1, 2]), ("extra.pair", [0, 1]), ("extra.pg", [0, 1])):
            for step, by_rank in replica_fps(recs, name).items():
                self.assertEqual(sorted(by_rank), ranks, name)
                self.assertEqual(len(set(by_rank.values())), 1, name)
        for r in range(3):
            m = json.load(open(os.path.join(self.tmp, "clean", "rank-%05d.python.json" % r)))
            self.assertEqual(m["replicas"], {"checked": True, "every": 1, "params": 4, "ranks": [0, 1, 2]})

    def test_long_clean_run_agrees(self):
        recs = self.recs("long")
        ds = digests(recs)
        self.assertEqual(sorted(k[0] for k in ds), list(range(10000)))
        for key, copies in ds.items():
            self.assertEqual((sorted(copies), odd_ranks(copies)), ([0, 1], []), "long run disagrees at %s" % (key,))
            self.assertEqual({v[0] for v in copies.values()}, {4})
        self.assertEqual({x["level"] for x in recs[0]}, {"metric", "collective"})  # the consensus mode's records

    def test_every_from_the_environment_and_default(self):
        recs = self.recs("adam_env")  # LOCKSTEP_REPLICA_EVERY=2
        self.assertEqual(sorted(replica_fps(recs, PARAMS[0])), [0, 2, 4])
        self.assertIsNone(self.first_disagreement("adam_env"))
        recs = self.recs("default")  # 5 steps, one check in DEFAULT_EVERY: the first update only
        self.assertGreater(_torch_replicas.DEFAULT_EVERY, 5)
        self.assertEqual(sorted(replica_fps(recs, PARAMS[0])), [0])
        self.assertIsNone(self.first_disagreement("default"))

    # --- a corrupted update is found at its step, on its rank, in its record
    def test_corrupted_update_found(self):
        recs = self.recs("bad")
        step, _, odd = self.first_disagreement("bad")
        self.assertEqual((step, odd), (2, [1]))
        fps = replica_fps(recs, "param.module.fc1.weight")
        for s in (0, 1):
            self.assertEqual(len(set(fps[s].values())), 1, "step %d" % s)
        self.assertNotEqual(fps[2][1], fps[2][0])
        self.assertEqual(fps[2][0], fps[2][2])
        for name in PARAMS[1:]:  # the other parameters of step 2 still agree
            self.assertEqual(len(set(replica_fps(recs, name)[2].values())), 1, name)
        self.assertNotEqual(fps[3][1], fps[3][0])  # a replica that diverged stays diverged

    def test_corrupted_update_found_at_next_check(self):
        step, _, odd = self.first_disagreement("bad_every2")  # corrupted at step 1, checked at 0, 2, 4
        self.assertEqual((step, odd), (2, [2]))


class ThroughLockstepd(unittest.TestCase):
    """The DDP programs streamed to a real lockstepd (embedded PostgreSQL), which checks each run against itself with
    no twin: the clean run agrees, the corrupted update is the run's first disagreement, at its step, rank and
    record."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ls-replicas-srv-")
        cls.srv = Lockstepd(cls.tmp)
        cls.out = {}

        def one(job):
            args, world = {"clean": (["--every", "1"], 2), "bad": (["--every", "1", "--corrupt", "1:2"], 3)}[job]
            # the corrupted run in the production mode: digests streamed, its records asked for on demand
            env = env_for(LOCKSTEP_SERVER=cls.srv.url, LOCKSTEP_JOB_ID="py-rep-" + job, LOCKSTEP_MANIFEST_HASH="0",
                          LOCKSTEP_TRACE_DIR=os.path.join(cls.tmp, job),
                          LOCKSTEP_SPOOL_DIR=os.path.join(cls.tmp, "spool-" + job),
                          LOCKSTEP_MODE="consensus" if job == "bad" else "fp")
            return job, run_py([TRAIN, "--world", str(world), "--steps", "5"] + args, env, timeout=300)

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
                cls.out = dict(ex.map(one, ["clean", "bad"]))
        except BaseException:
            cls.srv.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def consensus(self, job, want):
        p = self.out[job]
        self.assertEqual(p.returncode, 0, "%s: %s" % (job, p.stderr[-2000:]))
        deadline = time.monotonic() + 30
        runs = self.srv.get("/api/v1/runs?job=py-rep-" + job)["items"]
        while not runs and time.monotonic() < deadline:
            time.sleep(0.2)
            runs = self.srv.get("/api/v1/runs?job=py-rep-" + job)["items"]
        self.assertEqual([r["ranks"] for r in runs], [{"clean": 2, "bad": 3}[job]])
        run = runs[0]["run_id"]
        replayed = False
        while True:
            c = self.srv.get("/api/v1/runs/%s/consensus" % run)
            # A disagreement is stored from the digests at once; its record is named once the agents sent the
            # step's held-back records (the production mode streams digests). A run this short can end before
            # lockstepd asks: its agents left the records in their spools, and the user sends what lockstepd
            # asks for with `lockstep replay --steps asked`, as docs/cli.md says.
            named = c["status"] != "disagree" or (c["first"] or {}).get("name")
            if (c["status"] == want and named) or time.monotonic() > deadline:
                return c
            if c["status"] == "disagree" and not replayed:
                subprocess.run([os.path.join(BUILD_ABS, "bin", "lockstep"), "replay", "--server", self.srv.url,
                                "--steps", "asked", os.path.join(self.tmp, "spool-" + job)],
                               check=True, capture_output=True, timeout=60)
                replayed = True
            time.sleep(0.2)

    def test_clean_run_agrees(self):
        c = self.consensus("clean", "agree")
        self.assertEqual((c["status"], c["first"]), ("agree", None), json.dumps(c))
        self.assertGreaterEqual(c["checked"], 5)

    def test_corrupted_update_is_the_first_disagreement(self):
        c = self.consensus("bad", "disagree")
        self.assertEqual(c["status"], "disagree", json.dumps(c))
        f = c["first"]
        self.assertEqual((f["step"], f["comm_ranks"], f["odd_ranks"], f["clear"]), (2, [0, 1, 2], [1], True),
                         json.dumps(c))
        deadline = time.monotonic() + 30
        while f.get("name") is None and time.monotonic() < deadline:  # the record comes on demand
            time.sleep(0.2)
            f = self.consensus("bad", "disagree")["first"]
        self.assertEqual(f["name"], "param.module.fc1.weight", json.dumps(f))


class ReplicaPlan(unittest.TestCase):
    """What watch() checks, decided without a process group."""

    def model(self):
        torch.manual_seed(0)
        return nn.Sequential(OrderedDict(fc1=nn.Linear(4, 3), fc2=nn.Linear(3, 1)))

    def test_every(self):
        saved = os.environ.pop("LOCKSTEP_REPLICA_EVERY", None)
        try:
            self.assertEqual(_torch_replicas.every_of(None), _torch_replicas.DEFAULT_EVERY)
            self.assertEqual(_torch_replicas.every_of(7), 7)
            self.assertEqual(_torch_replicas.every_of(0), 0)
            os.environ["LOCKSTEP_REPLICA_EVERY"] = " 25 "
            self.assertEqual(_torch_replicas.every_of(None), 25)
            self.assertEqual(_torch_replicas.every_of(3), 3)  # the argument wins
            for bad in ("-1", "x", "1.5"):
                os.environ["LOCKSTEP_REPLICA_EVERY"] = bad
                with self.assertRaisesRegex(ValueError, "LOCKSTEP_REPLICA_EVERY"):
                    _torch_replicas.every_of(None)
            for bad in (-3, 2.0, True):
                with self.assertRaisesRegex(ValueError, "replica_every"):
                    _torch_replicas.every_of(bad)
        finally:
            os.environ.pop("LOCKSTEP_REPLICA_EVERY", None)
            if saved is not None:
                os.environ["LOCKSTEP_REPLICA_EVERY"] = saved

    def test_plan(self):
        m = self.model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        p = _torch_replicas.plan(m, opt, "auto", 5)
        self.assertEqual(p.params, [])  # no process group: nothing is known to be replicated
        self.assertFalse(p.describe()["checked"])
        p = _torch_replicas.plan(m, opt, [1, 0], 5)  # data parallelism by hand: every parameter
        self.assertEqual([n for n, _ in p.params], ["param.fc1.weight", "param.fc1.bias", "param.fc2.weight",
                                                    "param.fc2.bias"])
        self.assertEqual((p.ranks, p.every), ([1, 0], 5))
        self.assertEqual([u for u in range(12) if p.due(u)], [0, 5, 10])
        self.assertEqual(_torch_replicas.plan(m, opt, None, 5).params, [])
        self.assertEqual(_torch_replicas.plan(m, opt, [0, 1], 0).params, [])
        with self.assertRaisesRegex(ValueError, "auto"):
            _torch_replicas.plan(m, opt, "ddp", 5)

    def test_sharded_is_not_checked(self):
        class FullyShardedDataParallel(nn.Module):  # found by class name, as torch's and fairscale's are
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

        class ZeroRedundancyOptimizer(torch.optim.SGD):
            pass

        m = self.model()
        p = _torch_replicas.plan(FullyShardedDataParallel(m), None, [0, 1], 1)
        self.assertEqual(p.params, [])
        self.assertIn("FullyShardedDataParallel", p.note)
        p = _torch_replicas.plan(m, ZeroRedundancyOptimizer(m.parameters(), lr=0.1), [0, 1], 1)
        self.assertEqual(p.params, [])
        self.assertIn("ZeroRedundancyOptimizer", p.note)
        self.assertIn("ZeroRedundancyOptimizer", p.describe()["why"])

    def test_group_ranks(self):
        self.assertIsNone(lockstep._core.group_ranks(None))
        self.assertEqual(lockstep._core.group_ranks((3, 1)), [3, 1])
        for bad, exc in (([], ValueError), ([0, -1], ValueError), ("01", TypeError), (5, TypeError)):
            with self.assertRaises(exc):
                lockstep._core.group_ranks(bad)


class ReplicatedCall(unittest.TestCase):
    """lockstep.replicated and w.replicated in one process, read back from the trace."""

    def test_records(self):
        tmp = tempfile.mkdtemp(prefix="ls-replicated-")
        try:
            code = (
                "import torch, lockstep, lockstep.torch, warnings\n"
                "m = torch.nn.Linear(2, 2)\n"
                "lockstep.init(trace='collectives')\n"
                "w = lockstep.torch.watch(m, torch.optim.SGD(m.parameters(), lr=0.1))\n"
                "lockstep.replicated('a', torch.arange(6, dtype=torch.int32).reshape(2, 3))\n"
                "lockstep.replicated('b', bytearray(b'xyz'), group=[0])\n"
                "w.replicated('c', torch.ones(4), group=[0, 2])\n"
                "with warnings.catch_warnings(record=True) as got:\n"
                "    warnings.simplefilter('always')\n"
                "    print('bad group', w.replicated('d', torch.ones(4), group=[]), len(got))\n"
                "try:\n"
                "    lockstep.replicated('e', torch.ones(1), group='all')\n"
                "except TypeError as e:\n"
                "    print('TypeError', e)\n"
                "w.close(); lockstep.shutdown()\n")
            p = run_py(["-c", code], env_for(LOCKSTEP_TRACE_DIR=tmp, LOCKSTEP_RANK=0, LOCKSTEP_RANKS=1))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("bad group False 1", p.stdout)
            self.assertIn("TypeError a replica group", p.stdout)
            recs = {x["name"]: x for x in dump(os.path.join(tmp, "rank-00000.lstrace"))}
            self.assertEqual(recs["a"]["level"], "collective")
            self.assertEqual((recs["a"]["dtype"], recs["a"]["nbytes"]), ("i32", 24))
            self.assertEqual(recs["a"]["fp"], "%016x" % lockstep.fingerprint(torch.arange(6, dtype=torch.int32)))
            self.assertEqual((recs["b"]["dtype"], recs["b"]["nbytes"]), ("u8", 3))
            self.assertIn("c", recs)
            self.assertNotIn("d", recs)
            ds = [x for x in dump(os.path.join(tmp, "rank-00000.lstrace")) if x["name"] == "consensus.digest"]
            self.assertEqual(sorted((tuple(x["comm"]["ranks"]), x["nbytes"]) for x in ds), [((0,), 2), ((0, 2), 1)])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_sharded_by_hand_warns(self):
        tmp = tempfile.mkdtemp(prefix="ls-replicated-")
        try:
            code = (
                "import torch, lockstep, lockstep.torch, warnings\n"
                "class FullyShardedDataParallel(torch.nn.Module):\n"
                "    def __init__(self, m):\n"
                "        super().__init__(); self.m = m\n"
                "    def forward(self, x):\n"
                "        return self.m(x)\n"
                "m = FullyShardedDataParallel(torch.nn.Linear(2, 2))\n"
                "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                "with warnings.catch_warnings(record=True) as got:\n"
                "    warnings.simplefilter('always')\n"
                "    w = lockstep.torch.watch(m, opt, replicas=[0], replica_every=1)\n"
                "print('warned', [str(x.message) for x in got])\n"
                "m(torch.ones(1, 2)).sum().backward(); opt.step()\n"
                "print('checked', w.replicas.describe()['checked'])\n"
                "w.close(); lockstep.shutdown()\n")
            p = run_py(["-c", code], env_for(LOCKSTEP_TRACE_DIR=tmp, LOCKSTEP_RANK=0))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("watch(replicas=...) not checked: FullyShardedDataParallel shards the parameters", p.stdout)
            self.assertIn("checked False", p.stdout)
            recs = dump(os.path.join(tmp, "rank-00000.lstrace"))
            self.assertEqual([x for x in recs if x["level"] == "collective" or x["name"] == "consensus.digest"], [])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    with warnings.catch_warnings():
        unittest.main()
