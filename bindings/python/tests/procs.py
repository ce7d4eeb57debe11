"""Real volley processes for the Python tests: a free base port, the volley
executable ($VOLLEY_BIN, else <checkout>/build/volley) started with its log
in a file, and everything stopped at the end (SIGTERM, then SIGKILL)."""
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VOLLEY = os.environ.get("VOLLEY_BIN") or str(REPO / "build" / "volley")
PYTHON = sys.executable  # the tests' own: ctest's is the checkout's .venv (Gymnasium in it)


def top_rows(port):
    """`volley top --once --kv` of the broker at 127.0.0.1:port: one dict per line
    (quoted values keep their quotes)."""
    out = subprocess.run([VOLLEY, "top", "--once", "--kv", "--broker", f"127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=20).stdout
    return [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line)) for line in out.splitlines()]


def top_kind(port, kind):
    """The first `volley top --once --kv` line of this kind (broker, learner, actor...) as a
    dict, {} when there is none."""
    return next((r for r in top_rows(port) if r.get("kind") == kind), {})


def free_port():
    """A base port with the four after it free, below the ephemeral range."""
    for _ in range(200):
        base = 20000 + random.randrange(2500) * 5
        ok = True
        for p in range(base, base + 5):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range found")


class Procs:
    """Processes started for one test; stop_all() ends them (also on failure)."""

    def __init__(self, tmp_path):
        self.tmp = Path(tmp_path)
        self.procs = []

    def start(self, name, argv, env=None, clean=False, cwd=None):
        """Starts argv with stdout+stderr into <tmp>/<name>.log; returns the Popen
        (its .log is the log's path). clean: without $PYTHONPATH and $VOLLEY_LIB, so
        that a python finds volley and libvolley by itself."""
        log = self.tmp / f"{name}.log"
        e = dict(os.environ)
        if clean:
            e.pop("PYTHONPATH", None)
            e.pop("VOLLEY_LIB", None)
        else:
            e.setdefault("PYTHONPATH", str(REPO / "bindings" / "python"))
        if env:
            e.update(env)
        f = open(log, "wb")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=e, cwd=cwd,
                             start_new_session=True)
        f.close()
        p.log = log
        p.name = name
        self.procs.append(p)
        return p

    def volley(self, name, *args, env=None):
        """Starts `volley ARGS...`."""
        return self.start(name, [VOLLEY, *map(str, args)], env=env)

    def python(self, name, *args, env=None, cwd=None):
        """Starts `python3 ARGS...` (the python running the tests)."""
        return self.start(name, [PYTHON, *map(str, args)], env=env, cwd=cwd)

    def broker(self, port, *args):
        return self.volley("broker", "broker", "--port", port, *args)

    def learner(self, port, *args):
        return self.volley("learner", "learner", "--broker", f"127.0.0.1:{port}", *args)

    @staticmethod
    def text(p):
        return Path(p.log).read_text(errors="replace")

    def wait_for(self, p, pattern, secs):
        """True once p's log contains pattern (a substring) within secs."""
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if pattern in self.text(p):
                return True
            time.sleep(0.1)
        return False

    def wait_solved(self, port, actors, secs=300, steps=1_000_000):
        """Waits until the learner on port reports a mean return >= 475 over 100 episodes,
        asserting every actor still runs; fails when its env steps pass steps first (CartPole
        solves in about 260k), or as hung after secs (a bound only so that a broken run ends).
        Returns the learner's last stats."""
        stats, start = {}, time.monotonic()
        while int(stats.get("env_steps", 0)) <= steps:
            assert time.monotonic() - start < secs, f"hung: {stats}\n{self.dump()}"
            time.sleep(1)
            assert all(a.poll() is None for a in actors), self.dump()
            stats = top_kind(port, "learner")
            if int(stats.get("window", 0)) >= 100 and float(stats.get("mean_return", 0)) >= 475:
                print(f"solved in {time.monotonic() - start:.0f} s:",
                      {k: stats.get(k) for k in ("env_steps", "mean_return", "window")})
                return stats
        raise AssertionError(f"not solved within {steps} env steps: {stats}\n{self.dump()}")

    def dump(self):
        """Every log's tail, for a failing assertion's message."""
        out = []
        for p in self.procs:
            out.append(f"--- {p.name} (rc {p.poll()})\n" + self.text(p)[-3000:])
        return "\n".join(out)

    def stop(self, p, sig=signal.SIGTERM, timeout=60):
        """Signals p and waits for it; returns its exit code (SIGKILL after timeout, which only
        ends one that hangs: a learner finishes its update first, seconds on a busy box)."""
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p, timeout=5)
