"""bench_watch.py - cost of lockstep.torch.watch on a real CPU training step, by level; prints one JSON line.

Each configuration trains the same MLP (fc1 -> BatchNorm1d -> ReLU -> fc2, batch 2048) in this
process, with the trace written to a temporary directory; configurations take turns a few steps
at a time, and the median CPU time per step of each (process time: torch runs one thread, and
other processes on a busy machine do not count) is reported with its overhead against no
watch. Also the binding's throughput on a 64 MiB tensor (lockstep.tensor, recorded) against
torch's own clone of it.
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import OrderedDict

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "agent", "python"))
import lockstep  # noqa: E402
import lockstep.torch  # noqa: E402

ROUNDS, PER_ROUND = 8, 3
LEVELS = (None, "metrics", "modules", "ops")


class Config:
    """One model and optimizer, trained a few steps at a time under one watch level."""

    def __init__(self, level, tmp):
        torch.manual_seed(0)
        self.level, self.tmp = level, tmp
        self.model = nn.Sequential(OrderedDict(fc1=nn.Linear(64, 128), bn=nn.BatchNorm1d(128), act=nn.ReLU(),
                                               fc2=nn.Linear(128, 10)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.crit = nn.CrossEntropyLoss()
        self.x = torch.randn(2048, 64)
        self.y = torch.randint(0, 10, (2048,))
        self.times = []

    def run(self, steps, timed):
        w = None
        if self.level:
            lockstep.init(trace=self.level, trace_dir=os.path.join(self.tmp, self.level), rank=0)
            w = lockstep.torch.watch(self.model, self.opt, level=self.level, loss_fn=self.crit)
        for _ in range(steps):
            t0 = time.process_time()
            self.opt.zero_grad()
            self.crit(self.model(self.x), self.y).backward()
            self.opt.step()
            if timed:
                self.times.append(time.process_time() - t0)
        if w:
            w.close()
            lockstep.shutdown()


def main():
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="ls-bench-py-")
    try:
        # Configurations take turns, a few steps each, so that a busy machine slows them alike.
        cfgs = [Config(lv, tmp) for lv in LEVELS]
        for c in cfgs:
            c.run(2, timed=False)
        for _ in range(ROUNDS):
            for c in cfgs:
                c.run(PER_ROUND, timed=True)
        med = {c.level: statistics.median(c.times) for c in cfgs}
        base = med[None]
        out = {"bench": "python_watch", "torch": torch.__version__, "threads": 1, "batch": 2048,
               "steps_each": ROUNDS * PER_ROUND, "step_ms_plain": round(base * 1e3, 3)}
        for level in LEVELS[1:]:
            out["step_ms_" + level] = round(med[level] * 1e3, 3)
            out["overhead_pct_" + level] = round((med[level] / base - 1) * 100, 2)
        big = torch.randn(16 << 20)  # 64 MiB
        lockstep.init(trace="modules", trace_dir=os.path.join(tmp, "big"), rank=0)
        with lockstep.step(0):
            t0 = time.process_time()
            for _ in range(5):
                lockstep.tensor("big", big)
            rec = (time.process_time() - t0) / 5
        lockstep.shutdown()
        t0 = time.process_time()
        for _ in range(5):
            big.clone()
        clone = (time.process_time() - t0) / 5
        out["tensor_64MiB_GBps"] = round(big.numel() * 4 / rec / 1e9, 2)
        out["clone_64MiB_GBps"] = round(big.numel() * 4 / clone / 1e9, 2)
        print(json.dumps(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
