#!/usr/bin/python3
"""py_actor_bench: a Python env loop with volley.Actor beside the same loop
with random actions and no volley, in one run.

Both loops step volley.envs.cartpole.CartPoleVectorEnv (16 NumPy CartPoles,
SAME_STEP autoreset) and build the final-observation array from its info.
  no volley        actions drawn with NumPy's Generator.integers
  volley.Actor     actions = actor.act(obs) (volley's MLP forward pass and
                   sampling in C), actor.observe(...) after each step: every
                   64 steps 16 segments cut, packed, LZ4-compressed and pushed
The bench starts a broker and a learner (the volley executable: $VOLLEY_BIN,
else build/volley) on a free port and stops them at the end. The actor does
not wait for fresh weights (max_ahead 0), so the figure is the actor's own
cost, not the learner's pace. Each loop runs best of RUNS runs of RUN_S
seconds of this thread's CPU time, taking turns; steps/s are env steps (16
a loop iteration). Target: volley.Actor >= 0.7x the loop without volley.

usage: /usr/bin/python3 bench/py_actor_bench.py [--quick] [--envs N] [--runs R] [--seconds S]
"""
import argparse
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402

import volley  # noqa: E402
from volley.envs.cartpole import CartPoleVectorEnv  # noqa: E402

VOLLEY = os.environ.get("VOLLEY_BIN") or os.path.join(HERE, "..", "build", "volley")


def free_port():
    for _ in range(200):
        base = 30000 + random.randrange(2000) * 5
        try:
            for p in range(base, base + 5):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free port range")


def finals(env_obs, info, dim):
    """The final observations of ended episodes as an [N, dim] array."""
    final = np.zeros((len(env_obs), dim), np.float32)
    if "final_obs" in info:
        for i in np.flatnonzero(info["_final_obs"]):
            final[i] = info["final_obs"][i]
    return final


def loop_plain(env, obs, rng, seconds):
    """The env loop with random actions; returns (env steps, CPU s, wall s)."""
    n, steps = env.num_envs, 0
    c0, w0 = time.thread_time(), time.perf_counter()
    while time.thread_time() - c0 < seconds:
        for _ in range(64):
            actions = rng.integers(0, 2, n)
            obs, rew, term, trunc, info = env.step(actions)
            final = finals(obs, info, 4)
        steps += 64 * n
    return steps, time.thread_time() - c0, time.perf_counter() - w0, obs


def loop_actor(env, obs, actor, seconds):
    """The same loop acting with volley.Actor; returns (env steps, CPU s, wall s)."""
    n, steps = env.num_envs, 0
    c0, w0 = time.thread_time(), time.perf_counter()
    while time.thread_time() - c0 < seconds:
        for _ in range(64):
            actions = actor.act(obs)
            obs, rew, term, trunc, info = env.step(actions)
            final = finals(obs, info, 4)
            actor.observe(rew, term, trunc, obs, final_obs=final)
        steps += 64 * n
    return steps, time.thread_time() - c0, time.perf_counter() - w0, obs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one short run each (ctest)")
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    runs, secs = (1, 0.2) if a.quick else (a.runs, a.seconds)
    port = free_port()
    logs = open(os.devnull, "wb")
    procs = [subprocess.Popen([VOLLEY, "broker", "--port", str(port)], stdout=logs, stderr=logs)]
    procs.append(subprocess.Popen([VOLLEY, "learner", "--broker", f"127.0.0.1:{port}"],
                                  stdout=logs, stderr=logs))
    try:
        env_a, env_b = CartPoleVectorEnv(a.envs), CartPoleVectorEnv(a.envs)
        obs_a, _ = env_a.reset(seed=1)
        obs_b, _ = env_b.reset(seed=2)
        rng = np.random.default_rng(1)
        with volley.Actor(broker=f"127.0.0.1:{port}", spec=env_b, num_envs=a.envs,
                          horizon=64, max_ahead=0, actor_id=1) as actor:
            actor.sync()  # the first weights, outside the timing
            best_p = best_v = (0.0, 0.0)
            for _ in range(runs):
                n, cpu, wall, obs_a = loop_plain(env_a, obs_a, rng, secs)
                best_p = max(best_p, (n / cpu, n / wall))
                n, cpu, wall, obs_b = loop_actor(env_b, obs_b, actor, secs)
                best_v = max(best_v, (n / cpu, n / wall))
            sent = actor.segments_sent
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(10)
    print(f"py_actor_bench: {a.envs} NumPy CartPoles (vector env), best of {runs} runs of "
          f"{secs:.1f} s CPU; {sent} segments pushed")
    print(f"{'loop':<18} {'steps/s (CPU)':>14} {'steps/s (wall)':>15}")
    print(f"{'no volley':<18} {best_p[0]:>14,.0f} {best_p[1]:>15,.0f}")
    print(f"{'volley.Actor':<18} {best_v[0]:>14,.0f} {best_v[1]:>15,.0f}")
    ratio = best_v[0] / best_p[0]
    print(f"volley.Actor / no volley: {ratio:.2f}x (CPU)  (target >= 0.70x)  "
          f"{'ok' if ratio >= 0.7 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
