"""manifest.py - the Python side of a rank's manifest: a JSON sidecar beside its trace, and the diff of two runs' sidecars.

The C agent's manifest (host, GPUs, libraries, determinism environment) goes to lockstepd at
registration. What only Python knows (torch version, thread counts, determinism flags) is
written here as `rank-NNNNN.python.json` in LOCKSTEP_TRACE_DIR, and also exported as
LOCKSTEP_PY_* environment variables before ls_init so the agent's own manifest (which keeps
LOCKSTEP_* variables) carries the values known at start.
"""

import glob
import json
import os
import re
import sys
import tempfile

SUFFIX = ".python.json"
# Keys that differ between any two runs and explain nothing.
VOLATILE = {"run_id", "pid", "written_ns"}


def path_for(trace_dir, rank):
    """The sidecar path of `rank` in `trace_dir`."""
    return os.path.join(trace_dir, "rank-%05d%s" % (rank, SUFFIX))


def write(info, trace_dir=None, rank=None):
    """Write `info` (a JSON-able dict) as this rank's sidecar, atomically (temp file + rename).
    trace_dir defaults to LOCKSTEP_TRACE_DIR; does nothing and returns None when there is none.
    Returns the path written. Raises OSError when the directory cannot be written."""
    trace_dir = trace_dir or os.environ.get("LOCKSTEP_TRACE_DIR")
    if not trace_dir:
        return None
    if rank is None or rank < 0:
        rank = int(os.environ.get("LOCKSTEP_RANK") or 0)
    path = path_for(trace_dir, rank)
    fd, tmp = tempfile.mkstemp(dir=trace_dir, prefix=".manifest-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(info, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_run(path):
    """{rank: manifest dict} for a run directory (every rank-NNNNN.python.json in it) or one
    sidecar file. Raises OSError / ValueError on unreadable input."""
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "rank-*" + SUFFIX)))
        if not files:
            raise ValueError("no Python manifest in %s\ndetail: no rank-NNNNN%s file\nhint: the run must "
                             "use lockstep.torch.watch (or lockstep.manifest.write) with LOCKSTEP_TRACE_DIR set"
                             % (path, SUFFIX))
    else:
        files = [path]
    out = {}
    for f in files:
        m = re.search(r"rank-(\d+)" + re.escape(SUFFIX) + "$", f)
        with open(f) as fh:
            doc = json.load(fh)
        out[int(m.group(1)) if m else doc.get("rank", 0)] = doc
    return out


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = prefix + str(k)
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def diff(a, b):
    """Differences between two runs' manifests ({rank: dict} each): a list of
    {"rank", "key", "a", "b"} (a value is None where a key or a rank is missing), sorted by
    rank then key; volatile keys (run id, pid, write time) are ignored."""
    out = []
    for rank in sorted(set(a) | set(b)):
        fa, fb = _flatten(a.get(rank, {})), _flatten(b.get(rank, {}))
        for key in sorted(set(fa) | set(fb)):
            if key.split(".")[-1] in VOLATILE:
                continue
            if fa.get(key) != fb.get(key):
                out.append({"rank": rank, "key": key, "a": fa.get(key), "b": fb.get(key)})
    return out


def main_diff(argv):
    """`python3 -m lockstep manifest-diff [--json] A B`: print the differing keys. Exit 0 when
    the manifests agree, 1 when they differ, 2 on unreadable input or bad usage."""
    as_json = "--json" in argv
    args = [x for x in argv if x != "--json"]
    if len(args) != 2:
        sys.stderr.write("usage: python3 -m lockstep manifest-diff [--json] RUN_A RUN_B\n")
        return 2
    try:
        a, b = load_run(args[0]), load_run(args[1])
    except (OSError, ValueError) as e:
        sys.stderr.write("cannot read a manifest\ndetail: %s\n" % e)
        return 2
    d = diff(a, b)
    if as_json:
        json.dump({"match": not d, "a": args[0], "b": args[1], "differences": d}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not d:
        print("MATCH: the Python manifests agree (%d ranks)" % len(a))
    else:
        print("DIFFERENT: %d manifest keys differ" % len(d))
        for x in d:
            print("  rank %-4d %-40s A %-20s B %s" % (x["rank"], x["key"], json.dumps(x["a"]), json.dumps(x["b"])))
    return 1 if d else 0
