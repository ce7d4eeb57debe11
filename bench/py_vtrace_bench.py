#!/usr/bin/python3
"""py_vtrace_bench: volley.vtrace called from NumPy beside the C call it wraps.

Same inputs as bench/vl_vtrace_bench.c (values, rewards ~ N(0, 1), a done
with probability 5%, a fifth of them truncated with a bootstrap ~ N(0, 1),
log ratios uniform in [-1, 1]), n x T = 4096 x 128 by default. Each
operation is timed best of RUNS runs of at least RUN_S of thread CPU time
(as the C bench does):
  C call (ctypes)      lib.vl_vtrace straight through ctypes, arrays already
                       float32 C-contiguous, outputs allocated once, pointers
                       taken once: the C kernel plus one foreign call
  volley.vtrace out=   the wrapper, writing into outputs allocated once
  volley.vtrace        the wrapper as usually called: fresh outputs each call
  ... boot=            the same three for vl_vtrace_boot (truncation)
  float64 inputs       the wrapper converting four float64 arrays first (for
                       scale: not a target)
The operations compared take turns call by call within each run.
The target: volley.vtrace within 1.2x of the C call. "out=" is the like-for-like
figure (the wrapper's own cost: checks, pointers, one foreign call); without
out= each call also writes its 4 MiB of results into newly allocated arrays,
which in steady state take no page faults but are not in cache as the C
call's reused outputs are. With build/vl_vtrace_bench
beside (or --c-bench PATH) its own 4096x128 figures are printed too.

usage: /usr/bin/python3 bench/py_vtrace_bench.py [--quick] [--n N] [--T T] [--c-bench PATH|none]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402

import volley  # noqa: E402
from volley import _lib  # noqa: E402

TARGET = 1.2  # volley.vtrace's time over the C call's, at most


def inputs(n, T, seed=1):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, T + 1), dtype=np.float32)
    rewards = rng.standard_normal((n, T), dtype=np.float32)
    dones = (rng.random((n, T)) < 0.05).astype(np.float32)
    log_rhos = rng.uniform(-1, 1, (n, T)).astype(np.float32)
    trunc = (dones == 1) & (rng.random((n, T)) < 0.2)
    boot = np.where(trunc, rng.standard_normal((n, T)), 0).astype(np.float32)
    return values, rewards, dones, log_rhos, boot


def best(fns, runs, run_s):
    """Seconds per call of each of fns: the best of runs runs, each of at least
    run_s of thread CPU time per fn. The fns take turns call by call, so that
    their ratios are not the machine's mood between two runs (as
    vl_vtrace_bench's s_time_pair)."""
    for fn in fns:
        fn()
    out = [float("inf")] * len(fns)
    for _ in range(runs):
        spent, calls = [0.0] * len(fns), 0
        while min(spent) < run_s:
            for k, fn in enumerate(fns):
                t0 = time.thread_time()
                fn()
                spent[k] += time.thread_time() - t0
            calls += 1
        out = [min(o, s / calls) for o, s in zip(out, spent)]
    return out


def c_bench_lines(path, quick):
    """vl_vtrace_bench's 4096x128 lines, or a note why there are none."""
    if path == "none":
        return []
    if not os.path.exists(path):
        return [f"(no {path}: build it to see the C bench's own figures)"]
    cmd = [path] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    return [line for line in out.splitlines() if line.startswith("4096x128")] + \
        [f"(from {' '.join(cmd)})"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 runs of 5 ms, for tests")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--c-bench", default=os.path.join(HERE, "..", "build", "vl_vtrace_bench"),
                    help="the C bench to run beside (none: skip)")
    a = ap.parse_args()
    runs, run_s = (2, 0.005) if a.quick else (5, 0.1)
    n, T = a.n, a.T
    values, rewards, dones, log_rhos, boot = inputs(n, T)
    vs, pg = np.empty_like(rewards), np.empty_like(rewards)
    kw = dict(gamma=0.99, lam=0.95, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0)
    p = _lib.vtrace_params(0.99, 0.95, 1.0, 1.0, 1.0)
    ptr = [x.ctypes.data for x in (values, rewards, dones, log_rhos, vs, pg, boot)]
    lib, pref = _lib.lib, ctypes.byref(p)

    def c_call():
        lib.vl_vtrace(pref, n, T, ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], ptr[5])

    def c_call_boot():
        lib.vl_vtrace_boot(pref, n, T, ptr[0], ptr[1], ptr[2], ptr[6], ptr[3], ptr[4], ptr[5])

    # The wrapper's output is the C call's, bit for bit.
    c_call()
    want = vs.copy(), pg.copy()
    got = volley.vtrace(values, rewards, dones, log_rhos, **kw)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), "differs"
    c_call_boot()
    want = vs.copy(), pg.copy()
    got = volley.vtrace(values, rewards, dones, log_rhos, boot=boot, **kw)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), "boot differs"

    f64 = [x.astype(np.float64) for x in (values, rewards, dones, log_rhos)]
    groups = [  # (name, fn): the first of each group is the C call the others are held to
        [("C call (ctypes)", c_call),
         ("volley.vtrace out=", lambda: volley.vtrace(values, rewards, dones, log_rhos,
                                                      out=(vs, pg), **kw)),
         ("volley.vtrace", lambda: volley.vtrace(values, rewards, dones, log_rhos, **kw))],
        [("C call boot (ctypes)", c_call_boot),
         ("volley.vtrace boot= out=", lambda: volley.vtrace(values, rewards, dones, log_rhos,
                                                            boot=boot, out=(vs, pg), **kw)),
         ("volley.vtrace boot=", lambda: volley.vtrace(values, rewards, dones, log_rhos,
                                                       boot=boot, **kw))],
        [("C call (ctypes)", c_call),
         ("float64 inputs", lambda: volley.vtrace(*f64, **kw))],  # scale only: no target
    ]
    print(f"volley.vtrace from NumPy, {n}x{T}, best of {runs} runs of >= {run_s} s each (thread "
          f"CPU time, calls taking turns); libvolley {volley.__version__} at {volley.lib_path}\n")
    missed = 0
    for g, group in enumerate(groups):
        secs = best([fn for _, fn in group], runs, run_s)
        for k, (name, _) in enumerate(group):
            if g == 2 and k == 0:
                continue  # printed above
            s = secs[k]
            line = f"{name:26s} {s * 1e3:8.3f} ms/call {s * 1e9 / (n * T):7.3f} ns/element"
            if k > 0:
                ratio = s / secs[0]
                line += f"   {ratio:5.2f}x the C call"
                if g < 2:
                    missed += ratio > TARGET
                    line += f" (target <= {TARGET}x: {'met' if ratio <= TARGET else 'missed'})"
            print(line)
    print("(out=: the wrapper's own cost; without it, also fresh result arrays every call)")
    lines = c_bench_lines(a.c_bench, a.quick)
    if lines:
        print("\nbuild/vl_vtrace_bench, the same kernel from C:")
        for line in lines:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
