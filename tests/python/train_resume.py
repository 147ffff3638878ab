"""train_resume.py - an MLP trained with SGD and momentum and random dropout, checkpointed with torch.save and resumed with one of several loaders, recording both sides with lockstep.torch.watch's saved() and restored().

usage: train_resume.py [--steps N] [--save K FILE] [--resume FILE] [--loader good|no-optim|wrong-rng|stale-data]
The loaders that are wrong are the classic ones: no-optim loads the model but not the optimizer (the
momentum starts from nothing: the first loss after the resume still matches, then the trajectory
drifts); wrong-rng reseeds torch instead of restoring its generator (dropout masks change);
stale-data restarts the data position. Steps are numbered by the script (lockstep.step), so a run
resumed after step K records steps K+1 and on, as its uninterrupted twin does.
"""

import argparse

import torch
import torch.nn as nn

import lockstep
import lockstep.torch


def batch(pos):
    """The batch at data position `pos`: a pure function of it, as a seekable loader's would be."""
    g = torch.Generator().manual_seed(1000 + pos)
    x = torch.randn(64, 16, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--save", nargs=2, metavar=("K", "FILE"))
    ap.add_argument("--resume")
    ap.add_argument("--loader", default="good", choices=["good", "no-optim", "wrong-rng", "stale-data"])
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    w = lockstep.torch.watch(model, opt, loss_fn=loss_fn, auto_step=False)
    start, pos = 0, 0
    if a.resume:
        ck = torch.load(a.resume)
        model.load_state_dict(ck["model"])
        if a.loader != "no-optim":
            opt.load_state_dict(ck["optim"])
        if a.loader == "wrong-rng":
            torch.manual_seed(ck["step"])  # "reseeding is as good as restoring": it is not
        else:
            torch.set_rng_state(ck["rng"])
        pos = 0 if a.loader == "stale-data" else ck["data_pos"]
        start = ck["step"] + 1
        w.restored(ck["step"], extra={"data_pos": pos})
    for step in range(start, a.steps):
        with lockstep.step(step):
            x, y = batch(pos)
            pos += 1
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        if a.save and step == int(a.save[0]):
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "rng": torch.get_rng_state(),
                        "data_pos": pos, "step": step}, a.save[1])
            w.saved(step, extra={"data_pos": pos})
    w.close()
    lockstep.shutdown()


if __name__ == "__main__":
    main()
