"""volley.Actor against a real broker and C learner: a Dict spec (uint8,
MultiBinary, bounded float32) declared to the broker and taken by a learner
that has no env code; every kind of bad input refused with a reason before
anything is recorded; an external forward pass (policy_fn) fed the C
learner's weights as arrays; an env that raises ends the actor with its
traceback and exit 1 while what it sent stays intact."""
import time

import numpy as np
import pytest

import volley
from actor_envs import Dict, MultiBinary, dict_spaces
from procs import free_port, top_kind
from volley.envs.cartpole import Box, CartPoleEnv, Discrete



def start(procs):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 4)
    return port


def test_unsupported_spaces_are_named():
    with pytest.raises(ValueError, match=r"dtype int64"):
        volley.spec_from_spaces(Box(0, 9, shape=(3,), dtype=np.int64), Discrete(2))
    with pytest.raises(ValueError, match=r"Tuple"):
        volley.spec_from_spaces(type("Tuple", (), {})(), Discrete(2))
    with pytest.raises(ValueError, match=r"action space \(Box of shape \[2, 2\]\)"):
        volley.spec_from_spaces(Box(0, 1, shape=(2,)), Box(0, 1, shape=(2, 2)))
    with pytest.raises(ValueError, match=r"box dimension 1: bounds \[-inf, inf\]"):
        volley.spec_from_spaces(Box(0, 1, shape=(2,)), Box(np.array([0, -np.inf]),
                                                           np.array([1, np.inf])))
    with pytest.raises(ValueError, match=r"field 'x'.*Discrete"):
        volley.spec_from_spaces(Dict({"x": Discrete(4)}), Discrete(2))
    s = volley.spec_from_spaces(*dict_spaces())
    assert [(f[0], f[1], f[2]) for f in s.fields] == [("image", 1, (2, 3)), ("flags", 3, (5,)),
                                                     ("pos", 0, (2,))]
    assert s.obs_dim == 13 and s.num_actions == 3


def test_dict_spec_reaches_the_learner_and_bad_input_is_refused(procs):
    port = start(procs)
    N, T = 3, 4
    with volley.Actor(broker=f"127.0.0.1:{port}", spec=dict_spaces(), num_envs=N, horizon=T,
                      actor_id=7) as actor:
        rng = np.random.default_rng(0)

        def obs():
            return {"image": rng.integers(0, 256, (N, 2, 3)).astype(np.uint8),
                    "flags": rng.integers(0, 2, (N, 5)), "pos": rng.uniform(-1, 1, (N, 2))}
        good = actor.spec.flatten_batch(obs())
        # Refused before any weights are needed: nothing is recorded.
        for bad, match in ((good[:2], "obs: shape"),
                           (np.where(np.arange(13) == 0, 256.0, good), r"obs\[0\]\[0\] = 256.*u8"),
                           (np.where(np.arange(13) == 7, 0.5, good), r"obs\[0\]\[7\] = 0.5.*u1"),
                           (np.where(np.arange(13) == 12, 1.5, good), r"obs\[0\]\[12\] = 1.5.*'pos'.*range \["),
                           (np.where(np.arange(13) == 11, np.nan, good), r"obs\[0\]\[11\] = nan")):
            with pytest.raises(ValueError, match=match):
                actor.act(bad)
        with pytest.raises(ValueError, match="observe without act"):
            actor.observe(np.zeros(N), np.zeros(N), np.zeros(N), good)
        a = actor.act(obs())  # waits for the learner's first weights
        assert a.shape == (N,) and a.min() >= 0 and a.max() < 3
        with pytest.raises(ValueError, match="act twice"):
            actor.act(good)
        z = np.zeros(N)
        for args, match in (((np.array([0, np.nan, 0]), z, z, good), r"rewards\[1\] = nan"),
                            ((z, np.array([0, 2, 0]), z, good), r"terminated\[1\] = 2"),
                            ((z, z, np.array([0, 0, 1]), good), r"final_obs: env 2 was truncated"),
                            ((z, z, z, good[:, :5]), "next_obs: shape")):
            with pytest.raises(ValueError, match=match):
                actor.observe(*args)
        with pytest.raises(ValueError, match=r"env 2: final_obs\[0\]\[12\] = 9"):
            actor.observe(z, z, np.array([0, 0, 1]), good,
                          final_obs=np.where(np.arange(13) == 12, 9.0, good))
        actor.observe(z + 1, z, np.array([0, 0, 1]), good, final_obs=good)
        for _ in range(4 * T - 1):
            actor.act(good)
            actor.observe(z + 1, np.array([1, 0, 0]), z, good)
        assert actor.segments_sent == 4 * N
    learner = procs.text(procs.procs[1])
    assert "obs u8[2x3] u1[5] f32[2] actions discrete(3) horizon 4" in learner, learner
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and int(top_kind(port, "broker").get("routed", 0)) < 4 * N:
        time.sleep(0.2)
    b = top_kind(port, "broker")
    assert int(b["routed"]) == 4 * N and int(b["dropped"]) == 0, (b, procs.dump())


def test_external_policy_gets_the_learners_weights(procs):
    port = start(procs)
    seen = []

    def policy_fn(obs, weights):
        seen.append((obs.shape, obs.dtype, weights.version,
                     {k: v.shape for k, v in weights.items()}))
        return np.arange(len(obs)) % 2, np.full(len(obs), np.log(0.5))
    env = CartPoleEnv()
    steps = volley.run_actor([CartPoleEnv for _ in range(4)], broker=f"127.0.0.1:{port}",
                             policy_fn=policy_fn, horizon=8, max_steps=4 * 8 * 3)
    assert steps == 96
    shape, dtype, version, tensors = seen[-1]
    assert shape == (4, 4) and dtype == np.float32
    assert len(tensors) >= 4 and any(len(s) == 2 and s[1] == 4 for s in tensors.values()), tensors
    with volley.Actor(broker=f"127.0.0.1:{port}", spec=env, num_envs=2, horizon=8,
                      policy_fn=lambda o, w: ([0, 5], [0.0, 0.0])) as actor:
        with pytest.raises(ValueError, match=r"actions\[1\] = 5, must be 0..1"):
            actor.act(np.zeros((2, 4)))


def test_env_that_raises_exits_1_with_its_traceback(procs):
    port = start(procs)
    a = procs.python("actor", "-m", "volley", "actor", "--env", "actor_envs:make_raises",
                     "--broker", f"127.0.0.1:{port}", "--envs", 2, "--horizon", 16,
                     env={"PYTHONPATH": f"{procs.tmp}:{__file__.rsplit('/', 1)[0]}:"
                          f"{__file__.rsplit('/', 2)[0]}"})
    assert a.wait(30) == 1, procs.dump()
    log = procs.text(a)
    assert "Traceback" in log and "RuntimeError: the emulator crashed" in log, log
    b = top_kind(port, "broker")
    assert int(b["received"]) >= 2 * 9 and int(b["dropped"]) == 0, (b, procs.dump())
