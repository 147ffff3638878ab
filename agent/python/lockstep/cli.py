"""cli.py - run the `lockstep` command from Python: compare two runs' traces with `lockstep diff --json`."""

import json
import os
import shutil
import subprocess

from . import _lib


def find_cli():
    """Path of the `lockstep` command: LOCKSTEP_CLI, else bin/ beside the loaded library's lib/
    (the build tree or an install prefix), else build/bin in the repository, else PATH.
    Returns None when there is none."""
    env = os.environ.get("LOCKSTEP_CLI")
    if env:
        return env
    cands = []
    w = _lib.where()
    if w and w[1]:
        cands.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(w[1]))), "bin", "lockstep"))
    b = os.environ.get("LOCKSTEP_BUILD")
    if b:
        cands.append(os.path.join(b if os.path.isabs(b) else os.path.join(_lib._REPO_ROOT, b), "bin", "lockstep"))
    cands.append(os.path.join(_lib._REPO_ROOT, "build", "bin", "lockstep"))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("lockstep")


class DiffError(RuntimeError):
    """`lockstep diff` could not compare the runs (exit 2, or no `lockstep` command)."""


def diff(a, b, overlap=False, logical=False):
    """Compare the traces of runs `a` and `b` (directories or trace files) with
    `lockstep diff --json`. Returns its JSON report as a dict: "match" (bool), "first_step",
    and "ranks" (per rank: "status", and for a divergence "kind", "step" and both records "a"
    and "b" with "name", "level", "seq"...; a restore difference has kind "restore" and a
    "restore" object naming the entry). `overlap` compares only the steps both runs hold;
    `logical` compares their logical tensors (shards combined across ranks, whatever the rank
    counts). Raises DiffError on unreadable input (or shards that do not tile their tensor)."""
    cli = find_cli()
    if not cli:
        raise DiffError("the lockstep command was not found\nhint: run `make`, or set LOCKSTEP_CLI")
    cmd = [cli, "diff", "--json"] + (["--overlap"] if overlap else []) + (["--logical"] if logical else [])
    cmd += [str(a), str(b)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):
        raise DiffError("lockstep diff failed (exit %d)\ndetail: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def first_divergence(report):
    """The first diverging record of a diff report: the divergence with the smallest step (then
    rank), as a dict {"rank", "step", "kind", "a", "b"}; None when the runs match."""
    divs = [r for r in report.get("ranks", []) if r.get("status") != "match"]
    if not divs:
        return None
    return min(divs, key=lambda r: (r.get("step", 0) if r.get("step") is not None else 0, r.get("rank", 0)))
