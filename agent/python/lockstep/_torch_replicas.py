"""_torch_replicas.py - which parameters of a PyTorch model are data-parallel replicas, across which ranks, and how
often lockstep.torch.watch records them (ls_replica after the optimizer step)."""

import os

import torch

from . import _core

# Optimizer steps between two checks of every parameter, unless watch(replica_every=...) or LOCKSTEP_REPLICA_EVERY
# says otherwise. Measured with tests/python/bench_replicas.py (docs/python.md, Replicas): on a CPU one check costs
# about 0.1 % of a training step; on a GPU, where parameters are copied to the host to be hashed, about two steps
# (estimated), so one check in 200 stays near 1 %. A replica that diverged stays diverged (every rank applies the
# same averaged update to its own copy): checking less often delays the finding by at most that many steps and
# misses nothing.
DEFAULT_EVERY = 200
ENV_EVERY = "LOCKSTEP_REPLICA_EVERY"


def every_of(every):
    """The check period: `every` when given, else LOCKSTEP_REPLICA_EVERY, else DEFAULT_EVERY. 0 turns the checks
    off. Raises ValueError for a negative or non-integer value (named with where it came from)."""
    where = "watch(replica_every=...)"
    if every is None:
        env = os.environ.get(ENV_EVERY, "").strip()
        if not env:
            return DEFAULT_EVERY
        every, where = env, ENV_EVERY
    if isinstance(every, bool) or not isinstance(every, (int, str)) or not str(every).strip().isdigit():
        raise ValueError("%s=%r is not a step count\nhint: a whole number of optimizer steps, 0 for no replica "
                         "checks (default %d)" % (where, every, DEFAULT_EVERY))
    return int(every)


def group_ranks(group):
    """World ranks of `group` (a ProcessGroup, a list of world ranks, or None: every rank), as _core.group_ranks."""
    return _core.group_ranks(group)


def _ddp_class():
    try:
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel
    except ImportError:  # a torch built without distributed support
        return None


def _sharded(model, optimizer):
    """Why `model`'s parameters are not whole replicas after the optimizer step (FSDP, DTensor parameters, ZeRO,
    local SGD), or None."""
    # by class name, not import: FSDP is then found in any package that has one (torch's, fairscale's), and
    # importing torch.distributed.fsdp fails outright in some builds (torch 1.13 under Python 3.11)
    for m in model.modules():
        if any(c.__name__ == "FullyShardedDataParallel" for c in type(m).__mro__):
            return "FullyShardedDataParallel shards the parameters"
    for _, p in model.named_parameters():
        if type(p).__name__ == "DTensor" or type(getattr(p, "data", None)).__name__ == "DTensor":
            return "a parameter is a DTensor (FSDP2 or tensor parallel: each rank holds a shard)"
    if optimizer is not None:
        kind = type(optimizer).__name__
        if kind == "ZeroRedundancyOptimizer":
            return ("ZeroRedundancyOptimizer shards the update (each rank updates its shard; the others arrive by "
                    "broadcast, with overlap_with_ddp only in the next backward)")
        if kind == "PostLocalSGDOptimizer":
            return "PostLocalSGDOptimizer averages parameters only every few steps"
    return None


def _ddp_ignored(ddp):
    """Qualified names, as the wrapper's named_parameters() gives them, of the parameters DDP leaves alone."""
    names = getattr(ddp, "parameters_to_ignore", None) or ()
    return {"module." + n for n in names}


class Plan:
    """What watch() checks: `params` [(record name, parameter)] across world ranks `ranks` (None: every rank)
    every `every` optimizer steps; `note` says why nothing is checked when `params` is empty and a reason exists."""

    def __init__(self, params=(), ranks=None, every=0, note=None):
        self.params, self.ranks, self.every, self.note = list(params), ranks, every, note

    def due(self, update):
        """True when the `update`-th optimizer step (0 first) is checked."""
        return bool(self.params) and self.every > 0 and update % self.every == 0

    def describe(self):
        """A dict for the Python manifest."""
        if not self.params:
            return {"checked": False, "why": self.note or "no replicated parameters"}
        return {"checked": True, "every": self.every, "params": len(self.params),
                "ranks": self.ranks if self.ranks is not None else "all"}


def plan(model, optimizer, replicas, every):
    """The Plan of watch(model, optimizer, replicas=..., replica_every=...).

    `replicas` "auto": the parameters of each DistributedDataParallel module in `model` (the root or below),
    across its process group; nothing for a model without DDP (its parameters may differ per rank by design:
    pipeline stages, tensor-parallel shards, ensembles). A ProcessGroup or a list of world ranks: every parameter
    of `model`, across that group (data parallelism by hand). None or False: no checks. Sharded parameters or
    optimizers (FSDP, DTensor, ZeroRedundancyOptimizer, local SGD) are never checked; `note` says why. Raises
    ValueError or TypeError for a bad `replicas` or `every`."""
    every = every_of(every)
    if isinstance(replicas, str) and replicas != "auto":
        raise ValueError("watch(replicas=%r)\nhint: \"auto\", a ProcessGroup, a list of world ranks, or None"
                         % (replicas,))
    if replicas is None or replicas is False or every == 0:
        return Plan(note="replica checks turned off")
    dist = torch.distributed
    if replicas == "auto" and not (dist.is_available() and dist.is_initialized()):
        return Plan(note="torch.distributed is not initialized")
    why = _sharded(model, optimizer)
    if why:
        return Plan(note="not checked: " + why)
    if replicas == "auto":
        return _plan_ddp(model, every)
    ranks = group_ranks(replicas)
    ignored = set()
    ddp = _ddp_class()
    if ddp is not None and isinstance(model, ddp):
        ignored = _ddp_ignored(model)
    params = [("param." + n, p) for n, p in model.named_parameters() if n not in ignored]
    return Plan(params, ranks, every)


def _plan_ddp(model, every):
    ddp = _ddp_class()
    if ddp is None:
        return Plan(note="torch has no DistributedDataParallel")
    names = {id(p): n for n, p in model.named_parameters()}
    found = [(qn, m) for qn, m in model.named_modules() if isinstance(m, ddp)]
    if not found:
        return Plan(note="no DistributedDataParallel module: declare replicas with watch(replicas=GROUP)")
    groups = {(tuple(group_ranks(m.process_group)) if m.process_group is not None else None) for _, m in found}
    if len(groups) != 1:  # one Plan has one group; several DDP modules on different groups are rare
        return Plan(note="not checked: DistributedDataParallel modules on %d different process groups" % len(groups))
    params = []
    for qn, m in found:
        ignored = _ddp_ignored(m)
        for n, p in m.named_parameters():
            if n in ignored:
                continue
            params.append(("param." + names.get(id(p), (qn + "." if qn else "") + n), p))
    seen, unique = set(), []
    for n, p in params:  # nested DDP modules list a parameter once
        if id(p) not in seen:
            seen.add(id(p))
            unique.append((n, p))
    ranks = next(iter(groups))
    return Plan(unique, list(ranks) if ranks is not None else None, every)


def record(plan_, warn):
    """Record every parameter of `plan_` as a replica (ls_replica). A failure is passed to `warn` once and the rest
    is skipped: the training loop never sees it."""
    try:
        with torch.no_grad():
            for name, p in plan_.params:
                _core.replicated(name, p.detach(), plan_.ranks)
    except Exception as e:  # noqa: BLE001 - the optimizer step has run; recording must not break the loop
        warn(e)
