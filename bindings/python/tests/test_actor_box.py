"""Python envs acting in a Box and a MultiDiscrete space through `python3 -m volley
actor` and volley.run_actor, with the C broker and the C learner (which takes the
actors' spec, action space included): a 1-D move-to-target task (Box [-1, 1]
velocities) trains well past the return of the policy it starts from within a budget
of env steps, and the run evaluates (`volley eval RUN`, Python playing the C policy) and
exports to a PyTorch module that computes what the C policy computes, observation
normalisation included; a MultiDiscrete env gets int64 arrays within its choices at
every step; a Python policy_fn's NaN or out-of-space action is refused naming the env
and the value."""
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import volley
from action_envs import Buttons, MoveToTarget, random_return
from procs import REPO, VOLLEY, free_port, top_kind

BOX_ENV = "action_envs:make_move_to_target"
STEP_BUDGET = 150_000  # env steps the training run may take (measured: about 22k)
HANG_S = 120  # only ends a run that hangs (a run takes seconds)
GAIN = 0.75  # of the way from the starting policy's return to the best one's (about -1)
TESTS = Path(__file__).resolve().parent
PYTHONPATH = f"{TESTS}:{REPO / 'bindings' / 'python'}"


def _volley(*args, cwd):
    return subprocess.run([VOLLEY, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=PYTHONPATH), timeout=120)


def _mean(out):
    last = out.strip().splitlines()[-1]
    assert last.startswith("return "), out
    return float(last.split()[1])


def test_the_starting_policy_is_the_one_random_return_plays():
    # volley's initial box policy: means near 0 (the head's 0.01 gain), std exp(0) = 1
    env = MoveToTarget()
    model = volley.Model("mlp", volley.spec_from_spaces(env.observation_space,
                                                        env.action_space), seed=1)
    assert model.action == volley.ActionSpace.box([-1], [1])
    assert (model.tensors()["pi.logstd"] == 0).all()
    rng = np.random.default_rng(0)
    means, _ = model.forward(rng.uniform(-1, 1, (256, 2)).astype(np.float32))
    assert np.abs(means).max() < 0.1


def test_python_box_env_trains_with_the_c_learner(procs, tmp_path):
    base = random_return()
    target = base + GAIN * (-1.0 - base)
    port = free_port()
    procs.broker(port)
    run = tmp_path / "run"
    learner = procs.learner(port, "--batch", 8, "--run-dir", run)
    actor = procs.python("actor", "-m", "volley", "actor", "--env", BOX_ENV, "--broker",
                         f"127.0.0.1:{port}", "--envs", 8, "--horizon", 32,
                         env={"PYTHONPATH": PYTHONPATH})
    stats, start, first = {}, time.monotonic(), None
    while int(stats.get("env_steps", 0)) <= STEP_BUDGET:
        assert time.monotonic() - start < HANG_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(1)
        assert actor.poll() is None and learner.poll() is None, procs.dump()
        stats = top_kind(port, "learner")
        if int(stats.get("window", 0)) >= 100:
            ret = float(stats["mean_return"])
            first = ret if first is None else first
            if ret >= target:
                break
    print(f"starting policy {base:.2f}, first window {first}, target {target:.2f}, "
          f"reached {stats.get('mean_return')} in {time.monotonic() - start:.0f} s, "
          f"{stats.get('env_steps')} steps")
    assert "box(1)[-1..1]" in procs.text(learner), procs.dump()
    assert int(stats.get("window", 0)) >= 100 and float(stats["mean_return"]) >= target, \
        f"not trained within {STEP_BUDGET} env steps: {stats}\n{procs.dump()}"
    assert "Traceback" not in procs.text(actor), procs.dump()
    assert procs.stop(actor) == 0 and procs.stop(learner) == 0, procs.dump()
    _eval_and_export(run, tmp_path, target)


