"""volley.Learner (include/volley/learner.h) against real processes: a real
broker and unmodified C actors (`volley actor`) over loopback sockets."""
import math
import os
import re
import subprocess
import time

import numpy as np
import pytest

import volley
from procs import VOLLEY

D, A, H, T = 4, 2, 64, 64  # CartPole at the actors' defaults
CORRIDOR = os.path.join(os.path.dirname(VOLLEY), "libvl_corridor.so")  # envs/plugins/


def mlp_weights(pi_out_bias=(0.0, 0.0), D=D, A=A):
    """volley's MLP as NumPy arrays (CartPole's unless told): all-zero
    weights, so the policy's logits are pi.2.bias and nothing else."""
    w = {}
    pi_out_bias = np.resize(np.asarray(pi_out_bias, np.float32), A)
    for net, out in (("pi", A), ("v", 1)):
        for i, (rows, cols) in enumerate(((H, D), (H, H), (out, H))):
            w[f"{net}.{i}.weight"] = np.zeros((rows, cols), np.float32)
            w[f"{net}.{i}.bias"] = np.zeros(rows, np.float32)
    w["pi.2.bias"] = np.asarray(pi_out_bias, np.float32)
    return w


def start(procs, actor_ids=(3, 5), envs=4, args=()):
    from procs import free_port
    port = free_port()
    procs.broker(port)
    for i in actor_ids:
        procs.volley(f"actor{i}", "actor", "--broker", f"127.0.0.1:{port}", "--id", i,
                     "--envs", envs, *args)
    return f"127.0.0.1:{port}"


def take(learner, n, procs, want=None, tries=40, unpack=True):
    """A batch of n (where want(batch) holds, if given), failing with every
    process's log if none comes."""
    for _ in range(tries):
        b = learner.take(n, timeout=1.0, unpack=unpack)
        if b is not None and (want is None or want(b)):
            return b
    pytest.fail("no batch came\n" + procs.dump())


def test_segments_from_c_actors_have_the_wire_structure(procs):
    broker = start(procs)
    with volley.Learner(broker, capacity=32, timeout=30) as learner:
        assert learner.spec == {"fields": [((D,), "f32")], "obs_dim": D, "num_actions": A,
                                "action": volley.ActionSpace.discrete(A),
                                "horizon": T, "hidden": H, "row_bytes": 4 * D,
                                "model": f"linear({H}) tanh linear({H}) tanh"}
        learner.publish(mlp_weights(), 0)  # C actors wait for a first version
        b = take(learner, 8, procs)
        n = len(b)
        assert n == 8
        shapes = {"obs": (n, T + 1, D), "actions": (n, T, 1), "rewards": (n, T), "dones": (n, T),
                  "truncated": (n, T), "logp": (n, T), "final_obs": (n, T, D),
                  "policy_version": (n,), "actor_id": (n,), "env_id": (n,), "seq": (n,),
                  "n_episodes": (n,)}
        dtypes = {"obs": np.float32, "actions": np.float32, "rewards": np.float32,
                  "dones": np.float32, "truncated": np.uint8, "logp": np.float32,
                  "final_obs": np.float32, "policy_version": np.uint64, "actor_id": np.uint32,
                  "env_id": np.uint32, "seq": np.uint64, "n_episodes": np.uint32}
        for name, shape in shapes.items():
            assert b[name].shape == shape and b[name].dtype == dtypes[name], name
            assert b[name].flags.c_contiguous and b[name].flags.owndata, name
        assert set(b.actor_id) <= {3, 5}
        assert (b.policy_version == 0).all()
        assert ((b.actions >= 0) & (b.actions < A) & (b.actions == np.round(b.actions))).all()
        assert np.isfinite(b.obs).all() and (b.obs != 0).any()
        assert (b.rewards == 1.0).all()  # CartPole: 1 a step
        assert set(np.unique(b.dones)) <= {0.0, 1.0}
        assert (b.truncated <= b.dones).all()  # a time limit's end is an end
        assert (b.final_obs[b.truncated == 0] == 0).all()
        # 50/50 actions from zero logits: log(1/2) every step
        np.testing.assert_allclose(b.logp, math.log(0.5), atol=1e-5)
        # every end in a segment is one finished episode; CartPole's return is its length
        assert (b.n_episodes == b.dones.sum(1)).all()
        assert len(b.episode_returns) == len(b.episode_lengths) == b.n_episodes.sum() > 0
        np.testing.assert_array_equal(b.episode_returns, b.episode_lengths.astype(np.float32))
        c = learner.counters
        assert c["accepted"] >= 8 and c["refused"] == 0 and c["refusals"] == {}
        assert c["env_steps"] == T * c["accepted"]


