#!/usr/bin/env python3
"""torch_conv_bench: the PyTorch reference for bench/vl_net_bench.c.

Builds the network of --spec (conv(out,k,stride[,pad]), linear(n), relu: the
expanded text vl_net_bench passes) over --shape C,H,W frames, and times on
the CPU, for each thread count and batch:
    fwd     u8 frames / 255 -> net, under torch.no_grad() (an actor's forward)
    fwdbwd  zero_grad, forward, backward from a fixed output grad (a learner's;
            the frames need no grad)
    conv1   the first layer and its relu alone, on float frames, no grad
With --actions A the network gets volley's heads on its torso (vl_net.h:
logits = pi(h) [A], value = v(h) [1], both linear), fwdbwd starts from fixed
gradients of both outputs, and a fourth figure is timed:
    update  fwdbwd then an Adam step (torch.optim.Adam, eps 1e-5, as
            models/vl_adam.h), a learner's whole update
Each figure is the best of --runs runs of at least --run-s seconds of wall
clock, in ms per call. Prints one line per (threads, batch):
    torch threads=<t> batch=<n> fwd_ms=<x> fwdbwd_ms=<x> conv1_ms=<x>
(with --actions, followed by update_ms=<x>) and first a line `torch version=<v> onednn=<0|1> blas=<library>`. Exit 2 on a bad argument.
"""
import argparse
import os
import re
import sys
import time

import torch
from torch import nn

TOKEN = re.compile(r"\s*(conv\((\d+),(\d+),(\d+)(?:,(\d+))?\)|linear\((\d+)\)|relu)")


def build(spec, shape):
    """Returns an nn.Sequential of spec on frames of shape (C, H, W)."""
    layers, c, h, w, flat, pos = [], shape[0], shape[1], shape[2], None, 0
    spec = spec.replace(" ", "")
    while pos < len(spec):
        m = TOKEN.match(spec, pos)
        if not m:
            sys.exit(f"torch_conv_bench: --spec: cannot read '{spec[pos:]}'; "
                     "expected conv(o,k,s[,p]), linear(n) or relu")
        pos = m.end()
        if m.group(1) == "relu":
            layers.append(nn.ReLU())
        elif m.group(2):
            o, k, s, p = (int(m.group(i) or 0) for i in range(2, 6))
            layers.append(nn.Conv2d(c, o, k, s, p))
            c, h, w = o, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        else:
            if flat is None:
                layers.append(nn.Flatten())
                flat = c * h * w
            n = int(m.group(6))
            layers.append(nn.Linear(flat, n))
            flat = n
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """A torso with volley's two heads: logits pi(h) and value v(h)."""

    def __init__(self, torso, shape, actions):
        super().__init__()
        self.torso = torso
        with torch.no_grad():
            width = torso(torch.zeros(1, *shape)).shape[1]
        self.pi = nn.Linear(width, actions)
        self.v = nn.Linear(width, 1)

    def forward(self, x):
        h = self.torso(x)
        return self.pi(h), self.v(h)


def blas_library():
    """Returns the BLAS library this process has mapped (Debian's torch runs its
    Linear layers on whatever libblas.so.3 the alternatives system points at)."""
    a = torch.ones(64, 64)
    a @ a
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if line.rstrip().endswith(".so.3")}
        real = sorted({os.path.realpath(p) for p in paths if "blas" in os.path.basename(p)})
        return ",".join(real) or "none"
    except OSError:
        return "unknown"


def best_ms(fn, runs, run_s):
    """Returns the best ms per call of fn over runs runs of >= run_s s each."""
    fn()  # warm up: allocations, oneDNN's primitive cache
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


def bench(net, shape, batch, runs, run_s):
    """Returns (fwd_ms, fwdbwd_ms, conv1_ms[, update_ms]) at one batch size;
    update_ms when net has heads (ActorCritic)."""
    g = torch.Generator().manual_seed(1)
    frames = torch.randint(0, 256, (batch, *shape), dtype=torch.uint8, generator=g)
    x = frames.float() / 255
    heads = isinstance(net, ActorCritic)
    with torch.no_grad():
        outs = net(x) if heads else (net(x),)
        dys = [torch.rand(o.shape, generator=g) * 2 - 1 for o in outs]
    torso = net.torso if heads else net
    conv1 = torso[:2] if len(torso) > 1 and isinstance(torso[1], nn.ReLU) else torso[:1]
    opt = torch.optim.Adam(net.parameters(), lr=2.5e-4, eps=1e-5)

    def fwd():
        with torch.no_grad():
            net(frames.float() / 255)

    def fwdbwd():
        net.zero_grad(set_to_none=True)
        y = net(frames.float() / 255)
        torch.autograd.backward(list(y) if heads else [y], dys)

    def update():
        fwdbwd()
        opt.step()

    def c1():
        with torch.no_grad():
            conv1(x)

    times = (best_ms(fwd, runs, run_s), best_ms(fwdbwd, runs, run_s), best_ms(c1, runs, run_s))
    return times + (best_ms(update, runs, run_s),) if heads else times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="expanded spec, e.g. 'conv(32,8,4) relu'")
    ap.add_argument("--shape", default="4,84,84", help="frames C,H,W (default 4,84,84)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--batches", default="256,16", help="batch sizes (default 256,16)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--run-s", type=float, default=0.3)
    ap.add_argument("--actions", type=int, default=0,
                    help="add volley's heads (A logits and a value) and time an Adam update")
    a = ap.parse_args()
    try:
        shape = tuple(int(v) for v in a.shape.split(","))
        threads = [int(v) for v in a.threads.split(",")]
        batches = [int(v) for v in a.batches.split(",")]
    except ValueError:
        ap.error("--shape, --threads and --batches take comma-separated integers")
    if len(shape) != 3 or min(shape + tuple(threads) + tuple(batches)) < 1 or a.runs < 1 or \
            a.actions < 0:
        ap.error("--shape takes C,H,W; counts must be at least 1")
    torch.manual_seed(1)
    net = build(a.spec, shape)
    if a.actions:
        net = ActorCritic(net, shape, a.actions)
    print(f"torch version={torch.__version__} onednn={int(torch.backends.mkldnn.is_available())} "
          f"blas={blas_library()}", flush=True)
    for t in threads:
        torch.set_num_threads(t)
        for n in batches:
            times = bench(net, shape, n, a.runs, a.run_s)
            update = f" update_ms={times[3]:.3f}" if a.actions else ""
            print(f"torch threads={t} batch={n} fwd_ms={times[0]:.3f} fwdbwd_ms={times[1]:.3f} "
                  f"conv1_ms={times[2]:.3f}{update}", flush=True)


if __name__ == "__main__":
    main()
