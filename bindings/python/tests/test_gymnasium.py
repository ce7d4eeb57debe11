"""The Python actor on Gymnasium's own code (from PyPI, in the checkout's .venv):
CartPole-v1 made by gymnasium.make trains to solved through `python -m volley actor`;
its vector envs work in SAME_STEP autoreset (each ended episode's final observation is a
real end of CartPole and the next observation a fresh reset) and are refused in 1.x's
default NEXT_STEP with the reason; a C broker and learner take the segments."""
import signal
import time

import numpy as np
import pytest

import volley
from conftest import need
from procs import free_port, top_kind

gym = need("gymnasium")

MAKE_ENV = '''import gymnasium
def make_env():
    return gymnasium.make("CartPole-v1")
'''


def test_gymnasium_cartpole_trains_to_solved(procs, tmp_path):
    (tmp_path / "gym_cartpole.py").write_text(MAKE_ENV)
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    actors = [procs.python(f"actor{k}", "-m", "volley", "actor", "--env",
                           "gym_cartpole:make_env", "--broker", f"127.0.0.1:{port}", "--envs",
                           8, "--actor-id", k, "--seed", k, cwd=tmp_path) for k in (1, 2)]
    procs.wait_solved(port, actors)
    for a in actors:
        assert procs.stop(a, signal.SIGINT) == 0, procs.dump()
        assert "Traceback" not in procs.text(a), procs.dump()


def ended_state(obs):
    """CartPole-v1 terminates when |x| > 2.4 or |theta| > 12 degrees."""
    return abs(obs[0]) > 2.4 or abs(obs[2]) > 12 * 2 * np.pi / 360


def test_same_step_vector_env(procs, monkeypatch):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 4)
    seen, real = [], volley.Actor.observe

    def observe(self, rewards, terminated, truncated, next_obs, final_obs=None):
        seen.append((np.array(terminated, bool), np.array(truncated, bool),
                     np.array(next_obs, np.float32), np.array(final_obs, np.float32)))
        return real(self, rewards, terminated, truncated, next_obs, final_obs)
    monkeypatch.setattr(volley.Actor, "observe", observe)
    venv = gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    steps = 4 * 16 * 20
    assert volley.run_actor(venv, broker=f"127.0.0.1:{port}", horizon=16,
                            max_steps=steps) == steps
    ends = 0
    for term, trunc, nxt, final in seen:
        for k in np.flatnonzero(term | trunc):
            ends += 1
            assert not term[k] or ended_state(final[k]), final[k]
            assert np.all(np.abs(nxt[k]) <= 0.05), f"not a reset observation: {nxt[k]}"
        for k in np.flatnonzero(~(term | trunc)):
            assert not ended_state(nxt[k]), nxt[k]
    assert ends > 10, "CartPole episodes under an untrained policy end within tens of steps"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and int(top_kind(port, "learner").get("env_steps", 0)) == 0:
        time.sleep(0.5)
    assert int(top_kind(port, "learner").get("env_steps", 0)) > 0, procs.dump()


def test_next_step_vector_env_is_refused(procs):
    port = free_port()
    procs.broker(port)
    venv = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="autoreset mode NEXT_STEP.*SAME_STEP"):
        volley.run_actor(venv, broker=f"127.0.0.1:{port}", horizon=8, max_steps=64)
