"""`python3 -m volley eval` of a recurrent checkpoint (`volley up --env memory
--model "linear(64) lstm(64)"`, a run of about a second) on memory_envs.Recall,
the built-in memory env's twin in Python: libvolley's vl_kept_step carries each
env's state from step to step, zeroed at each episode's start, so the policy
plays as trained (greedy >= 0.95, where one step from the zero state answers
blind) and scores what `volley eval` (C) scores on the built-in env, greedy and
sampled."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from procs import VOLLEY
from volley.evaluate import Kept

TESTS = Path(__file__).resolve().parent
MODEL = "linear(64) lstm(64)"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run directory of a memory run trained until solved."""
    d = tmp_path_factory.mktemp("mem")
    r = subprocess.run([VOLLEY, "up", "--env", "memory", "--model", MODEL, "--deterministic",
                        "--runs", str(d / "runs"), "--name", "m"], cwd=d, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "solved:" in r.stdout, r.stdout + r.stderr
    return d / "runs" / "m"


def _mean(out):
    last = out.strip().splitlines()[-1]
    assert last.startswith("return "), out
    return float(last.split()[1])


def _python_eval(run, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    r = subprocess.run([sys.executable, "-m", "volley", "eval", str(run), "--env",
                        "memory_envs:make_recall", "--episodes", "200", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return _mean(r.stdout)


def _c_eval(run, *args):
    r = subprocess.run([VOLLEY, "eval", str(run), "--env", "memory", "--episodes", "200", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return _mean(r.stdout)


def test_python_eval_carries_the_state_and_agrees_with_c_eval(run):
    greedy, c_greedy = _python_eval(run, "--greedy"), _c_eval(run, "--greedy")
    sampled, c_sampled = _python_eval(run), _c_eval(run)
    print(f"200 episodes: python {greedy:.2f} greedy, {sampled:.2f} sampled; "
          f"C {c_greedy:.2f} greedy, {c_sampled:.2f} sampled")
    assert greedy >= 0.95 and abs(greedy - c_greedy) <= 0.05
    assert abs(sampled - c_sampled) <= 0.25  # other cues, other draws: within the noise


def test_step_carries_state_in_place_and_first_zeroes_it(run):
    kept = Kept(run)
    try:
        assert kept.recurrent and kept.state_size == 2 * 64
        obs = np.eye(4, dtype=np.float32)[[0, 1, 2, 3]]
        state = kept.new_state(4)
        first = np.ones(4, np.uint8)
        z0 = kept.step(obs, state, first)
        np.testing.assert_array_equal(z0, kept.logits(obs))  # from the zero state
        assert np.abs(state).max() > 0  # advanced in place
        z1 = kept.step(obs, state, np.zeros(4, np.uint8))
        assert not np.allclose(z1, z0)  # the state is read
        z2 = kept.step(obs, state, first)
        np.testing.assert_array_equal(z2, z0)  # zeroed where an episode begins
        with pytest.raises(ValueError, match="state"):
            kept.step(obs, np.zeros((4, 3), np.float32), first)
    finally:
        kept.close()


def test_pick_chooses_by_the_c_heads(run):
    """Kept.pick (libvolley's vl_kept_pick): greedy is each row's argmax; a draw
    follows the softmax of the outputs, is reproduced by the same seed, and
    advances the generator."""
    kept = Kept(run)
    try:
        A = kept.num_actions
        z = np.random.default_rng(0).normal(size=(8, A)).astype(np.float32)
        greedy = kept.pick(z, True, kept.new_rng(1))
        assert greedy.shape == (8, 1) and np.array_equal(greedy[:, 0], z.argmax(axis=1))
        rows = np.tile(np.log(np.arange(1, A + 1, dtype=np.float32)), (20000, 1))
        rng = kept.new_rng(7)
        before = rng.copy()
        drawn = kept.pick(rows, False, rng)[:, 0]
        assert not np.array_equal(rng, before)  # advanced in place
        share = np.bincount(drawn.astype(np.int64), minlength=A) / len(drawn)
        want = np.arange(1, A + 1) / np.arange(1, A + 1).sum()
        assert np.abs(share - want).max() < 0.02, (share, want)
        assert np.array_equal(kept.pick(rows[:50], False, kept.new_rng(7))[:, 0], drawn[:50])
        assert not np.array_equal(kept.pick(rows[:50], False, kept.new_rng(8))[:, 0], drawn[:50])
        with pytest.raises(ValueError, match="rng"):
            kept.pick(z, False, np.zeros(4, np.int64))
    finally:
        kept.close()
