"""lockstep - bit-exact fingerprints of a training run, through liblockstep (ctypes; no compiled extension).

    import lockstep
    lockstep.init()                      # reads LOCKSTEP_* (docs/api.md); trace default "modules"
    with lockstep.step(i):
        lockstep.metric("loss", loss)
        lockstep.tensor("fc1.weight", w)  # torch tensor, numpy array or any buffer
        lockstep.replicated("fc1.weight", w, group=[0, 1])  # must be bit-identical on world ranks 0 and 1
    with lockstep.state(i, "saved"):     # where a checkpoint is written (and "restored" where one is loaded)
        lockstep.state_entry("data_pos", pos)

For PyTorch models see lockstep.torch.watch. The library is found through LOCKSTEP_LIB, else
beside this package in the build tree (build/lib), else on the system library path; an agent
already in the process (LD_PRELOAD) is always used.
"""

from ._core import (
    DEFAULT_TRACE,
    LEVELS,
    LockstepError,
    current_step,
    enabled,
    fingerprint,
    init,
    is_active,
    last_error,
    level_of,
    metric,
    rank,
    record_fp,
    replicated,
    run_id,
    shutdown,
    step,
    step_begin,
    step_end,
    tensor,
)
from ._blocks import rng_entries, state, state_begin, state_end, state_entry, tensor_scaled, tensor_shard
from . import _lib
from ._lib import DTYPES, LibraryNotFound
from .cli import DiffError, diff, first_divergence

__version__ = "0.1.0"


def library():
    """(how, path) of the liblockstep in use, loading it first if needed: how is "preloaded"
    (path None), "LOCKSTEP_LIB", "build tree", "install prefix" or "system". Raises LibraryNotFound."""
    _lib.load()
    return _lib.where()

__all__ = [
    "DEFAULT_TRACE", "DTYPES", "LEVELS", "DiffError", "LibraryNotFound", "LockstepError", "current_step",
    "diff", "enabled", "fingerprint", "first_divergence", "init", "is_active", "last_error", "level_of",
    "library", "metric", "rank", "record_fp", "replicated", "rng_entries", "run_id", "shutdown", "state", "state_begin",
    "state_end", "state_entry", "step", "step_begin", "step_end", "tensor", "tensor_scaled", "tensor_shard",
]
