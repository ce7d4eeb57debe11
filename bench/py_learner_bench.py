#!/usr/bin/python3
"""py_learner_bench: the PyTorch learner example's update beside the C
learner's, on the same batch, in updates/s (a figure, no target).

One update is what each learner does per batch of 16 CartPole segments x 64
steps at the C learner's defaults: recompute values and log-probs, V-trace
(volley.vtrace for the torch learner), then 4 epochs of 256-sample
minibatches (PPO loss, backward, grad-norm clip, Adam).

  C learner      build/vl_trainer_bench: vl_trainer_update, one thread
  torch learner  bindings/python/examples/torch_learner.py's update(), on
                 the batch vl_trainer_bench wrote (--dump), at 1 thread and
                 at every core

Each figure is the best of RUNS runs of at least RUN_S of wall-clock time.

usage: /usr/bin/python3 bench/py_learner_bench.py [--quick] [--c-bench PATH]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402

import volley  # noqa: E402

RUNS, RUN_S = 5, 0.5
N, T, D = 16, 64, 4  # vl_trainer_bench's batch: CartPole


def load_example():
    path = os.path.join(HERE, "..", "bindings", "python", "examples", "torch_learner.py")
    spec = importlib.util.spec_from_file_location("torch_learner", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_batch(d):
    """The batch vl_trainer_bench --dump wrote, as a volley.Batch."""
    def f(name, dtype, shape):
        return np.fromfile(os.path.join(d, name), dtype).reshape(shape)
    return volley.Batch({
        "obs": f("obs.f32", np.float32, (N, T + 1, D)),
        # the batch a transport hands over: float actions [n, T, dims], one choice here
        "actions": f("actions.i32", np.int32, (N, T)).astype(np.float32)[..., None],
        "rewards": f("rewards.f32", np.float32, (N, T)),
        "dones": f("dones.f32", np.float32, (N, T)),
        "truncated": f("truncated.u8", np.uint8, (N, T)),
        "logp": f("logp.f32", np.float32, (N, T)),
        "final_obs": f("final_obs.f32", np.float32, (N, T, D)),
    })


def time_torch(ex, batch, threads, runs, run_s):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    sys.argv = [sys.argv[0]]
    args = ex.parse_args()  # the example's defaults: the C learner's
    agent = ex.Agent(D, 2, 64)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    best = 0.0
    for _ in range(runs):
        k, t0 = 0, time.monotonic()
        while True:
            losses = ex.update(agent, opt, batch, args)
            k += 1
            dt = time.monotonic() - t0
            if dt >= run_s:
                break
        if not np.isfinite(losses).all():
            sys.exit("py_learner_bench: the torch update diverged")
        best = max(best, k / dt)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one short run each (for tests)")
    p.add_argument("--c-bench", default=os.path.join(HERE, "..", "build", "vl_trainer_bench"))
    a = p.parse_args()
    runs, run_s = (1, 0.01) if a.quick else (RUNS, RUN_S)
    with tempfile.TemporaryDirectory() as d:
        c = subprocess.run([a.c_bench, *(["--quick"] if a.quick else []), "--dump", d],
                           capture_output=True, text=True)
        if c.returncode != 0:
            sys.exit(f"py_learner_bench: {a.c_bench} failed: {c.stderr.strip()}")
        line = c.stdout.strip().splitlines()[-1]
        c_ups = float(line.split("updates/s=")[1].split()[0])
        batch = load_batch(d)
    try:
        ex = load_example()
    except ImportError as e:
        print(line)
        sys.exit(f"py_learner_bench: the torch learner needs torch ({e})")
    print(line)
    threads = sorted({1, len(os.sched_getaffinity(0))})
    for th in threads:
        ups = time_torch(ex, batch, th, runs, run_s)
        print(f"torch learner update: updates/s={ups:.1f} threads={th} "
              f"(C learner / torch = {c_ups / ups:.1f}x)")


if __name__ == "__main__":
    main()
