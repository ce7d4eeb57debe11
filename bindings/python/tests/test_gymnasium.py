"""The Python actor on Gymnasium's own code (from PyPI, in the checkout's .venv):
CartPole-v1 made by gymnasium.make trains to solved through `python -m volley actor`;
its vector envs work as they come, in each autoreset mode (SAME_STEP, 1.x's default
NEXT_STEP and DISABLED; sync and async): each ended episode's final observation is a
real end of CartPole and the next observation a fresh reset, and on a deterministic
counting env the steps recorded are exactly those of a list of single envs, none of
them a NEXT_STEP reset step; a C broker and learner take the segments."""
import signal
import time

import numpy as np
import pytest

import volley
from actor_envs import Counter
from conftest import need
from procs import free_port, top_kind
from test_actor_autoreset import N, STEPS, T, check, record

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


MODES = ["SAME_STEP", "NEXT_STEP", "DISABLED"]


def make_vec(env_id, num_envs, mode):
    """gym.make_vec as a user writes it: NEXT_STEP is the default, so not named."""
    kw = {} if mode == "NEXT_STEP" else {
        "vector_kwargs": {"autoreset_mode": gym.vector.AutoresetMode[mode]}}
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", **kw)


@pytest.mark.parametrize("mode", MODES)
def test_cartpole_vector_env_in_each_autoreset_mode(procs, monkeypatch, mode):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 4)
    seen, real = [], volley.Actor.observe

    def observe(self, rewards, terminated, truncated, next_obs, final_obs=None):
        seen.append((np.array(terminated, bool), np.array(truncated, bool),
                     np.array(next_obs, np.float32), np.array(final_obs, np.float32),
                     np.array(rewards, np.float64)))
        return real(self, rewards, terminated, truncated, next_obs, final_obs)
    monkeypatch.setattr(volley.Actor, "observe", observe)
    venv = make_vec("CartPole-v1", 4, mode)
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode[mode]
    steps = 4 * 16 * 20
    assert volley.run_actor(venv, broker=f"127.0.0.1:{port}", horizon=16,
                            max_steps=steps) == steps
    ends = 0
    for term, trunc, nxt, final, rew in seen:
        assert np.all(rew == 1.0), "a CartPole step pays 1 (a NEXT_STEP reset step pays 0)"
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


class GymCounter(gym.Env):
    """actor_envs.Counter as a Gymnasium env, for Gymnasium's own vector envs."""

    def __init__(self, k):
        self.counter = Counter(k)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.counter.reset()

    def step(self, action):
        return self.counter.step(action)


def test_gymnasium_vector_envs_record_a_list_of_envs_steps(procs, monkeypatch):
    """SyncVectorEnv and AsyncVectorEnv of Counters in each autoreset mode
    record exactly the steps a list of the same envs does."""
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 3)
    want = record(monkeypatch, port, [lambda k=k: Counter(k) for k in range(N)])
    assert check(want) > 5
    fns = [lambda k=k: GymCounter(k) for k in range(N)]
    for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
        for mode in MODES:
            venv = cls(fns, autoreset_mode=gym.vector.AutoresetMode[mode])
            try:
                got = record(monkeypatch, port, venv)
            finally:
                venv.close()
            for a, b in zip(want, got):
                for x, y in zip(a, b):
                    assert np.array_equal(x, y), (cls.__name__, mode, x, y)


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
