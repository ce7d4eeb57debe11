"""A recurrent policy trained by the C engine (`volley up --env memory --model
"linear(32) lstm(32)"`, a short run) and exported: load_torch_policy makes it a
recurrent module (its core the export's, its observation statistics the
weights'), whose one-step forward from the zero state is the C policy's
(volley.policy_forward on the checkpoint), and which, carrying a state per env
and zeroing it at each episode's start, plays memory_envs.Recall (the built-in
memory env's twin in Python) as trained: a mean return >= 0.9, where the same
weights without their state score chance. An export whose core and model
disagree is refused."""
import json
import subprocess

import numpy as np
import pytest

from conftest import need
from procs import VOLLEY

import volley
from memory_envs import Recall

torch = need("torch")

MODEL = "linear(32) lstm(32)"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(checkpoint, export) of a memory run trained until solved (about 60k steps)."""
    d = tmp_path_factory.mktemp("lstm")
    argv = [VOLLEY, "up", "--env", "memory", "--model", MODEL, "--actors", 1, "--envs", 8,
            "--max-steps", 400000, "--runs", d / "runs", "--name", "m"]
    r = subprocess.run([str(a) for a in argv], cwd=d, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0 and "solved:" in r.stdout, r.stdout + r.stderr
    ckpt = d / "runs" / "m" / "checkpoints" / "default.ckpt"
    out = d / "m.safetensors"
    r = subprocess.run([VOLLEY, "export", str(d / "runs" / "m"), "--to", str(out)], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return ckpt, out


def play(policy, episodes, carry, n=8, seed=0):
    """Mean return of policy (greedy) over episodes of n Recall envs; carry: the
    state carried from step to step (zeroed at each episode's start), else zeroed
    before every step."""
    envs = [Recall() for _ in range(n)]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)])
    first = np.ones(n, bool)
    policy.reset_state()
    returns, ret = [], np.zeros(n)
    while len(returns) < episodes:
        a = policy.act(obs, greedy=True, first=first if carry else np.ones(n, bool))
        for i, env in enumerate(envs):
            o, r, term, trunc, _ = env.step(int(a[i]))
            ret[i] += r
            first[i] = term or trunc
            if first[i]:
                returns.append(ret[i])
                ret[i] = 0
                o, _ = env.reset()
            obs[i] = o
    return float(np.mean(returns))


def test_the_export_loads_as_a_recurrent_module(exported):
    ckpt, out = exported
    spec = volley.load_export_spec(out)
    assert spec["architecture"]["core"]["kind"] == "lstm"
    assert spec["architecture"]["core"]["hidden"] == 32
    policy = volley.load_torch_policy(out)
    assert policy.hidden == 32 and policy.state_size == 64 and policy.norm
    assert policy.spec_text == MODEL and not policy.training
    weights = volley.load_safetensors(out)
    for k, v in volley.torch.numpy_weights(policy).items():
        assert np.array_equal(v, weights[k]), k


def test_one_step_from_zero_is_the_c_policys(exported):
    ckpt, out = exported
    policy = volley.load_torch_policy(out)
    obs = np.eye(4, dtype=np.float32)[np.random.default_rng(0).integers(0, 4, 16)]
    logp, values = volley.policy_forward(ckpt, obs, 2)
    with torch.no_grad():
        z, v = policy(torch.from_numpy(obs))
    np.testing.assert_allclose(torch.log_softmax(z, -1).numpy(), logp, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(v.numpy(), values, rtol=1e-4, atol=1e-5)


def test_carrying_the_state_per_env_plays_as_trained(exported):
    policy = volley.load_torch_policy(exported[1])
    with_state = play(policy, 200, carry=True)
    without = play(policy, 200, carry=False)
    print(f"memory twin, 200 greedy episodes: mean return {with_state:.2f} carrying the "
          f"state, {without:.2f} without")
    assert with_state >= 0.9
    assert abs(without) <= 0.5  # the query is answered blind: chance


def _export_with(tmp_path, out, **arch):
    spec = volley.load_export_spec(out)
    spec["architecture"].update(arch)
    dst = tmp_path / "x.safetensors"
    raw = out.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header["__metadata__"]["volley"] = json.dumps(spec)  # the header's spec is the one read
    text = json.dumps(header).encode()
    dst.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + n:])
    return dst


@pytest.mark.parametrize("core,why", [(None, "its core says none"),
                                      ({"kind": "lstm", "hidden": 16}, "lstm\\(16\\)"),
                                      ({"kind": "gru", "hidden": 32}, "is not"),
                                      ({"kind": "lstm", "hidden": "32"}, "is not"),
                                      ([1, 2], "is not")])
def test_a_core_that_is_not_the_models_is_refused(exported, tmp_path, core, why):
    bad = _export_with(tmp_path, exported[1], core=core)
    with pytest.raises(ValueError, match=why):
        volley.load_torch_policy(bad)

