#!/usr/bin/python3
"""py_rbuf_bench: volley.ReplayBuffer from Python at the C++ self-play buffer's sample size,
beside NumPy moving the same bytes in the same run.

A sample is that buffer's: obs float32 [16, 12, 8, 8] (12,288 values), policy
float32 [64], value float32: 49,412 bytes; the buffer holds --samples of
them (its 50,000 by default, 2.5 GB; a NumPy ring of the same size
beside it). Observations are board planes (sparse 0/1 floats, as board-game
self-play writes them; --noise for random floats). Batches of 256 come from a
pool of 512 distinct samples, as
C-contiguous float32 arrays (so add_batch passes their pointers: no copy in
Python). Cases, each the best of --runs runs, wall clock:
  add_batch(256)          one thread; beside: np.copyto of the same rows into
                          a NumPy ring at the same position (a pure-NumPy buffer)
  add_batch, 4 threads    four Python threads adding at once (the GIL is
                          released in C); beside: four threads doing np.copyto;
                          per thread as the C++ buffer counts, and in all (a machine
                          with fewer than 4 cores shares them)
  sample(256)             uniform draw + gather into fresh arrays; beside:
                          NumPy fancy indexing ring[idx] of the same rows
  sample(256, beta=0.6)   the prioritized draw (+ importance weights)
Every run's output is checked (each row read back is its pool sample) before
a figure is printed. The C++ buffer's figures and targets are printed beside.
  save / load             the whole buffer to --dir and back (LZ4 + CRC32C), beside
                          np.save(+fsync) / np.load of the same arrays
  CartPole add_batch(256) 4 floats, an int, a float a sample: call overhead rules
bench/vl_rbuf_bench.c measures the same buffer from C.

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
NOISE = False  # --noise
# the C++ self-play buffer's figures and its targets
SEED = {"add": (19761.0, 100000.0, "samples/s"), "threads": (5000.0, 80000.0, "samples/s/thread"),
        "sample": (133.0, 500.0, "batches/s")}


def pool(rng):
    """POOL samples; value is the sample's pool index, so a row can be checked. Observations
    are board planes as board-game self-play records them (pieces: sparse 0/1 floats), the
    policy a softmax; --noise: uniform random floats (nothing for LZ4 to find)."""
    obs_shape, _ = FIELDS["obs"]
    if NOISE:
        obs = rng.random((POOL,) + obs_shape, dtype=np.float32)
    else:
        obs = (rng.random((POOL,) + obs_shape, dtype=np.float32) < 0.06).astype(np.float32)
    logits = rng.standard_normal((POOL, 64)).astype(np.float32)
    policy = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    p = {"obs": obs, "policy": policy.astype(np.float32)}
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
        s += f"   C++ buffer: {was:.0f}, target {target:.0f}: {'met' if rate >= target else 'missed'}"
    print(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,048 samples, 1 run: for tests")
    ap.add_argument("--samples", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp", help="where save/load write (default /tmp)")
    ap.add_argument("--noise", action="store_true", help="random float observations")
    a = ap.parse_args()
    global NOISE
    NOISE = a.noise
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
    print(f"{'':28s} {gathers * BATCH * row_bytes / t_ring / 1e9:12.1f} GB/s gathered by NumPy")
    save_load(buf, ring, cap, a)
    del buf, ring
    small(a)
    return 0


def save_load(buf, ring, cap, a):
    """save/load of the whole buffer from Python beside np.save/np.load of the same arrays
    (each with fsync), in --dir; the C++ buffer's 7.6 s / 3.2 s and targets < 1 s / < 0.5 s scale
    with --samples."""
    import tempfile
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path, npy = os.path.join(d, "buf.vlrb"), os.path.join(d, "ring.npy")
        t0 = time.perf_counter()
        buf.save(path)
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        with open(npy, "wb") as f:
            for arr in ring.values():
                np.save(f, arr)
            f.flush()
            os.fsync(f.fileno())
        t_npsave = time.perf_counter() - t0
        names = list(ring)
        ring.clear()  # its memory goes back to this process: both loads land in memory that
        # was touched before, as in bench/vl_rbuf_bench.c (a VM's first touch of memory the
        # process never had can cost 10x: that is the host's, not the loader's)
        t0 = time.perf_counter()
        back = volley.ReplayBuffer.load(path)
        t_load = time.perf_counter() - t0
        if not all(np.array_equal(back.fields[n][:cap], buf.fields[n][:cap]) for n in FIELDS):
            sys.exit("py_rbuf_bench: the loaded buffer differs from the saved one")
        del back
        t0 = time.perf_counter()
        with open(npy, "rb") as f:
            arrs = [np.load(f) for _ in names]
        t_npload = time.perf_counter() - t0
        size = os.path.getsize(path)
        del arrs
    scale = cap / 50000
    for name, t, ref, ref_name, was, target in (
            ("save", t_save, t_npsave, "np.save+fsync", 7.6, 1.0),
            ("load", t_load, t_npload, "np.load", 3.2, 0.5)):
        print(f"{name:28s} {t:12.3f} s          {ref / t:5.2f}x {ref_name} ({ref:.3f} s)   "
              f"C++ buffer: {was * scale:.2f} s, target < {target * scale:.2f} s: "
              f"{'met' if t < target * scale else 'missed'}")
    print(f"{'':28s} file {size / 1e6:.0f} MB (LZ4 chunks under CRC32C)")


def small(a):
    """CartPole's sample (4 float32 obs, an int32 action, a float32 reward): call overhead
    rules; target add_batch(256) >= 10M samples/s; beside np.copyto of the same rows."""
    fields = {"obs": ((4,), np.float32), "action": ((), np.int32), "reward": ((), np.float32)}
    cap, adds = 1 << 20, (1 << 20) // BATCH * 4
    rng = np.random.default_rng(2)
    src = {"obs": rng.random((BATCH, 4), dtype=np.float32),
           "action": rng.integers(0, 2, BATCH, dtype=np.int32),
           "reward": np.ones(BATCH, np.float32)}
    buf = volley.ReplayBuffer(cap, fields, seed=1)
    ring = {n: np.zeros((cap,) + s, d) for n, (s, d) in fields.items()}

    def fill_buf():
        for _ in range(adds):
            buf.add_batch(src)

    def fill_ring():
        for k in range(adds):
            pos = k * BATCH % cap
            for n, v in src.items():
                np.copyto(ring[n][pos:pos + BATCH], v)

    fill_buf(), fill_ring()
    t_buf, t_ring = best(fill_buf, a.runs), best(fill_ring, a.runs)
    if not np.array_equal(buf.fields["obs"][:BATCH], src["obs"]):
        sys.exit("py_rbuf_bench: CartPole rows differ from what was added")
    rate = adds * BATCH / t_buf
    print(f"\n{'CartPole add_batch(256)':28s} {rate:12.0f} samples/s   "
          f"{rate / (adds * BATCH / t_ring):5.2f}x NumPy copyto ({adds * BATCH / t_ring:.0f})   "
          f"target 10000000: {'met' if rate >= 1e7 else 'missed'}")


if __name__ == "__main__":
    sys.exit(main())