def test_packed_fields_unpacked_or_as_rows(procs):
    # catch: a 16x16 2-bit screen and 32 1-bit flags packed on the wire, and 2 floats
    broker = start(procs, actor_ids=(4,), envs=2, args=("--env", "catch"))
    with volley.Learner(broker, capacity=8, timeout=30) as learner:
        spec = learner.spec
        assert spec["fields"] == [((16, 16), "u2"), ((32,), "u1"), ((2,), "f32")]
        assert spec["obs_dim"] == 290
        assert spec["row_bytes"] == 256 + 32 + 2 * 4  # packed values one byte each
        Dc, Ac = spec["obs_dim"], spec["num_actions"]
        learner.publish(mlp_weights(D=Dc, A=Ac), 0)
        b = take(learner, 2, procs)
        assert b.obs.shape == (2, T + 1, Dc) and b.obs.dtype == np.float32
        assert set(np.unique(b.obs[..., :256])) <= {0, 1, 2, 3}
        assert set(np.unique(b.obs[..., 256:288])) <= {0, 1} and b.obs.any()
        r = take(learner, 2, procs, unpack=False)
        assert not hasattr(r, "obs")
        assert r.obs_rows.shape == (2, T + 1, 296) and r.obs_rows.dtype == np.uint8
        assert r.obs_rows[..., :256].max() <= 3 and r.obs_rows[..., 256:288].max() <= 1
        assert np.isfinite(r.obs_rows[..., 288:].copy().view(np.float32)).all()


