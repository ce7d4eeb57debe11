"""volley.torch_learner.TorchLearner with unmodified C actors through a real
broker: it learns CartPole to a mean return >= 475 over the last 100
episodes, and the C actors acted with the weights it published (segments
carry policy versions > 0). The bound is 240 s of wall clock, only so that
a broken run ends: it solves in 30 to 60 s on 2 busy cores. (catch-pixels
with today's MLP actors solves in about 30 s on some runs and stalls near a
return of 0 on others, too unreliable for a test.) Also `python3 -m volley
learner --torch`: its --help, its refusals, a short run on catch-pixels (the
cnn preset on both sides) that stops at --max-steps, and the update alone on
a made-up batch."""
import os
import subprocess
import sys

import numpy as np
import pytest

import volley
from procs import REPO, VOLLEY, free_port

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley.torch import TorchLearner  # noqa: E402
from volley.torch_learner import Hyper, env_spec  # noqa: E402

SOLVE_BOUND_S = 240


def test_env_spec_is_the_env_tables():
    s = env_spec("catch-pixels")
    assert s["fields"] == [((1, 16, 16), "u2")] and s["num_actions"] == 3
    assert s["solved_return"] == 9.0 and s["env"] == "catch-pixels"
    assert env_spec("cartpole")["fields"] == [((4,), "f32")]
    with pytest.raises(ValueError, match="'nope': not one of volley's built-in envs"):
        env_spec("nope")


def test_defaults_are_the_c_learners():
    h = Hyper()
    assert (h.batch, h.epochs, h.minibatch, h.max_lag) == (16, 4, 256, 4)
    assert h.lr is None  # 1e-3, or 3e-4 for conv layers, once the model is known
    assert (h.gamma, h.lam, h.clip) == (0.99, 0.95, 0.2)
    assert (h.ent_coef, h.vf_coef, h.max_grad_norm, h.rho_bar, h.c_bar) == (
        0.01, 0.5, 0.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="gamma: expected 0 .. 1, got 2"):
        Hyper(gamma=2).check()


def test_solves_cartpole_with_c_actors(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    actors = [procs.volley(f"actor{i}", "actor", "--broker", broker, "--id", i, "--env",
                           "cartpole", "--quiet") for i in (1, 2)]
    torch.set_num_threads(1)
    tl = TorchLearner(broker, env="cartpole", model="mlp", seed=1, device="cpu")
    acted = []  # the newest policy version that acted, per batch trained on
    update = tl.update

    def recording_update(b):
        acted.append(int(b.policy_version.max()))
        return update(b)

    tl.update = recording_update
    run = tmp_path / "run"
    tl.keep_checkpoints(run)
    lines = []
    try:
        rc = tl.run(max_seconds=SOLVE_BOUND_S, log=lines.append)
        counters = tl.learner.counters
        with pytest.raises(FileExistsError, match="config.ini: already there"):
            tl.keep_checkpoints(run)  # a run's files are never replaced unasked
        weights = tl.weights()
    finally:
        tl.close()
    assert all(a.poll() is None for a in actors), procs.dump()
    assert rc == 0 and lines[-1].startswith("solved: "), "\n".join(lines) + procs.dump()
    assert counters["window"] >= 100 and counters["mean_return"] >= 475
    assert tl.version > 0 and max(acted) > 0  # the C actors acted with published weights
    assert max(acted) <= tl.version
    # the checkpoint written at the end is what the C tools read: eval plays it, export
    # hands over the very tensors published last
    ev = subprocess.run([VOLLEY, "eval", str(run), "--episodes", "3"], capture_output=True,
                        text=True, timeout=120)
    assert ev.returncode == 0 and f"cartpole, policy default version {tl.version} " in ev.stdout, (
        ev.stdout + ev.stderr)
    out = tmp_path / "policy.safetensors"
    ex = subprocess.run([VOLLEY, "export", str(run), "--to", str(out)], capture_output=True,
                        text=True, timeout=60)
    assert ex.returncode == 0, ex.stderr
    kept = volley.load_safetensors(str(out))
    assert set(kept) == set(weights)
    assert all(np.array_equal(kept[k], weights[k]) for k in weights)


ENV = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))


