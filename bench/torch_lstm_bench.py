#!/usr/bin/env python3
"""torch_lstm_bench: the PyTorch reference for bench/vl_lstm_bench.c.

Times torch.nn.LSTM(--in, --hidden, batch_first=True) on --device (cpu, the
default, or cuda), for each of --threads (torch.set_num_threads):
    update  a learner update's LSTM part: zero_grad, forward over --batch
            sequences of --steps steps from a given (h0, c0), backward of
            sum(y * w) for a fixed w, down to the input (x requires grad)
    actor   an actor's step: forward of --actor-batch sequences of one step
            from a given state, under torch.no_grad()
Each figure is the best of --runs runs of at least --run-s seconds of wall
clock, in ms per call (on cuda each call waits for the device). Prints
`torch version=<v> blas=<library>` and then one line per thread count:
    torch threads=<t> update_ms=<x> actor_ms=<x>
With --forward-seq it times volley.torch's forward_seq instead (the
package from this checkout, libvolley as volley finds it): forward and
backward of --spec over --segments sequences of --seq-steps steps of --obs
floats from a stored state, --resets episode starts in each at seeded
random steps, by the loop of runs between resets (seq_kernel=False) and
by one packed sequence-kernel call (seq_kernel=True), one line per
thread count:
    forward_seq device=<d> threads=<t> loop_ms=<x> loop_samples_s=<x>
        kernel_ms=<x> kernel_samples_s=<x> ratio=<x>   (one line; ratio: kernel/loop samples/s)
Exit 2 on a bad argument.
"""
import argparse
import os
import sys
import time

import torch


def best_ms(fn, runs, run_s, sync=lambda: None):
    """Returns the best ms per call of fn (each call followed by sync) over
    runs runs of run_s seconds."""
    fn()
    sync()
    best = float("inf")
    for _ in range(runs):
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            sync()
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


def device_sync(device):
    """Returns a call that waits for device's queued work (nothing on the CPU)."""
    if device.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def lstm_table(a, device):
    """Prints the nn.LSTM update and actor lines, one per thread count."""
    lstm = torch.nn.LSTM(a.inputs, a.hidden, batch_first=True).to(device)
    x = (torch.rand(a.batch, a.steps, a.inputs) * 2 - 1).to(device)
    x.requires_grad_(True)
    h0 = (torch.rand(1, a.batch, a.hidden) - 0.5).to(device)
    c0 = (torch.rand(1, a.batch, a.hidden) - 0.5).to(device)
    w = (torch.rand(a.batch, a.steps, a.hidden) * 2 - 1).to(device)
    xa = (torch.rand(a.actor_batch, 1, a.inputs) * 2 - 1).to(device)
    ha = (torch.rand(1, a.actor_batch, a.hidden) - 0.5).to(device)
    ca = (torch.rand(1, a.actor_batch, a.hidden) - 0.5).to(device)

    def update():
        lstm.zero_grad(set_to_none=False)
        x.grad = None
        y, _ = lstm(x, (h0, c0))
        (y * w).sum().backward()

    def actor():
        with torch.no_grad():
            lstm(xa, (ha, ca))

    sync = device_sync(device)
    for t in a.threads:
        torch.set_num_threads(t)
        u = best_ms(update, a.runs, a.run_s, sync)
        s = best_ms(actor, a.runs, a.run_s, sync)
        print("torch threads=%d update_ms=%.4f actor_ms=%.4f" % (t, u, s), flush=True)


def seq_resets(a):
    """reset [segments, seq_steps] bools: --resets episode starts in each
    segment at seeded random steps past the first."""
    g = torch.Generator().manual_seed(1)
    reset = torch.zeros(a.segments, a.seq_steps, dtype=torch.bool)
    for b in range(a.segments):
        steps = torch.randperm(a.seq_steps - 1, generator=g)[:a.resets] + 1
        reset[b, steps] = True
    return reset


def forward_seq_table(a, device):
    """Prints forward_seq's loop beside its sequence kernel, one line per
    thread count."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "bindings", "python"))
    import volley.torch as vt
    net = vt.build(a.spec, [((a.obs,), "f32")], 2, seed=1).to(device)
    obs = (torch.rand(a.segments, a.seq_steps, a.obs) * 2 - 1).to(device)
    state = (torch.rand(a.segments, net.state_size) - 0.5).to(device)
    reset = seq_resets(a).to(device)
    w = (torch.rand(a.segments, a.seq_steps, 2) * 2 - 1).to(device)

    def step(kernel):
        net.zero_grad(set_to_none=False)
        out, values, _ = net.forward_seq(obs, state, reset, seq_kernel=kernel)
        ((out * w).sum() + values.square().sum()).backward()

    sync, samples = device_sync(device), a.segments * a.seq_steps
    for t in a.threads:
        torch.set_num_threads(t)
        loop = best_ms(lambda: step(False), a.runs, a.run_s, sync)
        kernel = best_ms(lambda: step(True), a.runs, a.run_s, sync)
        print("forward_seq device=%s threads=%d loop_ms=%.3f loop_samples_s=%.0f "
              "kernel_ms=%.3f kernel_samples_s=%.0f ratio=%.2f"
              % (device, t, loop, samples / loop * 1e3, kernel, samples / kernel * 1e3,
                 loop / kernel), flush=True)


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
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--forward-seq", action="store_true")
    ap.add_argument("--spec", default="linear(256) lstm(256)")
    ap.add_argument("--segments", type=int, default=16)
    ap.add_argument("--seq-steps", type=int, default=64)
    ap.add_argument("--obs", type=int, default=4)
    ap.add_argument("--resets", type=int, default=2)
    a = ap.parse_args()
    if a.resets >= a.seq_steps:
        ap.error("--resets must be below --seq-steps")
    try:
        device = torch.device(a.device)
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError) as e:
        ap.error("--device %s: %s" % (a.device, e))
    torch.manual_seed(0)
    print("torch version=%s blas=%s" % (torch.__version__, blas_name()), flush=True)
    if a.forward_seq:
        forward_seq_table(a, device)
    else:
        lstm_table(a, device)


if __name__ == "__main__":
    main()
