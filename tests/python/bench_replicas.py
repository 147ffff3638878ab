"""bench_replicas.py - what checking every parameter as a replica costs against a training step; prints one JSON line.

A GPT-2-shaped decoder (token and position embeddings, pre-norm transformer blocks, a tied LM head; width, depth,
vocabulary and tokens per step from the command line) trains with AdamW in this process, one thread. Reported: the
median CPU time of a training step, of recording every parameter with lockstep.replicated (what watch() does after
every K-th optimizer step of a DDP model), and of the same pass as plain fingerprints (lockstep.fingerprint, no
record); the check's throughput; and the K at which one check in K steps costs 1 % of the training time.
With --device cuda the model trains on the GPU, times are wall-clock around a device synchronisation, the check
hashes on the GPU (ls_replica_device), and `copy_check_ms` is the check through a copy to the host.

usage: bench_replicas.py [--width 256] [--layers 4] [--vocab 8192] [--seq 128] [--batch 2] [--steps 5] [--device cpu]
"""

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "agent", "python"))
import lockstep  # noqa: E402


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, seq, d, layers):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, max(1, d // 64)) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


def timed(fn, n, sync=None):
    """The median time of fn: CPU time, or with `sync` (a device synchronisation) wall time around it."""
    clock = time.perf_counter if sync else time.process_time
    out = []
    for _ in range(n):
        if sync:
            sync()
        t0 = clock()
        fn()
        if sync:
            sync()
        out.append(clock() - t0)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    gpu = args.device != "cpu"
    sync = torch.cuda.synchronize if gpu else None
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT(args.vocab, args.seq, args.width, args.layers).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    crit = nn.CrossEntropyLoss()
    idx = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=args.device)
    params = list(model.named_parameters())
    nbytes = sum(p.numel() * p.element_size() for _, p in params)

    def step():
        opt.zero_grad()
        crit(model(idx[:, :-1]).reshape(-1, args.vocab), idx[:, 1:].reshape(-1)).backward()
        opt.step()

    def check():
        for n, p in params:
            lockstep.replicated("param." + n, p.detach())

    def fps():
        for _, p in params:
            lockstep.fingerprint(p.detach())

    def copy_check():
        for n, p in params:
            lockstep.replicated("param." + n, p.detach().cpu())

    tmp = tempfile.mkdtemp(prefix="ls-bench-rep-")
    try:
        lockstep.init(trace="collectives", trace_dir=tmp, rank=0)
        step()  # warm up: AdamW's state is allocated by the first step
        with lockstep.step(0):
            check()
        t_step = timed(step, args.steps, sync)
        with lockstep.step(1):
            t_check = timed(check, 9, sync)
        with lockstep.step(2):
            t_copy = timed(copy_check, 3, sync) if gpu else None
        t_fp = timed(fps, 9, sync) if not gpu else None
        lockstep.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({
        "bench": "python_replicas", "torch": torch.__version__, "device": torch.cuda.get_device_name() if gpu else
        "cpu", "threads": 1, "params": sum(p.numel() for _, p in params),
        "tensors": len(params), "param_MB": round(nbytes / 1e6, 1), "tokens_per_step": args.batch * args.seq,
        "step_ms": round(t_step * 1e3, 1), "check_ms": round(t_check * 1e3, 2),
        "fingerprint_ms": round(t_fp * 1e3, 2) if t_fp is not None else None,
        "copy_check_ms": round(t_copy * 1e3, 2) if t_copy is not None else None,
        "check_GBps": round(nbytes / t_check / 1e9, 2), "check_pct_of_step": round(t_check / t_step * 100, 3),
        "every_for_1pct": max(1, math.ceil(t_check / (0.01 * t_step))),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