def _eval_and_export(run, tmp_path, target):
    """The kept run plays as well in `volley eval` (greedy: the mean) and exports
    to a module whose outputs are the C policy's on the same observations."""
    r = _volley("eval", run, "--episodes", 48, "--greedy", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"eval: {BOX_ENV}" in r.stdout and "box(1)[-1..1]" in r.stdout, r.stdout
    assert _mean(r.stdout) >= target, r.stdout
    r = _volley("export", run, "--to", tmp_path / "p.safetensors", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    spec = json.loads((tmp_path / "p.json").read_text())
    arch = spec["architecture"]
    assert arch["action_space"] == {"kind": "box", "dims": 1, "low": [-1], "high": [1]}, arch
    assert arch["obs_norm"] is True, arch  # the C learner normalises a box policy's obs
    torch = pytest.importorskip("torch")
    from volley.evaluate import Kept
    module = volley.load_torch_policy(tmp_path / "p.safetensors")
    assert module.norm and module.action == volley.ActionSpace.box([-1], [1])
    kept = Kept(run)
    obs = np.random.default_rng(3).uniform(-1, 1, (64, 2)).astype(np.float32)
    with torch.no_grad():
        mine = module(torch.from_numpy(obs))[0].numpy()
    theirs = kept.logits(obs)
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(kept.logstd, module.logstd.detach().numpy())
    module.set_norm(False)  # ... and it is the statistics that make them agree
    with torch.no_grad():
        assert not np.allclose(module(torch.from_numpy(obs))[0].numpy(), theirs, atol=1e-3)


def test_multidiscrete_env_gets_int_arrays_in_range(procs, tmp_path):
    port = free_port()
    procs.broker(port)
    run = tmp_path / "run"
    learner = procs.learner(port, "--batch", 4, "--run-dir", run)
    envs = [Buttons() for _ in range(4)]
    steps = volley.run_actor(envs, broker=f"127.0.0.1:{port}", horizon=16, max_steps=4 * 16 * 6)
    assert steps == 4 * 16 * 6
    seen = np.array([a for e in envs for a in e.seen])
    assert seen.shape == (steps, 2) and seen.dtype == np.int64
    # every choice of each button came up (the env itself refused anything out of range)
    assert set(seen[:, 0]) == {0, 1, 2} and set(seen[:, 1]) == {0, 1}
    for _ in range(20):  # the C learner trains on it (its stats come 4 times a second)
        stats = top_kind(port, "learner")
        if int(stats.get("version", 0)) >= 1:
            break
        time.sleep(0.25)
    assert int(stats.get("version", 0)) >= 1, (stats, procs.dump())
    assert procs.stop(learner) == 0, procs.dump()
    # the kept policy plays the env in Python: each button's choice drawn from its logits
    r = _volley("eval", run, "--env", "action_envs:make_buttons", "--episodes", 4, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "actions multi_discrete(3,2)" in r.stdout and "4 episodes" in r.stdout, r.stdout
    assert 0 <= _mean(r.stdout) <= 16, r.stdout


@pytest.mark.parametrize("make,actions,words", [
    (Buttons, [[0, 1], [3, 0]], r"env 'Buttons': policy_fn's actions\[1\]\[0\] = 3, must be 0..2"),
    (Buttons, [[0, 1], [1, 0.5]], r"actions\[1\]\[1\] = 0.5, must be a whole number 0..1"),
    (MoveToTarget, [[np.nan], [0.0]], r"env 'MoveToTarget': policy_fn's actions\[0\] = nan, "
                                      r"must be finite"),
])
def test_external_actions_outside_the_space_are_refused(procs, make, actions, words):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 4)
    with volley.Actor(broker=f"127.0.0.1:{port}", spec=make(), num_envs=2, horizon=8,
                      policy_fn=lambda o, w: (actions, [-1.0, -1.0])) as actor:
        with pytest.raises(ValueError, match=words):
            actor.act(np.zeros((2, actor.spec.obs_dim)))
        assert actor.steps == 0
