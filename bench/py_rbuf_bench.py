#!/usr/bin/python3
"""py_rbuf_bench: volley.ReplayBuffer from Python at seed 000's sample size,
beside NumPy moving the same bytes in the same run.

A sample is seed 000's: obs float32 [16, 12, 8, 8] (12,288 values), policy
float32 [64], value float32: 49,412 bytes; the buffer holds --samples of
them (seed 000's 50,000 by default, 2.5 GB; a NumPy ring of the same size
beside it). Batches of 256 come from a pool of 512 distinct samples, as
C-contiguous float32 arrays (so add_batch passes their pointers: no copy in
Python). Cases, each the best of --runs runs, wall clock:
  add_batch(256)          one thread; beside: np.copyto of the same rows into
                          a NumPy ring at the same position (a pure-NumPy buffer)
  add_batch, 4 threads    four Python threads adding at once (the GIL is
                          released in C); beside: four threads doing np.copyto;
                          per thread as seed 000 counts, and in all (a machine
                          with fewer than 4 cores shares them)
  sample(256)             uniform draw + gather into fresh arrays; beside:
                          NumPy fancy indexing ring[idx] of the same rows
  sample(256, beta=0.6)   the prioritized draw (+ importance weights)
Every run's output is checked (each row read back is its pool sample) before
a figure is printed. Seed 000's figures and targets are printed beside.
bench/vl_rbuf_bench.c measures the same buffer from C (and save/load).

usage: /usr/bin/python3 bench/py_rbuf_bench.py [--quick] [--samples N] [--runs N]
"""
import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402

import volley  # noqa: E402

FIELDS = {"obs": ((16, 12, 8, 8), np.float32), "policy": ((64,), np.float32),
          "value": ((), np.float32)}
BATCH, POOL, WRITERS = 256, 512, 4
# seed 000's C++ buffer and its targets
SEED = {"add": (19761.0, 100000.0, "samples/s"), "threads": (5000.0, 80000.0, "samples/s/thread"),
        "sample": (133.0, 500.0, "batches/s")}


def pool(rng):
    """POOL samples; value is the sample's pool index, so a row can be checked."""
    p = {name: rng.random((POOL,) + shape, dtype=np.float32) for name, (shape, _) in
         FIELDS.items() if name != "value"}
    p["value"] = np.arange(POOL, dtype=np.float32)
    return p


def batch(p, k):
    """Batch k of the pool: a contiguous slice of each field (no copy)."""
    lo = (k * BATCH) % POOL
    return {name: a[lo:lo + BATCH] for name, a in p.items()}


def check(p, rows, what):
    """Every row of rows is the pool sample its value names."""
    i = rows["value"].astype(np.int64)
    for name in ("obs", "policy"):
        if not np.array_equal(rows[name], p[name][i]):
            sys.exit(f"py_rbuf_bench: {what}: a row of '{name}' is not its pool sample")


def best(fn, runs):
    """(best seconds of fn() over runs runs)."""
    out = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def threaded(work):
    threads = [threading.Thread(target=work, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def line(name, rate, unit, ref=None, ref_name="", seed=None):
    s = f"{name:28s} {rate:12.0f} {unit}"
    if ref is not None:
        s += f"   {rate / ref:5.2f}x {ref_name} ({ref:.0f})"
    if seed is not None:
        was, target, _ = SEED[seed]
        s += f"   seed 000: {was:.0f}, target {target:.0f}: {'met' if rate >= target else 'missed'}"
    print(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,048 samples, 1 run: for tests")
    ap.add_argument("--samples", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.quick:
        a.samples, a.runs = 2048, 1
    cap = a.samples // BATCH * BATCH
    adds = cap // BATCH  # batches a run adds: the ring once round
    gathers = 200
    rng = np.random.default_rng(1)
    p = pool(rng)
    row_bytes = sum(np.dtype(d).itemsize * int(np.prod(shape)) for shape, d in FIELDS.values())
    buf = volley.ReplayBuffer(cap, FIELDS, seed=1)
    ring = {name: np.zeros((cap,) + shape, dtype) for name, (shape, dtype) in FIELDS.items()}
    print(f"volley.ReplayBuffer from Python: {cap} samples of {row_bytes} bytes "
          f"({cap * row_bytes / 2**30:.2f} GiB), batches of {BATCH}, best of {a.runs} runs, "
          f"wall clock; libvolley {volley.__version__}\n")

    def fill_buf():
        for k in range(adds):
            buf.add_batch(batch(p, k))

    def fill_ring():
        for k in range(adds):
            pos = k * BATCH % cap
            for name, src in batch(p, k).items():
                np.copyto(ring[name][pos:pos + BATCH], src)

    fill_buf(), fill_ring()  # first touch of both, outside the timings
    t_buf, t_ring = best(fill_buf, a.runs), best(fill_ring, a.runs)
    check(p, {n: v[:cap] for n, v in buf.fields.items()}, "add_batch")
    line("add_batch(256)", adds * BATCH / t_buf, "samples/s", adds * BATCH / t_ring,
         "NumPy copyto", seed="add")

    per = adds // WRITERS

    def add_threads():
        threaded(lambda w: [buf.add_batch(batch(p, w * per + k)) for k in range(per)])

    def copy_threads():
        def work(w):
            for k in range(per):
                pos = (w * per + k) * BATCH % cap
                for name, src in batch(p, w * per + k).items():
                    np.copyto(ring[name][pos:pos + BATCH], src)
        threaded(work)

    t_buf, t_ring = best(add_threads, a.runs), best(copy_threads, a.runs)
    check(p, {n: v[:cap] for n, v in buf.fields.items()}, "4 threads adding")
    line(f"add_batch, {WRITERS} threads", per * BATCH / t_buf, "samples/s/thread",
         per * BATCH / t_ring, "NumPy copyto", seed="threads")
    print(f"{'':28s} {WRITERS * per * BATCH / t_buf:12.0f} samples/s in all, on {os.cpu_count()} "
          f"cores ({WRITERS * per * BATCH * row_bytes / t_buf / 1e9:.1f} GB/s)")

    idx = rng.integers(0, cap, (gathers, BATCH))
    got = {}

    def sample_buf(beta=None):
        for _ in range(gathers):
            got.update(buf.sample(BATCH, beta))

    def gather_ring():
        for k in range(gathers):
            got.update({name: r[idx[k]] for name, r in ring.items()})

    t_buf, t_ring = best(sample_buf, a.runs), best(gather_ring, a.runs)
    check(p, got, "sample")
    line("sample(256)", gathers / t_buf, "batches/s", gathers / t_ring, "NumPy ring[idx]",
         seed="sample")
    t_buf = best(lambda: sample_buf(0.6), a.runs)
    check(p, got, "prioritized sample")
    line("sample(256, beta=0.6)", gathers / t_buf, "batches/s", gathers / t_ring,
         "NumPy ring[idx]", seed="sample")
    print(f"\n{gathers * BATCH * row_bytes / t_ring / 1e9:.1f} GB/s gathered by NumPy; "
          "save/load figures: build/vl_rbuf_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
