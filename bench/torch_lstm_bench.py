#!/usr/bin/env python3
"""torch_lstm_bench: the PyTorch reference for bench/vl_lstm_bench.c.

Times torch.nn.LSTM(--in, --hidden, batch_first=True) on the CPU, for each
of --threads (torch.set_num_threads):
    update  a learner update's LSTM part: zero_grad, forward over --batch
            sequences of --steps steps from a given (h0, c0), backward of
            sum(y * w) for a fixed w, down to the input (x requires grad)
    actor   an actor's step: forward of --actor-batch sequences of one step
            from a given state, under torch.no_grad()
Each figure is the best of --runs runs of at least --run-s seconds of wall
clock, in ms per call. Prints `torch version=<v> blas=<library>` and then one
line per thread count:
    torch threads=<t> update_ms=<x> actor_ms=<x>
Exit 2 on a bad argument.
"""
import argparse
import os
import time

import torch


def best_ms(fn, runs, run_s):
    """Returns the best ms per call of fn over runs runs of run_s seconds."""
    fn()
    best = float("inf")
    for _ in range(runs):
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            dt = time.perf_counter() - t0
            if dt >= run_s:
                break
        best = min(best, dt * 1e3 / calls)
    return best


def blas_name():
    """Returns the BLAS library this process loaded, from its memory map."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                name = os.path.basename(line.split()[-1]) if "/" in line else ""
                if "blas" in name or "mkl" in name:
                    return name
    except OSError:
        pass
    return "unknown"


def counts(text):
    values = [int(v) for v in text.split(",")]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected counts >= 1, comma separated")
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--in", dest="inputs", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--actor-batch", type=int, default=16)
    ap.add_argument("--threads", type=counts, default=[1])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--run-s", type=float, default=1.0)
    a = ap.parse_args()
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(a.inputs, a.hidden, batch_first=True)
    x = torch.rand(a.batch, a.steps, a.inputs) * 2 - 1
    x.requires_grad_(True)
    h0 = torch.rand(1, a.batch, a.hidden) - 0.5
    c0 = torch.rand(1, a.batch, a.hidden) - 0.5
    w = torch.rand(a.batch, a.steps, a.hidden) * 2 - 1
    xa = torch.rand(a.actor_batch, 1, a.inputs) * 2 - 1
    ha = torch.rand(1, a.actor_batch, a.hidden) - 0.5
    ca = torch.rand(1, a.actor_batch, a.hidden) - 0.5

    def update():
        lstm.zero_grad(set_to_none=False)
        x.grad = None
        y, _ = lstm(x, (h0, c0))
        (y * w).sum().backward()

    def actor():
        with torch.no_grad():
            lstm(xa, (ha, ca))

    update()
    print("torch version=%s blas=%s" % (torch.__version__, blas_name()), flush=True)
    for t in a.threads:
        torch.set_num_threads(t)
        u = best_ms(update, a.runs, a.run_s)
        s = best_ms(actor, a.runs, a.run_s)
        print("torch threads=%d update_ms=%.4f actor_ms=%.4f" % (t, u, s), flush=True)


if __name__ == "__main__":
    main()
