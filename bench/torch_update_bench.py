#!/usr/bin/env python3
"""torch_update_bench: the reference for bench/vl_update_bench.c.

One PPO learner update (zero_grad, forward, loss, backward, grad-norm clip,
Adam) in PyTorch on CPU, on the same MLP and minibatch shapes as volley's
bench: two separate nets, Linear-Tanh-Linear-Tanh-Linear, a policy net
D -> H -> H -> A and a value net D -> H -> H -> 1, with CleanRL's
orthogonal initialization. The loss is volley's (models/vl_policy.h):

    ratio = exp(logp(actions) - old_logp)
    loss  = -mean(min(ratio * adv, clamp(ratio, 1 - 0.2, 1 + 0.2) * adv))
            + 0.5 * 0.5 * mean((v - v_target)^2) - 0.01 * mean(entropy)

then clip_grad_norm_(0.5) and torch.optim.Adam(lr 1e-3, eps 1e-5). The
updates repeat on one fixed minibatch, old_logp taken from the initial
weights, as in the C bench. Each figure is the best of 5 runs of at least
0.2 s of wall-clock time; samples/s = M * updates / seconds.

Prints one line per thread count:
    torch samples/s=<x> threads=<n> case=<name> ...
Thread counts: 1 and every core this process may run on, unless --threads.
"""
import argparse
import math
import os
import sys
import time

import torch
from torch import nn

RUNS, RUN_S = 5, 0.2
QUICK_RUNS, QUICK_RUN_S = 2, 0.01
CLIP, VF_COEF, ENT_COEF = 0.2, 0.5, 0.01
LR, MAX_NORM, EPS = 1e-3, 0.5, 1e-5
SEED = 1

# name: (D, H, A, M, pixels): the C bench's table, same names.
CASES = {
    "cartpole": (4, 64, 2, 256, False),
    "catch": (290, 64, 3, 256, True),
    "cartpole-1024": (4, 64, 2, 1024, False),
    "catch-1024": (290, 64, 3, 1024, True),
}


def mlp(d, h, out, out_gain):
    """Linear-Tanh-Linear-Tanh-Linear with CleanRL's initialization."""
    layers = [nn.Linear(d, h), nn.Tanh(), nn.Linear(h, h), nn.Tanh(), nn.Linear(h, out)]
    for layer, gain in zip(layers[::2], (math.sqrt(2), math.sqrt(2), out_gain)):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return nn.Sequential(*layers)


def make_batch(d, a, m, pixels, gen):
    """Observations like the C bench's: uniform in [-1, 1], or 15% of the
    values lit at a gray level 1 .. 3 (catch's screens and flags average);
    uniform actions; normal advantages and value targets."""
    if pixels:
        lit = torch.rand(m, d, generator=gen) < 0.15
        level = torch.randint(1, 4, (m, d), generator=gen).float()
        obs = torch.where(lit, level, torch.zeros(()))
    else:
        obs = torch.rand(m, d, generator=gen) * 2 - 1
    actions = torch.randint(0, a, (m,), generator=gen)
    adv = torch.randn(m, generator=gen)
    v_target = torch.randn(m, generator=gen)
    return obs, actions, adv, v_target


class Learner:
    """The two nets, their Adam and the fixed minibatch."""

    def __init__(self, case, foreach):
        d, h, a, m, pixels = CASES[case]
        torch.manual_seed(SEED)
        self.m = m
        self.pi = mlp(d, h, a, 0.01)
        self.v = mlp(d, h, 1, 1.0)
        self.params = list(self.pi.parameters()) + list(self.v.parameters())
        kwargs = {"foreach": True} if foreach else {}
        self.opt = torch.optim.Adam(self.params, lr=LR, eps=EPS, **kwargs)
        gen = torch.Generator().manual_seed(SEED)
        self.obs, self.actions, self.adv, self.v_target = make_batch(d, a, m, pixels, gen)
        self.act_idx = self.actions.unsqueeze(1)
        with torch.no_grad():
            logp_all = torch.log_softmax(self.pi(self.obs), dim=-1)
            self.old_logp = logp_all.gather(1, self.act_idx).squeeze(1)
        self.loss = float("nan")
        self.norm = float("nan")

    def update(self):
        self.opt.zero_grad(set_to_none=True)
        logp_all = torch.log_softmax(self.pi(self.obs), dim=-1)
        logp = logp_all.gather(1, self.act_idx).squeeze(1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        ratio = (logp - self.old_logp).exp()
        surr = torch.min(ratio * self.adv, ratio.clamp(1 - CLIP, 1 + CLIP) * self.adv)
        v = self.v(self.obs).squeeze(1)
        value_loss = 0.5 * ((v - self.v_target) ** 2).mean()
        loss = -surr.mean() + VF_COEF * value_loss - ENT_COEF * entropy.mean()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(self.params, MAX_NORM)
        self.opt.step()
        return loss, norm

    def run(self, updates):
        """Takes `updates` updates; returns the seconds they took."""
        t0 = time.perf_counter()
        for _ in range(updates):
            loss, norm = self.update()
        elapsed = time.perf_counter() - t0
        self.loss, self.norm = float(loss), float(norm)
        return elapsed


def calibrate(learner, run_s):
    updates = 1
    while (s := learner.run(updates)) < run_s / 8:
        updates *= 2
    return max(1, math.ceil(updates * run_s / s))


def blas_library():
    """Returns the BLAS shared library this process has mapped: Debian's
    torch calls whatever libblas.so.3 the alternatives system points at."""
    a = torch.ones(64, 64)
    a @ a
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if line.rstrip().endswith(".so.3")}
        real = sorted({os.path.realpath(p) for p in paths if "blas" in os.path.basename(p)})
        return ",".join(real) or "none"
    except OSError:
        return "unknown"


def bench(case, threads, runs, run_s, foreach):
    torch.set_num_threads(threads)
    learner = Learner(case, foreach)
    learner.run(1)
    first_loss = learner.loss
    updates = calibrate(learner, run_s)
    best = min(learner.run(updates) / updates for _ in range(runs))
    last_loss = learner.loss
    if not (math.isfinite(first_loss) and math.isfinite(last_loss) and last_loss < first_loss):
        sys.exit(f"torch_update_bench: {case}: updates went wrong (loss {first_loss} -> {last_loss})")
    return best, first_loss, last_loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="cartpole", choices=sorted(CASES))
    parser.add_argument("--threads", default="1,0",
                        help="comma-separated thread counts; 0 = every core (default 1,0)")
    parser.add_argument("--foreach", action="store_true",
                        help="Adam's multi-tensor (foreach) implementation")
    parser.add_argument("--quick", action="store_true", help="short runs, for tests")
    args = parser.parse_args()
    runs, run_s = (QUICK_RUNS, QUICK_RUN_S) if args.quick else (RUNS, RUN_S)
    cores = len(os.sched_getaffinity(0))
    default_threads = torch.get_num_threads()
    blas = blas_library()
    d, h, a, m, _ = CASES[args.case]
    for t in (int(x) for x in args.threads.split(",")):
        n = t if t > 0 else cores
        best, first_loss, last_loss = bench(args.case, n, runs, run_s, args.foreach)
        print(f"torch samples/s={m / best:.0f} threads={n} case={args.case} D={d} H={h} A={a} "
              f"M={m} us/update={1e6 * best:.2f} loss={first_loss:.6g}->{last_loss:.6g} "
              f"torch={torch.__version__} default_threads={default_threads} "
              f"foreach={int(args.foreach)} blas={blas}", flush=True)


if __name__ == "__main__":
    main()
