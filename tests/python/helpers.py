"""helpers.py - shared by the Python tier's tests: paths, reading traces back with `lockstep dump`, running scripts."""

import json
import os
import subprocess
import sys

SRC = os.environ.get("LOCKSTEP_SRC") or os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LOCKSTEP_BUILD", "build")
BUILD_ABS = BUILD if os.path.isabs(BUILD) else os.path.join(SRC, BUILD)
CLI = os.path.join(BUILD_ABS, "bin", "lockstep")
LIB = os.path.join(BUILD_ABS, "lib", "liblockstep.so")
PY = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))


def dump(trace):
    """Every record of a trace file (or a run directory's rank 0) as dicts, via `lockstep dump`."""
    if os.path.isdir(trace):
        trace = os.path.join(trace, "rank-00000.lstrace")
    p = subprocess.run([CLI, "dump", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise AssertionError("lockstep dump %s: exit %d: %s" % (trace, p.returncode, p.stderr))
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def env_for(**extra):
    """os.environ with the package on PYTHONPATH, no inherited LOCKSTEP_* settings, and `extra`
    (None values remove a variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKSTEP_") or k in ("LOCKSTEP_BUILD", "LOCKSTEP_SRC")}
    env["PYTHONPATH"] = os.path.join(SRC, "agent", "python")
    env["LOCKSTEP_BUILD"] = BUILD_ABS
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run_py(args, env, timeout=120):
    """Run `python3 ARGS...` with `env`; returns the CompletedProcess (text, both streams)."""
    return subprocess.run([PY] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, cwd=SRC)