def test_command_help_and_refusals():
    run = [sys.executable, "-m", "volley", "learner"]
    h = subprocess.run(run + ["--torch", "--help"], capture_output=True, text=True, timeout=60,
                       env=ENV)
    assert h.returncode == 0
    for flag in ("--env", "--model", "--max-steps", "--until-return", "--device", "--lr"):
        assert flag in h.stdout
    r = subprocess.run(run + ["--env", "catch"], capture_output=True, text=True, timeout=60,
                       env=ENV)
    assert r.returncode == 2 and "give --torch" in r.stderr
    r = subprocess.run(run + ["--torch", "--env", "nope", "--broker", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 2 and "env 'nope': not one of volley's built-in envs" in r.stderr
    r = subprocess.run(run + ["--torch", "--gamma", "2"], capture_output=True, text=True,
                       timeout=60, env=ENV)
    assert r.returncode == 2 and "--gamma: expected 0 .. 1" in r.stderr


def test_command_stops_at_max_steps(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    procs.volley("actor", "actor", "--broker", broker, "--id", 1, "--env", "catch-pixels",
                 "--quiet")  # its default model: the cnn preset, scaled down for 16x16 frames
    learner = procs.python("learner", "-m", "volley", "learner", "--torch", "--broker", broker,
                           "--env", "catch-pixels", "--max-steps", 4096, "--max-seconds", 120,
                           "--checkpoint", tmp_path / "run")
    rc = learner.wait(180)
    out = procs.text(learner)
    assert rc == 0, procs.dump()
    last = out.strip().splitlines()[-1]
    assert last.startswith("done: ") and int(last.split()[1]) >= 4096, out
    assert "model conv(16,3,2) relu conv(32,3,1) relu linear(256) relu on cpu" in out, out
    assert "version 0 " not in out.strip().splitlines()[-2], out  # it trained the CNN
    # its checkpoint names env and model: the C tools rebuild the CNN without being told
    ev = subprocess.run([VOLLEY, "eval", str(tmp_path / "run"), "--episodes", "1"],
                        capture_output=True, text=True, timeout=120)
    assert ev.returncode == 0 and "eval: catch-pixels, policy default version" in ev.stdout, (
        ev.stdout + ev.stderr)
    ex = subprocess.run([VOLLEY, "export", str(tmp_path / "run"), "--to",
                         str(tmp_path / "p.safetensors")], capture_output=True, text=True,
                        timeout=60)
    assert ex.returncode == 0, ex.stderr
    shapes = {k: v.shape for k, v in volley.load_safetensors(str(tmp_path / "p.safetensors"))
              .items()}
    assert shapes["conv.0.0.weight"] == (16, 1, 3, 3) and shapes["pi.weight"] == (3, 256)


def test_update_on_a_recorded_batch_is_finite_and_moves_the_weights():
    """TorchLearner.update without a broker: a batch of the transport's shapes."""
    rng = np.random.default_rng(0)
    n, T, D = 4, 8, 4

    class B:  # the arrays volley.Batch holds
        obs = rng.standard_normal((n, T + 1, D)).astype(np.float32)
        actions = rng.integers(0, 2, (n, T)).astype(np.int32)
        rewards = np.ones((n, T), np.float32)
        dones = (rng.random((n, T)) < 0.1).astype(np.float32)
        truncated = np.zeros((n, T), np.uint8)
        truncated[0, 3], dones[0, 3] = 1, 1
        logp = np.full((n, T), np.log(0.5), np.float32)
        final_obs = np.zeros((n, T, D), np.float32)

    tl = TorchLearner.__new__(TorchLearner)  # the update alone: no transport
    from volley.torch_learner import build_model
    tl.hyper, tl.device = Hyper(minibatch=8), torch.device("cpu")
    tl.model = build_model("mlp", [((D,), "f32")], 2, seed=1)
    tl.opt = torch.optim.Adam(tl.model.parameters(), lr=1e-3, eps=1e-5)
    tl._gen = torch.Generator().manual_seed(1)
    before = {k: v.clone() for k, v in tl.model.state_dict().items()}
    losses = tl.update(B)
    assert np.isfinite(losses).all() and losses[2] > 0
    assert any(not torch.equal(before[k], v) for k, v in tl.model.state_dict().items())
    assert list(tl.weights()) == ["pi.0.weight", "pi.0.bias", "pi.1.weight", "pi.1.bias",
                                  "pi.2.weight", "pi.2.bias", "v.0.weight", "v.0.bias",
                                  "v.1.weight", "v.1.bias", "v.2.weight", "v.2.bias"]


def test_transport_checkpoint_refusals(procs, tmp_path):
    """Learner.checkpoint (vl_transport_checkpoint): nothing before a first
    publication, a path that cannot be written named, and the config section
    that `volley export` reports back."""
    port = free_port()
    procs.broker(port)
    spec = {"obs_dim": 4, "num_actions": 2, "horizon": 8, "hidden": 4}
    with volley.Learner(f"127.0.0.1:{port}", spec=spec, timeout=20) as learner:
        path = tmp_path / "p.ckpt"
        with pytest.raises(volley.VolleyError, match="nothing published yet"):
            learner.checkpoint(path, env="cartpole")
        assert not path.exists()
        w = {f"{net}.{i}.{kind}": np.full(shape, 0.5, np.float32)
             for net, out in (("pi", 2), ("v", 1))
             for i, (rows, cols) in enumerate(((4, 4), (4, 4), (out, 4)))
             for kind, shape in (("weight", (rows, cols)), ("bias", (rows,)))}
        learner.publish(w, 3)
        with pytest.raises(volley.VolleyError, match="no-such-dir/p.ckpt: cannot write it"):
            learner.checkpoint(tmp_path / "no-such-dir" / "p.ckpt")
        learner.checkpoint(path, env="cartpole", extra="model = mlp(4)\n")
    ex = subprocess.run([VOLLEY, "export", str(path), "--env", "cartpole", "--to",
                         str(tmp_path / "p.safetensors")], capture_output=True, text=True,
                        timeout=60)
    assert ex.returncode == 0 and "version 3" in ex.stdout, ex.stdout + ex.stderr
    kept = volley.load_safetensors(str(tmp_path / "p.safetensors"))
    assert set(kept) == set(w) and all(np.array_equal(kept[k], w[k]) for k in w)


def test_trains_a_python_box_env(procs):
    """TorchLearner on a Box space (the spec a Python actor declared): a Gaussian
    policy (volley.torch's head, pi.logstd published with the net) that the C actor
    engine samples from; the move-to-target task's return passes most of the way from
    the starting policy's to the best one's."""
    from action_envs import random_return
    base = random_return()
    target = base + 0.75 * (-1.0 - base)
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    tests = os.path.dirname(os.path.abspath(__file__))
    actor = procs.python("actor", "-m", "volley", "actor", "--env",
                         "action_envs:make_move_to_target", "--broker", broker, "--envs", 8,
                         "--horizon", 32,
                         env={"PYTHONPATH": f"{tests}:{REPO / 'bindings' / 'python'}"})
    torch.set_num_threads(1)
    lines = []
    with TorchLearner(broker, seed=1, device="cpu", batch=8) as tl:
        assert tl.spec["action"] == volley.ActionSpace.box([-1], [1])
        assert list(tl.weights())[-1] == "pi.logstd"
        rc = tl.run(until_return=target, max_seconds=120, log=lines.append)
        counters = tl.learner.counters
        logstd = tl.weights()["pi.logstd"]
    assert actor.poll() is None, procs.dump()
    print(lines[-1], "log-std", logstd)
    assert rc == 0 and counters["window"] >= 100 and counters["mean_return"] >= target, \
        "\n".join(lines) + procs.dump()
