"""train_ddp.py - a data-parallel PyTorch program as users write it (torch.multiprocessing, gloo on loopback, an MLP
under DistributedDataParallel, SGD or Adam) under lockstep.torch.watch, for the Python tier's replica checks.

usage: train_ddp.py [--world N] [--steps N] [--opt sgd|adam] [--corrupt RANK:STEP] [--every K] [--extra]
The traces go to LOCKSTEP_TRACE_DIR (set by the caller). --corrupt flips the lowest mantissa bit of one element of
fc1.weight on RANK as the optimizer step of STEP ends (a wrapper of optimizer.step installed before watch(), so the
bad update is what that step leaves): the stand-in for a replica whose update went wrong (a faulty memory cell, a
bad core). --every sets watch(replica_every=K); without it LOCKSTEP_REPLICA_EVERY or the default applies. --extra
also records replicas by hand: a tensor on every rank (group None, lockstep.replicated), one on ranks 0 and 1 (a
list) and one on a torch.distributed group of ranks 0 and 1 (w.replicated).
"""

import argparse
import os
import socket
import sys
from collections import OrderedDict

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import lockstep
import lockstep.torch


def corrupt_update(opt, rank, at):
    """Wrap opt.step so that on `rank`, after the update of optimizer step `at` (0 first), one bit of fc1.weight
    flips, through numpy so that no torch op sees it."""
    orig, count = opt.step, [0]
    target = opt.param_groups[0]["params"][0]  # fc1.weight

    def step(*args, **kwargs):
        out = orig(*args, **kwargs)
        if dist.get_rank() == rank and count[0] == at:
            target.detach().numpy().reshape(-1).view(np.int32)[3] ^= 1
        count[0] += 1
        return out

    opt.step = step


def worker(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.set_num_threads(1)
    torch.manual_seed(1234)  # the same initial parameters everywhere (DDP broadcasts rank 0's anyway)
    model = nn.Sequential(OrderedDict(fc1=nn.Linear(16, 32), act=nn.Tanh(), fc2=nn.Linear(32, 1)))
    ddp = DistributedDataParallel(model)
    if args.opt == "adam":
        opt = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    if args.corrupt:
        r, s = args.corrupt.split(":")
        corrupt_update(opt, int(r), int(s))
    crit = nn.MSELoss()
    g = torch.Generator().manual_seed(7 + rank)  # each rank its own shard of the data
    x = torch.randn(256, 16, generator=g)
    y = x[:, :1] * 0.5 - x[:, 1:2] ** 2
    pair = dist.new_group([0, 1])  # every rank takes part in creating it, as torch requires
    w = lockstep.torch.watch(ddp, opt, loss_fn=crit, replica_every=args.every)
    for step in range(args.steps):
        opt.zero_grad()
        loss = crit(ddp(x), y)
        loss.backward()
        if args.extra:  # before the optimizer step, which closes the step
            c = torch.arange(8, dtype=torch.float32) * (step + 1)
            lockstep.replicated("extra.world", c)
            if rank in (0, 1):
                w.replicated("extra.pair", c + 1, group=[1, 0])
                w.replicated("extra.pg", c + 2, group=pair)
        opt.step()
    w.close()
    lockstep.shutdown()
    dist.destroy_process_group()
    if rank == 0:
        print("final loss %.9g" % loss.item())
        print("replicas %s" % (w.replicas.describe(),))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--opt", default="sgd", choices=("sgd", "adam"))
    ap.add_argument("--corrupt", default=None)
    ap.add_argument("--every", type=int, default=None)
    ap.add_argument("--extra", action="store_true")
    args = ap.parse_args()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(worker, args=(args, port), nprocs=args.world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
