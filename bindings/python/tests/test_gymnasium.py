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


def test_gymnasium_action_spaces_are_read_and_acted_in():
    """Gymnasium's own Discrete (with start), MultiDiscrete (with start) and Box become
    volley's spaces, and what volley hands an env for each is in the space by
    Gymnasium's own contains(): an int, an int64 array, a float32 array clipped."""
    from gymnasium import spaces
    obs = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
    cases = [
        (spaces.Discrete(4, start=2), "discrete(4)"),
        (spaces.MultiDiscrete([3, 2], start=[1, -1]), "multi_discrete(3,2)"),
        (spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 0.5], np.float32)),
         "box(2)[-2..2,0..0.5]"),
    ]
    rng = np.random.default_rng(0)
    for space, text in cases:
        a = volley.spec_from_spaces(obs, space).action
        assert str(a) == text
        # raw actions as the policy draws them: whole choices from 0, or a Gaussian's values
        if a.is_box:
            raw = rng.standard_normal((200, a.dims)) * 3
        else:
            raw = np.stack([rng.integers(0, k, 200) for k in a.n], 1)
        for row in raw.astype(np.float32):
            assert space.contains(a.to_env_one(row)), (space, row, a.to_env_one(row))
        batch = a.to_env(raw.astype(np.float32))
        assert len(batch) == 200 and all(space.contains(x) for x in batch)
    with pytest.raises(ValueError, match="finite float32 bounds"):
        volley.spec_from_spaces(obs, spaces.Box(-np.inf, np.inf, shape=(2,)))
    with pytest.raises(ValueError, match=r"Box of shape \[2, 2\]"):
        volley.spec_from_spaces(obs, spaces.Box(-1, 1, shape=(2, 2)))


def test_pendulum_vector_env_acts_with_box_actions(procs):
    """Gymnasium's Pendulum-v1 (a Box torque in [-2, 2]) as a SAME_STEP vector env:
    the C learner takes its box spec and the actor's segments."""
    port = free_port()
    procs.broker(port)
    learner = procs.learner(port, "--batch", 4)
    venv = gym.make_vec("Pendulum-v1", num_envs=4, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    torques = []
    real_step = venv.step

    def step(actions):
        torques.append(np.array(actions))
        return real_step(actions)
    venv.step = step
    steps = 4 * 16 * 8
    assert volley.run_actor(venv, broker=f"127.0.0.1:{port}", horizon=16,
                            max_steps=steps) == steps
    t = np.concatenate(torques)
    assert t.dtype == np.float32 and t.shape == (steps, 1)
    assert t.min() >= -2 and t.max() <= 2 and t.std() > 0.5
    assert procs.wait_for(learner, "box(1)[-2..2]", 10), procs.dump()
