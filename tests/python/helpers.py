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


class Lockstepd:
    """A real lockstepd with its own embedded PostgreSQL in a temporary state directory, on a free
    loopback port; stop() ends it by its pid (it stops its PostgreSQL itself)."""

    def __init__(self, tmp):
        import socket
        import time
        import urllib.request

        self.bin = os.path.join(BUILD_ABS, "bin", "lockstepd")
        if not os.access(self.bin, os.X_OK):
            raise AssertionError("%s is missing (hint: make)" % self.bin)
        os.chmod(tmp, 0o755)  # the embedded PostgreSQL runs as postgres under it
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = os.path.join(tmp, "lockstepd.log")
        # lockstepd carries its own ASan in a SAN build; the tier's LD_PRELOAD (for the Python
        # processes) must not reach it or the PostgreSQL it starts
        server_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("LOCKSTEP_")}
        self.proc = subprocess.Popen([self.bin, "--listen", "127.0.0.1:%d" % self.port, "--state-dir",
                                      os.path.join(tmp, "state"), "--log-file", self.log, "--threads", "2"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=server_env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url + "/api/v1/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError("lockstepd did not start; its log:\n" + _tail(self.log))

    def get(self, path):
        """GET a read-API path; the JSON body as a dict."""
        import urllib.request

        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.load(r)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _tail(path, n=20):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"
