"""train_mlp.py - a small real PyTorch training loop under lockstep.torch.watch, for the Python tier.

usage: train_mlp.py [--threads N (default: $TRAIN_MLP_THREADS or 1)] [--steps N] [--level modules|ops] [--perturb MODULE:STEP]
                    [--explicit-steps] [--ddp [--rank1-threads N]]
The trace goes to LOCKSTEP_TRACE_DIR (set by the caller). --perturb flips the lowest mantissa
bit of one weight of MODULE as STEP's forward starts: a deterministic stand-in for a faulty op.
"""

import argparse
import os
import sys
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn

import lockstep
import lockstep.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TRAIN_MLP_THREADS", "1")),
                    help="torch.set_num_threads (default: TRAIN_MLP_THREADS, else 1)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--level", default="modules")
    ap.add_argument("--perturb", default=None)
    ap.add_argument("--explicit-steps", action="store_true")
    ap.add_argument("--ddp", action="store_true", help="DistributedDataParallel over gloo (RANK, WORLD_SIZE, "
                    "MASTER_ADDR, MASTER_PORT from the environment, as torchrun sets them)")
    ap.add_argument("--rank1-threads", type=int, default=None, help="with --ddp: rank 1's thread count")
    args = ap.parse_args()

    rank = 0
    if args.ddp:
        import torch.distributed as dist

        dist.init_process_group("gloo")
        rank = dist.get_rank()
    threads = args.rank1_threads if rank == 1 and args.rank1_threads else args.threads
    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    # BatchNorm1d's training-mode statistics are a parallel reduction over the batch: with
    # ATen's OpenMP backend their low bits depend on the thread count (verified by the tier).
    model = nn.Sequential(OrderedDict(fc1=nn.Linear(16, 64), bn=nn.BatchNorm1d(64), act=nn.ReLU(),
                                      fc2=nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.MSELoss()
    g = torch.Generator().manual_seed(99 + rank)  # each rank its own shard of data
    x = torch.randn(args.batch, 16, generator=g)
    y = (x[:, :1] * 0.5 - x[:, 1:2] ** 2 + 0.1 * torch.randn(args.batch, 1, generator=g))

    if args.perturb:
        # Flip the lowest mantissa bit of one weight of MODULE as its forward starts at STEP,
        # through numpy so that no torch op records it: the module's first op then computes
        # on one wrong bit, like a faulty memory cell under that op.
        mod_name, at = args.perturb.split(":")
        target = dict(model.named_modules())[mod_name]

        def flip(mod, inp):
            if lockstep.current_step() == int(at):
                mod.weight.detach().numpy().reshape(-1).view(np.int32)[0] ^= 1

        target.register_forward_pre_hook(flip)

    if args.ddp:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)  # gradients are averaged over ranks in backward
    with lockstep.torch.watch(model, opt, level=args.level, loss_fn=crit):
        for step in range(args.steps):
            if args.explicit_steps:
                lockstep.step_begin(step)
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            if args.explicit_steps:
                lockstep.step_end()
    lockstep.shutdown()
    if args.ddp:
        dist.destroy_process_group()
    print("final loss %.9g" % loss.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
