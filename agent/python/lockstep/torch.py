"""torch.py - lockstep.torch.watch: fingerprint a PyTorch model's module outputs, gradients and aten ops, with loss and grad norm.

    import lockstep.torch
    with lockstep.torch.watch(model, optimizer, loss_fn=criterion) as w:   # before any LR scheduler
        ...train as usual...                                             # (or w = watch(...); w.close())

Records (names are the model's qualified module names, "model" for the root):
  level metric  loss, grad_norm (L2 over every parameter gradient, in float64, before each optimizer step;
                its bits depend on the gradients only, not on torch's thread count)
  level module  NAME.out (each module's output), NAME.out.grad (the gradient of that output),
                PARAM.grad (each parameter's gradient before the optimizer step; a sparse one as
                PARAM.grad.indices and PARAM.grad.values, coalesced)
  level op      CONTEXT/OP (each aten op's result inside the trace window, via TorchDispatchMode, with
                the fingerprints of its tensor inputs taken before it ran, for `lockstep narrow`):
                CONTEXT is the innermost module running, or bwd.NAME in the backward pass (the
                module whose output gradient came last), loss, optimizer or top
  state blocks  w.saved(step, extra) where a checkpoint is written, w.restored(step, extra) right after one was
                loaded: parameters, buffers, optimizer state, RNG states and `extra` (docs/python.md)
  replicas      param.NAME (ls_replica) after every K-th optimizer step: each parameter of a
                DistributedDataParallel model, which every rank of its process group must hold bit-identical;
                lockstepd compares the ranks' copies within the run (watch(replicas=..., replica_every=K))
"""

import atexit
import math
import os
import platform
import threading
import types
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import _blocks as _core_blocks
from . import _core, _lib, manifest
from . import _torch_replicas as _replicas

_tls = threading.local()  # .busy: lockstep's own code is running; the ops mode must not see it

# Ops whose results are uninitialized memory or aliases: fingerprinting them is noise.
_SKIP_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_",
    "detach", "alias", "lift_fresh",
})

_LEVEL_NAME = {0: "metrics", 1: "collectives", 2: "modules", 3: "ops"}

_ABSENT = object()  # optimizer.step was the class's method when watch() came (no instance attribute)

# The marks torch's LR schedulers put on the optimizer.step they wrapped to count calls (_with_counter up to torch
# 2.1, _wrapped_by_lr_sched since): a scheduler built before watch() finds them on watch's step too, which calls
# its wrapper on, and does not warn that optimizer.step was overridden.
_SCHEDULER_MARKS = ("_with_counter", "_wrapped_by_lr_sched")


class _Busy:
    """Context manager marking lockstep's own tensor work (so the ops mode skips it)."""

    def __enter__(self):
        self.prev = getattr(_tls, "busy", False)
        _tls.busy = True

    def __exit__(self, *exc):
        _tls.busy = self.prev


def _tensors(out):
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def determinism_flags():
    """The torch settings that decide whether kernels are deterministic, as a dict."""
    f = {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }
    if hasattr(torch, "is_deterministic_algorithms_warn_only_enabled"):
        f["deterministic_warn_only"] = torch.is_deterministic_algorithms_warn_only_enabled()
    return f


def deterministic():
    """Turn on torch's deterministic mode: use_deterministic_algorithms(True), cuDNN
    deterministic with benchmarking and TF32 off, CUDA matmul TF32 off, and
    CUBLAS_WORKSPACE_CONFIG=:4096:8 when unset (it must be set before cuBLAS starts: call this
    before the model goes to the GPU). A conflicting CUBLAS_WORKSPACE_CONFIG raises
    LockstepError rather than being overridden. Returns determinism_flags()."""
    cur = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    if cur is None:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    elif cur not in (":4096:8", ":16:8"):
        raise _core.LockstepError(
            "CUBLAS_WORKSPACE_CONFIG=%s conflicts with LOCKSTEP_MODE=det\ndetail: deterministic cuBLAS needs "
            ":4096:8 or :16:8\nhint: unset it, or run without LOCKSTEP_MODE=det" % cur)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return determinism_flags()