def test_truncated_steps_carry_their_final_observation(procs):
    # corridor (8 cells, one-hot) with a 5-step time limit; weights that always
    # move left never reach the goal, so every episode is truncated after 5 steps
    broker = start(procs, actor_ids=(6,), envs=2,
                   args=("--env", CORRIDOR, "--env-arg", "5"))
    with volley.Learner(broker, capacity=8, timeout=30) as learner:
        assert learner.spec["obs_dim"] == 8
        learner.publish(mlp_weights((20.0, -20.0), D=8), 1)
        b = take(learner, 2, procs)
        cut = b.truncated.astype(bool)
        assert cut.sum() >= 2 * (T // 5) - 2 and (b.dones[cut] == 1).all()
        assert (b.dones == b.truncated).all()  # no episode terminated
        assert (b.final_obs[~cut] == 0).all()
        fin = b.final_obs[cut]
        assert (fin.sum(-1) == 1).all()  # one-hot: a real observation at each cut step
        before = b.obs[:, :T][cut].argmax(-1)  # the cell the last step started from
        np.testing.assert_array_equal(fin.argmax(-1), np.maximum(before - 1, 0))
        assert (b.actions == 0).all()
        np.testing.assert_array_equal(b.episode_lengths, np.full(len(b.episode_lengths), 5))


def test_partial_take_after_the_timeout(procs):
    # an actor that waits (up to a minute) for new weights after each round of
    # 2 segments: a batch of 4 never fills; partial=True takes the 2 after the timeout
    broker = start(procs, actor_ids=(2,), envs=2, args=("--wait-ms", 60000))
    with volley.Learner(broker, capacity=8, timeout=30) as learner:
        learner.publish(mlp_weights(), 0)
        b = take(learner, 2, procs)  # the first round: both segments
        learner.publish(mlp_weights(), 1)
        deadline = time.monotonic() + 60  # the round comes at once; this only ends a hang
        while learner.counters["waiting"] != 2:
            assert time.monotonic() < deadline, f"hung: {learner.counters}\n{procs.dump()}"
            time.sleep(0.1)
        assert learner.take(4, timeout=0.3) is None
        b = learner.take(4, timeout=0.3, partial=True)
        assert b is not None and len(b) == 2 and (b.policy_version == 1).all()
        assert learner.take(1, timeout=0) is None  # nothing waits: at once, no batch


def test_published_weights_reach_c_actors_and_act(procs):
    broker = start(procs, actor_ids=(3,), envs=4)
    with volley.Learner(broker, capacity=16, timeout=30) as learner:
        learner.publish(mlp_weights(), 0)
        take(learner, 4, procs)
        # logits +20/-20: an actor that loaded version 7 picks action 0 every step
        learner.publish(mlp_weights((20.0, -20.0)), 7)
        b = take(learner, 4, procs, want=lambda x: (x.policy_version == 7).any())
        b = b.select(b.policy_version == 7)
        assert (b.actions == 0).all()
        np.testing.assert_allclose(b.logp, 0.0, atol=1e-6)
        # a torch-style state_dict (anything with .detach()) is taken as well
        flip = {k: _Detachable(v) for k, v in mlp_weights((-20.0, 20.0)).items()}
        learner.publish(flip, 8)
        b = take(learner, 4, procs, want=lambda x: (x.policy_version == 8).any())
        assert (b.select(b.policy_version == 8).actions == 1).all()
        # progress reports reach the broker: `volley top` shows them beside the actor's version
        for _ in range(50):
            learner.publish_stats(8, trained=12, policy_loss=0.25, value_loss=0.5, entropy=0.125)
            kv = top_kv(broker)
            if "kind=learner" in kv and " version=8 " in kv and "weights_version=8" in kv:
                break
            time.sleep(0.1)
        line = next((x for x in kv.splitlines() if "kind=learner" in x), "")
        assert " version=8 " in line and "segments_trained=12" in line, kv + procs.dump()
        assert "policy_loss=0.25" in line and "entropy=0.125" in line
        assert "weights_version=8" in kv


def top_kv(broker):
    """`volley top --once --kv`'s lines."""
    out = subprocess.run([VOLLEY, "top", "--broker", broker, "--once", "--kv"],
                         capture_output=True, text=True, timeout=30)
    return out.stdout


class _Detachable:
    """Stands in for a torch tensor: detach().cpu().numpy()."""

    def __init__(self, a):
        self.a = a

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.a


def test_bad_publications_are_refused_with_the_reason(procs):
    from procs import free_port
    port = free_port()
    procs.broker(port)
    spec = {"obs_dim": D, "num_actions": A, "horizon": T, "hidden": H}
    with volley.Learner(f"127.0.0.1:{port}", spec=spec, capacity=8, timeout=30) as learner:
        assert learner.spec["obs_dim"] == D and learner.spec["horizon"] == T
        good = mlp_weights()
        learner.publish(good, 3)
        cases = {
            "no tensor pi.0.weight": {k: v for k, v in good.items() if k != "pi.0.weight"},
            "their pi.0.weight is [64, 5], this network's [64, 4]":
                {**good, "pi.0.weight": np.zeros((H, D + 1), np.float32)},
            "their pi.0.weight is [64, 4, 1], this network's [64, 4]":
                {**good, "pi.0.weight": np.zeros((H, D, 1), np.float32)},
            "pi.1.bias: value 2 is nan":
                {**good, "pi.1.bias": np.r_[0, 0, np.nan, np.zeros(H - 3)]},
            "v.0.weight: value 0 is inf": {**good, "v.0.weight": np.full((H, D), np.inf)},
            "rank 5": {**good, "pi.0.weight": np.zeros((H, D, 1, 1, 1), np.float32)},
            "the others would be ignored": {**good, "extra": np.zeros(3, np.float32)},
            "expected 1 .. 31 printable bytes": {**good, "x" * 40: np.zeros(3, np.float32)},
        }
        for reason, weights in cases.items():
            with pytest.raises(ValueError, match=re.escape(reason)):
                learner.publish(weights, 4)
        with pytest.raises(ValueError, match="version 2: below 3"):
            learner.publish(good, 2)
        with pytest.raises(TypeError, match="mapping"):
            learner.publish([1, 2, 3], 4)
        # a model of one's own: any names, checked only as any receiver checks
        learner.publish({"trunk.weight": np.ones((8, D), np.float32)}, 4, check_policy=False)
        with pytest.raises(ValueError, match="nan"):
            learner.publish({"trunk.weight": np.full((8, D), np.nan)}, 5, check_policy=False)
        with pytest.raises(ValueError, match=r"n 5: expected 1 \.\. capacity // 2 \(4\)"):
            learner.take(5)
        assert learner.take(1, timeout=0.1) is None  # no actor: nothing comes
    with pytest.raises(ValueError, match="closed"):
        learner.take(1)


def test_a_spec_of_an_unbuildable_model_names_why(procs):
    from procs import free_port
    port = free_port()
    procs.broker(port)
    convs = "conv(2,1,1) " * 31  # 62 conv tensors + 4 heads: over a Weights message's 64
    spec = {"fields": [((1, 8, 8), "u8")], "num_actions": A, "horizon": T, "model": convs}
    with pytest.raises(Exception, match="model: the network has 66 tensors; a weights message "
                                        "carries at most 64"):
        volley.Learner(f"127.0.0.1:{port}", spec=spec, capacity=8, timeout=30)


READ_BACK = """
import json, sys, volley
from volley.envs.cartpole import CartPoleEnv
with volley.Actor(broker=sys.argv[1], spec=CartPoleEnv(), num_envs=1, actor_id=98,
                  policy_fn=lambda o, w: ([0], [0.0])) as actor:
    actor.sync()
    w = actor.weights()
    print(json.dumps({"version": w.version, "shapes": {k: list(v.shape) for k, v in w.items()},
                      "values": {k: v.ravel().tolist() for k, v in w.items()}}))
"""


def test_rank4_weights_reach_actors_with_every_dimension(procs):
    """A conv weight [32, 4, 8, 8] and a rank-3 tensor, published by a Python
    learner through a real broker, reach an external-mode actor in another
    process with their shapes and values (not flattened to [32, 256])."""
    import json
    from procs import free_port
    port = free_port()
    procs.broker(port)
    spec = {"obs_dim": D, "num_actions": A, "horizon": T, "hidden": H}
    rng = np.random.default_rng(4)
    sent = {"conv.0.0.weight": rng.standard_normal((32, 4, 8, 8)).astype(np.float32),
            "conv.0.0.bias": rng.standard_normal(32).astype(np.float32),
            "cube": rng.standard_normal((2, 3, 5)).astype(np.float32),
            "torso.0.weight": rng.standard_normal((16, 256)).astype(np.float32)}
    with volley.Learner(f"127.0.0.1:{port}", spec=spec, capacity=8, timeout=30) as learner:
        learner.publish(sent, 6, check_policy=False)
        probe = procs.python("probe", "-c", READ_BACK, f"127.0.0.1:{port}")
        for _ in range(300):  # the learner stays up (its connection holds the policy)
            if probe.poll() is not None:
                break
            time.sleep(0.1)
            learner.publish(sent, 6, check_policy=False)
        assert probe.wait(30) == 0, procs.dump()
    got = json.loads(next(x for x in procs.text(probe).splitlines() if x.startswith("{")))
    assert got["version"] == 6, got["version"]
    assert got["shapes"] == {k: list(v.shape) for k, v in sent.items()}, got["shapes"]
    for k, v in sent.items():
        np.testing.assert_array_equal(np.asarray(got["values"][k], np.float32), v.ravel())


def test_no_spec_in_time_names_why(procs):
    from procs import free_port
    port = free_port()
    procs.broker(port)
    with pytest.raises(volley.VolleyError, match="no actor has declared the policy's spec"):
        volley.Learner(f"127.0.0.1:{port}", policy="nobody", timeout=0.5)
    with pytest.raises(ValueError, match="spec field 0"):
        volley.Learner(f"127.0.0.1:{port}", spec={"fields": [((4,), "f16")], "num_actions": 2,
                                                  "horizon": 8}, timeout=0.5)


def test_a_declared_multi_discrete_spec_and_its_batches(procs):
    """A Python learner declares a multi-discrete policy; a Python actor of that
    space (Buttons: MultiDiscrete([3, 2])) sends segments whose actions arrive
    [n, T, 2] as whole numbers within each dimension's choices, with joint
    log-probs; the weights published must be that space's network (logits 3 + 2)."""
    from procs import free_port, REPO
    torch = pytest.importorskip("torch")
    import volley.torch as vt
    port = free_port()
    procs.broker(port)
    space = volley.ActionSpace.multi_discrete([3, 2])
    spec = {"obs_dim": 1, "action": space, "horizon": 16, "hidden": 16}
    tests = os.path.dirname(os.path.abspath(__file__))
    with volley.Learner(f"127.0.0.1:{port}", spec=spec, capacity=8, timeout=30) as learner:
        assert learner.spec["action"] == space and learner.spec["num_actions"] == 5
        net = vt.build("mlp(16)", 1, action=space, seed=1)
        with pytest.raises(ValueError, match=r"pi\.2\.weight"):
            learner.publish(vt.numpy_weights(vt.build("mlp(16)", 1, 3, seed=1)), 0)
        learner.publish(vt.numpy_weights(net), 0)
        procs.python("actor", "-m", "volley", "actor", "--env", "action_envs:make_buttons",
                     "--broker", f"127.0.0.1:{port}", "--envs", 2, "--horizon", 16,
                     "--hidden", 16, env={"PYTHONPATH": f"{tests}:{REPO / 'bindings' / 'python'}"})
        b = take(learner, 2, procs)
        assert b.actions.shape == (2, 16, 2) and b.actions.dtype == np.float32
        assert (b.actions == np.round(b.actions)).all() and (b.actions >= 0).all()
        assert (b.actions[..., 0] < 3).all() and (b.actions[..., 1] < 2).all()
        # the joint log-prob of each step is the sum of the two categoricals' of the
        # published network, at this observation
        with torch_no_grad():
            z = net(b.obs[:, :16].reshape(-1, 1))[0]
            want = net.dist(z).log_prob(torch.from_numpy(b.actions.reshape(-1, 2)))
        np.testing.assert_allclose(b.logp.reshape(-1), want.numpy(), atol=1e-5)


def torch_no_grad():
    import torch
    return torch.no_grad()
