"""A recurrent policy acting through `python3 -m volley actor --model "linear(32)
lstm(32)"` (the C engine carries each env's state) with a C broker and a C
learner learns memory_envs.Cue, a task no memoryless policy can do better than
chance on: the cue is shown at the first step only and asked for after 6
blank steps, on an observation that is the same for both cues. Budget: a mean
return >= 0.9 over the learner's window of 100 episodes within 120k env steps
(measured: 20k-32k). The default MLP, given 100k steps, stays near chance
(measured: mean 0). Runs are bounded by env steps; HANG_S only ends one that
hangs (a run takes 10-30 s on 2 busy cores; 120k steps of a policy that does
not learn, about 2 min)."""
import os
import time
from pathlib import Path

import numpy as np

from procs import free_port, top_kind

import memory_envs

ENV = "memory_envs:make_cue"
LSTM = "linear(32) lstm(32)"
SOLVED, STEP_BUDGET, MLP_STEPS = 0.9, 120_000, 100_000
HANG_S = 240


def _train(procs, model, until, steps):
    """Broker, learner and one Python actor of model; polls the learner's stats
    every second until until(stats) or its env steps pass steps; fails as hung
    after HANG_S. Returns the last stats."""
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    args = ["-m", "volley", "actor", "--env", ENV, "--broker", f"127.0.0.1:{port}",
            "--envs", 8, "--seed", 1]
    here = Path(__file__).resolve().parent  # memory_envs, and the package above it
    actor = procs.python("actor", *args, *(["--model", model] if model else []),
                         env={"PYTHONPATH": os.pathsep.join([str(here), str(here.parent)])})
    stats, start = {}, time.monotonic()
    while True:
        assert time.monotonic() - start < HANG_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(1)
        assert actor.poll() is None, procs.dump()
        stats = top_kind(port, "learner")
        if int(stats.get("window", 0)) >= 100 and until(stats):
            break
        if int(stats.get("env_steps", 0)) > steps:
            break
    print(f"{model or 'mlp'}: {time.monotonic() - start:.0f} s")
    assert "Traceback" not in procs.text(actor), procs.dump()
    return stats


def test_the_answer_is_asked_on_the_same_observation_for_both_cues():
    seen = {}
    for cue_seed in range(20):
        env = memory_envs.Cue()
        first, _ = env.reset(seed=cue_seed)
        obs = [first]
        for _ in range(memory_envs.BLANK + 1):
            obs.append(env.step(0)[0])
        seen.setdefault(env.cue, []).append(np.array(obs))
    assert set(seen) == {-1, 1}
    a, b = seen[-1][0], seen[1][0]
    assert not np.array_equal(a[0], b[0]) and np.array_equal(a[1:], b[1:])
    env = memory_envs.Cue()
    env.reset(seed=3)
    for _ in range(memory_envs.BLANK + 1):
        assert env.step(0)[1:4] == (0.0, False, False)
    _, r, term, _, _ = env.step(1 if env.cue > 0 else 0)
    assert (r, term) == (1.0, True)


def test_a_recurrent_python_actor_learns_the_memory_task(procs):
    stats = _train(procs, LSTM, lambda s: float(s.get("mean_return", 0)) >= SOLVED, STEP_BUDGET)
    steps = int(stats.get("env_steps", 0))
    print("lstm:", {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    assert float(stats.get("mean_return", 0)) >= SOLVED and steps <= STEP_BUDGET, \
        f"not solved: {stats}\n{procs.dump()}"
    assert f"model {LSTM}" in procs.text(procs.procs[1]), "the learner took the actor's model"


def test_a_memoryless_policy_stays_at_chance(procs):
    stats = _train(procs, None, lambda s: int(s.get("env_steps", 0)) >= MLP_STEPS, MLP_STEPS)
    print("mlp:", {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    assert int(stats.get("env_steps", 0)) >= MLP_STEPS, f"{stats}\n{procs.dump()}"
    assert abs(float(stats["mean_return"])) < 0.5, stats