def torch_manifest():
    """What this process's PyTorch runs with, as a dict: versions, thread counts, parallel
    backend, determinism flags, CUDA devices and the thread-related environment."""
    info = {
        "python": platform.python_version(),
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_git": getattr(torch.version, "git_version", None),
        "num_threads": torch.get_num_threads(),
        "num_interop_threads": torch.get_num_interop_threads(),
        "parallel_backend": _parallel_backend(),
        "determinism": determinism_flags(),
        "lockstep_mode": os.environ.get("LOCKSTEP_MODE", ""),
        "env": {k: os.environ[k] for k in sorted(os.environ)
                if k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_CBWR",
                         "PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "LOCKSTEP_TRACE")},
        "cuda_devices": [],
    }
    try:
        import numpy

        info["numpy_version"] = numpy.__version__
    except ImportError:
        pass
    if torch.cuda.is_available():
        info["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def _parallel_backend():
    for line in torch.__config__.parallel_info().splitlines():
        if line.startswith("ATen parallel backend:"):
            return line.split(":", 1)[1].strip()
    return None


_VIEWS = {}


def _view_returns(func):
    """Per return of `func`'s schema: True when it is a view of an input (an alias that is
    not written to), whose bytes the op that made them was already fingerprinted for.
    In-place and out= results (written aliases) are recorded."""
    v = _VIEWS.get(func)
    if v is None:
        v = _VIEWS[func] = [r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns]
    return v


def _wrap_numbers(func, args):
    """torch 1.13 hands a mode a Python number where the schema wants a Tensor for some ops
    (`int_tensor ^ 1` reaches bitwise_xor.Tensor with an int, and calling it fails): pass
    such numbers as 0-d tensors, which promote like the wrapped numbers they stand for."""
    if not any(isinstance(a, (bool, int, float)) for a in args):
        return args
    out = list(args)
    schema = func._schema.arguments
    dev = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
    for i, a in enumerate(args):
        if isinstance(a, (bool, int, float)) and i < len(schema) and str(schema[i].type) == "Tensor":
            out[i] = torch.tensor(a, device=dev)
    return tuple(out)


class _OpsMode(TorchDispatchMode):
    """Fingerprints every aten op's tensor results while pushed (inside an ops window)."""

    def __init__(self, watcher):
        super().__init__()
        self.w = watcher

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args = _wrap_numbers(func, args)
        op = func.overloadpacket.__name__
        if (getattr(_tls, "busy", False) or getattr(func, "namespace", "aten") != "aten" or op in _SKIP_OPS
                or all(_view_returns(func))):
            return func(*args, **kwargs)  # lockstep's own work, non-aten (profiler) ops, views, empty memory
        with _Busy():  # before the op runs: an in-place op changes its inputs
            ins = self.w._input_fps(tree_flatten((args, kwargs))[0])
        out = func(*args, **kwargs)
        views = _view_returns(func)
        if len(views) > 1 and isinstance(out, (tuple, list)) and len(out) == len(views):
            ts = [t for i, r in enumerate(out) if not views[i] for t in _tensors(r)]
        else:
            ts = _tensors(out)
        ctx = self.w._context()
        with _Busy():
            for i, t in enumerate(ts):
                self.w._record_op("%s/%s%s" % (ctx, op, "#%d" % i if len(ts) > 1 else ""), t, ins)
        return out


class Watch:
    """The hooks watch() installed on a model (and optimizer); close() removes them, and so does leaving a
    `with` block on it (`with lockstep.torch.watch(model, opt) as w:`)."""

    def __init__(self, model, optimizer, level, loss_fn, name, auto_step, active=True, replicas=None,
                 replica_every=None):
        self.model, self.optimizer, self.level = model, optimizer, level
        self.root = name
        self.auto_step = auto_step
        self._handles = []
        self._stack = []  # qualified names of the modules running forward, innermost last
        self._phase = "top"  # outside any module: top, loss, bwd.NAME, optimizer
        self._last_grad = None
        self._mode = None
        self._has_record_fp = hasattr(_lib.load(), "ls_record_fp")
        self._warned = False
        self._closed = False
        self._step = 0
        self.manifest = None
        self._trace_dir = None
        self._rng_baseline = {}
        self._updates = 0  # optimizer steps taken under this watch
        self.replicas = _replicas.Plan(note="LOCKSTEP_MODE=off")
        if not active:  # LOCKSTEP_MODE=off: nothing to record, so nothing is hooked
            self.optimizer = None
            self._closed = True
            return
        names = {m: (n or name) for n, m in model.named_modules()}
        if level >= _lib.LEVEL_MODULE:
            for mod, qn in names.items():
                self._handles.append(mod.register_forward_pre_hook(self._pre_hook(qn)))
                self._handles.append(mod.register_forward_hook(self._post_hook(qn)))
        if loss_fn is not None:
            if not isinstance(loss_fn, torch.nn.Module):
                raise TypeError("loss_fn must be a torch.nn.Module (e.g. nn.CrossEntropyLoss()); "
                                "for a function, call watch.loss(value) after computing it")
            self._handles.append(loss_fn.register_forward_pre_hook(self._loss_pre))
            self._handles.append(loss_fn.register_forward_hook(self._loss_hook))
        if optimizer is not None:
            self.replicas = _replicas.plan(model, optimizer, replicas, replica_every)
            by_hand = replicas is not None and replicas is not False and not isinstance(replicas, str)
            if by_hand and not self.replicas.params and self.replicas.note:
                warnings.warn("lockstep: watch(replicas=...) %s" % self.replicas.note, RuntimeWarning, stacklevel=3)
            self._hook_step(optimizer)
        else:
            self.replicas = _replicas.Plan(note="no optimizer: call w.replicated(...) where replicas are equal")
        _core.add_step_listener(self._on_step)
        # numpy's and Python's generators as watch() finds them (see saved())
        self._rng_baseline = {}
        try:
            for n, v in _core_blocks.rng_entries():
                if n in ("rng.numpy", "rng.python"):
                    self._rng_baseline[n] = _core.fingerprint(v)
        except Exception as e:  # noqa: BLE001 - only the state blocks need it
            self._warn(e)

    # --- recording
    def _record(self, rec_name, t, level):
        try:
            if t.is_sparse:  # e.g. nn.Embedding(sparse=True) gradients: the coalesced parts
                c = t.detach().coalesce()
                _core.tensor(rec_name + ".indices", c.indices(), level)
                return _core.tensor(rec_name + ".values", c.values(), level)
            return _core.tensor(rec_name, t, level)
        except Exception as e:  # noqa: BLE001 - a hook must never raise into the training loop
            self._warn(e)
            return False

    def _fp(self, t):
        """(fp, nbytes, dtype, shape) of host tensor `t`, None on a device. Hashed every time, not
        remembered: a write that torch does not see (numpy, an extension, a bad memory cell)
        must show up in the next op's input fingerprints."""
        return _core.host_fingerprint(t)

    def _input_fps(self, flat_args):
        """Fingerprints of an op's tensor inputs (the first 16), or None when one cannot be
        taken on the host (a CUDA tensor) or something fails: the record then has no inputs."""
        try:
            fps = []
            for a in flat_args:
                if isinstance(a, torch.Tensor):
                    if a.layout != torch.strided:
                        return None
                    got = self._fp(a)
                    if got is None:
                        return None
                    fps.append(got[0])
                    if len(fps) == _lib.MAX_INPUTS:
                        break
            return fps
        except Exception:  # noqa: BLE001 - inputs are an aid; the record goes on without them
            return None

    def _record_op(self, rec_name, t, inputs):
        """One op result at level op: with its inputs' fingerprints when they and the result are
        on the host (ls_record_fp), else as lockstep.tensor records it."""
        if inputs is None or not self._has_record_fp or t.layout != torch.strided:
            return self._record(rec_name, t, _lib.LEVEL_OP)
        try:
            got = self._fp(t)
            if got is None:
                return self._record(rec_name, t, _lib.LEVEL_OP)
            fp, nbytes, dtype, shape = got
            _core.record_fp(rec_name, fp, nbytes, dtype, shape, _lib.LEVEL_OP, inputs)
            return True
        except Exception as e:  # noqa: BLE001 - a hook must never raise into the training loop
            self._warn(e)
            return False

    def _metric(self, rec_name, value):
        try:
            _core.metric(rec_name, value)
        except Exception as e:  # noqa: BLE001 - (a value float() refuses, too)
            self._warn(e)

    def _warn(self, e):
        if not self._warned:  # the job goes on: the agent never breaks a training run
            warnings.warn("lockstep: %s (further errors are not reported)" % e, RuntimeWarning, stacklevel=3)
            self._warned = True

    def _context(self):
        return self._stack[-1] if self._stack else self._phase

    # --- module hooks
    def _pre_hook(self, qn):
        def hook(mod, inp):
            self._stack.append(qn)
        return hook

    def _post_hook(self, qn):
        def hook(mod, inp, out):
            if self._stack and self._stack[-1] == qn:
                self._stack.pop()
            if not _core.enabled(_lib.LEVEL_MODULE):
                return
            with _Busy():
                ts = _tensors(out)
                for i, t in enumerate(ts):
                    suffix = "" if len(ts) == 1 else ".%d" % i
                    self._record(qn + ".out" + suffix, t, _lib.LEVEL_MODULE)
                    if t.requires_grad:
                        t.register_hook(self._grad_hook(qn + ".out" + suffix, qn))
        return hook

    def _grad_hook(self, rec_name, qn):
        def hook(g):
            if g is not self._last_grad:  # one tensor may carry several modules' hooks: keep the innermost
                self._phase = "bwd." + qn
                self._last_grad = g
            with _Busy():
                self._record(rec_name + ".grad", g, _lib.LEVEL_MODULE)
        return hook

    def _loss_pre(self, mod, inp):
        self._phase = "loss"

    def _loss_hook(self, mod, inp, out):
        if isinstance(out, torch.Tensor):
            with _Busy():
                self.loss(out)
                if out.requires_grad:
                    out.register_hook(self._loss_grad_hook)

    def _loss_grad_hook(self, g):
        self._phase = "bwd.loss"

    def loss(self, value):
        """Record the loss (level metric): a scalar tensor or number; a tensor with more than
        one element is fingerprinted as the record "loss" at level module instead."""
        if isinstance(value, torch.Tensor) and value.numel() != 1:
            with _Busy():
                self._record("loss", value, _lib.LEVEL_MODULE)
            return
        with _Busy():
            self._metric("loss", value.detach() if isinstance(value, torch.Tensor) else value)

    # --- optimizer
    def _hook_step(self, optimizer):
        """Put watch's step in front of optimizer.step, as a method of the optimizer: torch's LR schedulers
        wrap optimizer.step by taking its __func__ and binding it to the optimizer again (to count the
        calls), so a bound method of this Watch there would be called with the optimizer as self."""
        watch = self

        def step(opt, *args, **kwargs):
            return watch._optimizer_step(*args, **kwargs)

        step.__name__ = step.__qualname__ = "step"
        step.__doc__ = "optimizer.step under lockstep.torch.watch (the gradients and grad_norm are recorded first)"
        self._orig_step = optimizer.step
        self._prev_step = optimizer.__dict__.get("step", _ABSENT)
        for mark in _SCHEDULER_MARKS:
            if hasattr(self._orig_step, mark):
                setattr(step, mark, getattr(self._orig_step, mark))
        self._step_fn = types.MethodType(step, optimizer)
        optimizer.step = self._step_fn

    def _unhook_step(self):
        """Give optimizer.step back as watch found it. When something wrapped watch's step since (an LR
        scheduler built after watch()), that wrapper stays, and the closed watch's step only passes calls on."""
        opt = self.optimizer
        if opt is None or opt.__dict__.get("step") is not self._step_fn:
            return
        if self._prev_step is _ABSENT:
            del opt.step
        else:
            opt.step = self._prev_step

    def _optimizer_step(self, *args, **kwargs):
        if self._closed:
            return self._orig_step(*args, **kwargs)
        self._phase = "optimizer"
        with _Busy():
            try:
                self._before_update()
            except Exception as e:  # noqa: BLE001 - the optimizer step runs whatever happens here
                self._warn(e)
        out = self._orig_step(*args, **kwargs)
        if self.replicas.due(self._updates):  # before the step closes: the replicas this update made
            with _Busy():
                _replicas.record(self.replicas, self._warn)
        self._updates += 1
        if self.auto_step and not _core.user_steps():
            _core.auto_step_end()
            self._step += 1
            _core.auto_step_begin(self._step)
        return out

    def _before_update(self):
        grads = [(n, p.grad) for n, p in self.model.named_parameters() if p.grad is not None]
        if self.level >= _lib.LEVEL_MODULE and _core.enabled(_lib.LEVEL_MODULE):
            for n, g in grads:
                self._record(n + ".grad", g, _lib.LEVEL_MODULE)
        if grads and _core.enabled(_lib.LEVEL_METRIC):
            with torch.no_grad():
                self._metric("grad_norm", grad_norm([g for _, g in grads]))

    # --- replicas
    def replicated(self, name, tensor, group=None):
        """Record `tensor` as a replica (ls_replica): every rank of `group` (a torch.distributed ProcessGroup, a
        list of world ranks, or None for every rank of the job) must hold it bit-identical at this point, and each
        calls this in the same order; lockstepd compares their copies within the run. For a tensor-parallel
        group's replicated norm weight, an expert router, a buffer broadcast by hand. Returns True when passed to
        the library; never raises into the training loop (a failure is one warning, and False)."""
        if self._closed:
            return False
        try:
            with _Busy(), torch.no_grad():
                _core.replicated(name, tensor.detach() if isinstance(tensor, torch.Tensor) else tensor, group)
            return True
        except Exception as e:  # noqa: BLE001 - the job goes on
            self._warn(e)
            return False

    # --- checkpoints
    def saved(self, step, extra=None):
        """Record what a checkpoint of `step` holds, where the program writes it (a state block
        of kind saved): every parameter and buffer (param.NAME, buffer.NAME), the optimizer's
        state tensors and hyperparameters (optim.PARAM.KEY such as optim.fc1.weight.momentum_buffer,
        optim.groupN.KEY such as optim.group0.lr), the random generators (rng.torch, rng.cuda.N,
        rng.numpy, rng.python) and each item of `extra` under its own name (data_pos, loss_scale...:
        numbers, tensors, arrays, strings). numpy's and Python's global generators are left out while
        their state is the one watch() found (neither used nor set since: unseeded, they differ between
        any two processes without mattering); torch's are always in. Never raises into the training
        loop: a failure is one warning."""
        self._state_block(step, "saved", extra)

    def restored(self, step, extra=None):
        """Record the same state right after the program loaded the checkpoint of `step` (a state
        block of kind restored, with the same names). `lockstep diff` and lockstepd compare it with
        the saved block of that step in the twin runs and name the first entry that differs or was
        not restored, before any later step is compared."""
        self._state_block(step, "restored", extra)

    def state_entries(self, extra=None):
        """The (name, value) pairs saved() and restored() record, in their order."""
        out = []
        params = list(self.model.named_parameters())
        pname = {id(p): n for n, p in params}
        out += [("param." + n, p) for n, p in params]
        out += [("buffer." + n, b) for n, b in self.model.named_buffers()]
        opt = self.optimizer
        if opt is not None:
            for gi, group in enumerate(opt.param_groups):
                for k in sorted(group):
                    v = group[k]
                    if k == "params":
                        continue
                    if isinstance(v, (int, float)) and not isinstance(v, bool) or isinstance(v, torch.Tensor):
                        out.append(("optim.group%d.%s" % (gi, k), v))
                    elif isinstance(v, (tuple, list)) and v and all(isinstance(x, (int, float)) for x in v):
                        out.append(("optim.group%d.%s" % (gi, k), list(v)))
                for pi, p in enumerate(group["params"]):
                    st = opt.state.get(p, {})
                    who = pname.get(id(p), "group%d.param%d" % (gi, pi))
                    for k in sorted(st):
                        v = st[k]
                        if isinstance(v, torch.Tensor) or isinstance(v, (int, float)):
                            out.append(("optim.%s.%s" % (who, k), v))
        for name, v in _core_blocks.rng_entries():
            base = self._rng_baseline.get(name)
            if base is not None and _core.fingerprint(v) == base:
                continue  # never used nor set since watch(): unseeded, it differs between any two processes
            out.append((name, v))
        for k, v in (extra or {}).items():
            out.append((str(k), v))
        return out

    def _state_block(self, step, kind, extra):
        if self._closed:
            return
        try:
            with _Busy(), torch.no_grad():
                entries = self.state_entries(extra)
                _core_blocks.state_begin(step, kind)
                try:
                    for name, v in entries:
                        _core_blocks.state_entry(name, v)
                finally:
                    _core_blocks.state_end()
        except Exception as e:  # noqa: BLE001 - a checkpoint is written whatever happens here
            self._warn(e)

    # --- steps and the ops window
    def _on_step(self, event, step):
        if event == "begin":
            self._stack.clear()
            self._phase = "top"
            self._last_grad = None
            self._step = step
            if self.level >= _lib.LEVEL_OP and _core.enabled(_lib.LEVEL_OP):
                self._push_mode()
            else:
                self._pop_mode()
            self._check_threads(step)
        else:
            self._pop_mode()

    def _push_mode(self):
        if self._mode is None:
            self._mode = _OpsMode(self)
            self._mode.__enter__()

    def _pop_mode(self):
        if self._mode is not None:
            m, self._mode = self._mode, None
            m.__exit__(None, None, None)

    def _check_threads(self, step):
        _report_threads()
        if self.manifest is None:
            return
        n = torch.get_num_threads()
        if n != self.manifest.get("num_threads_final", self.manifest["num_threads"]):
            self.manifest.setdefault("num_threads_changes", []).append([step, n])
            self.manifest["num_threads_final"] = n
            self.write_manifest()

    def write_manifest(self):
        """(Re)write this rank's Python manifest sidecar in LOCKSTEP_TRACE_DIR, if any."""
        if self.manifest is None or not self._trace_dir:
            return None
        self.manifest["determinism"] = determinism_flags()
        try:
            return manifest.write(self.manifest, trace_dir=self._trace_dir, rank=self.manifest["rank"])
        except OSError as e:
            self._warn("cannot write the Python manifest: %s" % e)
            return None

    def close(self):
        """Remove every hook, restore optimizer.step, leave the ops window and write the
        manifest a last time. Safe to call twice. The step watch numbers last stays open, as
        without watch: lockstep.shutdown() (or the end of the process) closes it."""
        if self._closed:
            return
        self._closed = True
        self._pop_mode()
        for h in self._handles:
            h.remove()
        self._handles = []
        self._unhook_step()
        _core.remove_step_listener(self._on_step)
        atexit.unregister(self.write_manifest)
        self.write_manifest()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Leaving the with block closes the watch (also on an exception, which goes on)."""
        self.close()
        return False


def _sum_squares_cpu(v, use_numpy=True):
    """Sum of squares of a CPU tensor in float64 whose bits do not depend on torch's thread
    count (torch's own sum splits the work by thread, which changes low bits: a grad norm that
    did so would report a divergence the model never had). numpy's pairwise sum runs on one
    thread in a fixed order; without numpy, rows of 4096 are reduced (each row by one thread)
    and the row sums added in order."""
    np = None
    if use_numpy:
        try:
            import numpy as np
        except ImportError:
            pass
    if np is None:
        flat = v.double().reshape(-1)
        rows = torch.nn.functional.pad(flat, (0, (-flat.numel()) % 4096)).reshape(-1, 4096)
        return math.fsum((rows * rows).sum(dim=1).tolist())
    a = v.double().contiguous().numpy().reshape(-1)
    return float(np.add.reduce(a * a))


def grad_norm(grads):
    """L2 norm (float) of the tensors `grads` taken as one vector, in float64, with bits that
    depend only on the gradients: CPU tensors through _sum_squares_cpu, CUDA tensors on their
    device, partial sums added in the given order. Sparse tensors count their coalesced values."""
    total = 0.0
    dev = {}
    for g in grads:
        v = g.detach()
        if v.is_sparse:
            v = v.coalesce().values()
        if v.device.type == "cpu":
            total += _sum_squares_cpu(v)
        else:
            part = v.double().pow(2).sum()
            dev[v.device] = dev[v.device] + part if v.device in dev else part
    for d in sorted(dev, key=str):
        total += float(dev[d])
    return math.sqrt(total)


def _report_threads():
    """Report torch's thread counts as they are now into the manifest lockstepd holds (ls_manifest_set): under
    Slurm the agent starts before Python, so only this carries them there; the agent posts the manifest again
    when they change."""
    _core.manifest_set("threads.torch_intra", torch.get_num_threads())
    _core.manifest_set("threads.torch_interop", torch.get_num_interop_threads())


def _export_env(info):
    """Put what Python knows into LOCKSTEP_PY_* so the agent's own manifest (which keeps
    LOCKSTEP_* variables) carries it; only useful before ls_init."""
    os.environ["LOCKSTEP_PY_TORCH_VERSION"] = str(info["torch_version"])
    os.environ["LOCKSTEP_PY_NUM_THREADS"] = str(info["num_threads"])
    os.environ["LOCKSTEP_PY_DETERMINISTIC"] = "1" if info["determinism"]["deterministic_algorithms"] else "0"


def _distributed_rank():
    """This process's rank as torch.distributed knows it, for when LOCKSTEP_RANK is unset: the
    initialized process group's rank, else RANK as torchrun sets it (with LOCAL_RANK, or when no
    launcher variable the agent reads is set). None when neither says."""
    if os.environ.get("LOCKSTEP_RANK"):
        return None
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    r = os.environ.get("RANK", "")
    launcher = any(os.environ.get(v) for v in ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"))
    if r.isdigit() and (os.environ.get("LOCAL_RANK") is not None or not launcher):
        return int(r)
    return None


def _distributed_size():
    """The rank count of an initialized torch.distributed process group when LOCKSTEP_RANKS and the launchers'
    variables the agent reads are unset (torch.multiprocessing.spawn sets none), else None."""
    if os.environ.get("LOCKSTEP_RANKS") or (os.environ.get("LOCAL_RANK") and os.environ.get("WORLD_SIZE")):
        return None
    if any(os.environ.get(v) for v in ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")):
        return None
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return None


def watch(model, optimizer=None, level="modules", loss_fn=None, auto_step=None, name="model", replicas="auto",
          replica_every=None):
    """Fingerprint `model` as it trains; returns a Watch (call .close() to stop), which is also a
    context manager: `with watch(model, optimizer) as w:` closes it when the block ends.

    Call it once the model (on its device, wrapped in DistributedDataParallel if it is) and the
    optimizer exist, and before an LR scheduler is built on that optimizer: the scheduler then
    wraps watch's optimizer.step like any other (a scheduler built first works too).

    `level` is the finest level recorded: "metrics" (loss, grad norm), "modules" (also module
    outputs, output gradients and parameter gradients) or "ops" (also every aten op inside the
    LOCKSTEP_TRACE window, through a TorchDispatchMode). LOCKSTEP_TRACE still decides which
    records are kept at which steps and ranks; when it is unset, watch sets it to `level`.
    `optimizer`: its step() records the parameter gradients and grad_norm first, and (with
    auto_step, the default when an optimizer is given and the program never calls
    lockstep.step itself) each optimizer step closes a lockstep step and opens the next,
    starting at step 0. `loss_fn`: an nn.Module criterion whose output is recorded as "loss";
    otherwise call .loss(value). When it starts lockstep and LOCKSTEP_RANK is unset, the rank
    comes from torch.distributed (or torchrun's RANK), and so does the rank count (LOCKSTEP_RANKS) when no
    launcher says it. Under LOCKSTEP_MODE=det it first turns on
    deterministic(). Calls lockstep.init() when needed and writes the Python manifest
    (rank-NNNNN.python.json: torch version, thread counts, determinism flags) beside the
    trace. Under LOCKSTEP_MODE=off nothing is hooked at all.

    `replicas`: which parameters every rank must hold bit-identical after the optimizer step, recorded as
    replicas (param.NAME, ls_replica) every `replica_every` optimizer steps (default LOCKSTEP_REPLICA_EVERY, else
    200; 0: never), so that lockstepd finds a rank whose copy differs, with no twin. "auto" (the default): the
    parameters of the model's DistributedDataParallel modules, across their process group; a model without DDP
    is not checked. A ProcessGroup or a list of world ranks: every parameter of the model, across that group
    (data parallelism by hand). None: no checks. FSDP, DTensor parameters, ZeroRedundancyOptimizer and local SGD
    are never checked (their parameters are not whole replicas after each step); w.replicas.note says why.
    Raises LockstepError when the library cannot start, ValueError or TypeError for a bad `replicas` or
    `replica_every`."""
    lv = _core.level_of(level)
    if lv == _lib.LEVEL_COLLECTIVE:
        lv = _lib.LEVEL_METRIC  # PyTorch has no collectives of its own to watch here
    if os.environ.get("LOCKSTEP_MODE") == "det":
        deterministic()
    info = torch_manifest()
    if lv > _lib.LEVEL_MODULE and _core.is_active() and _core.defaulted_trace():
        warnings.warn("lockstep: watch(level=%r) after lockstep.init() started with LOCKSTEP_TRACE=%s: "
                      "finer records are filtered out\nhint: call watch() first (it starts lockstep itself), or "
                      "set LOCKSTEP_TRACE" % (level, os.environ.get("LOCKSTEP_TRACE")), RuntimeWarning, stacklevel=2)
    if not _core.is_active():
        r = _distributed_rank()
        if r is not None:  # torchrun sets RANK, which the agent does not read: without this every rank is 0
            os.environ["LOCKSTEP_RANK"] = str(r)
        n = _distributed_size()
        if n is not None:  # the job's rank count, and so every rank of a replica group of None
            os.environ["LOCKSTEP_RANKS"] = str(n)
        if not os.environ.get("LOCKSTEP_TRACE"):
            os.environ["LOCKSTEP_TRACE"] = _LEVEL_NAME[max(lv, _lib.LEVEL_COLLECTIVE)]
        _export_env(info)
        info["env"]["LOCKSTEP_TRACE"] = os.environ["LOCKSTEP_TRACE"]
    _core.init()
    _report_threads()
    _replicas.every_of(replica_every)  # a bad period fails here, also under LOCKSTEP_MODE=off
    w = Watch(model, optimizer, lv, loss_fn, name, auto_step if auto_step is not None else optimizer is not None,
              active=_core.is_active(), replicas=replicas, replica_every=replica_every)
    if _core.is_active():
        info.update(run_id=_core.run_id(), rank=_core.rank(), pid=os.getpid(), level=_LEVEL_NAME[lv],
                    replicas=w.replicas.describe())
        w.manifest = info
        w._trace_dir = os.environ.get("LOCKSTEP_TRACE_DIR")
        w.write_manifest()
        atexit.register(w.write_manifest)
    if w._closed:
        return w
    if w.auto_step and not _core.user_steps():
        _core.auto_step_begin(0)
    elif _core.current_step() is not None:
        w._on_step("begin", _core.current_step())
    return w
