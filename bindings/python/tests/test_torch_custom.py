"""A PyTorch module of one's own (--torch-model MOD:FN, volley.torch.custom
and volley.torch.actor) with the torch learner. The modules are
torch_custom_nets.py's, beside this file.

  - the contract in-process: the published tensors are the module's own
    names (a rank-0 buffer as [1]), a box gets pi.logstd unless the module
    has its own logstd, an image field reads through spec.views, the
    actors' policy_fn loads the weights and the norm.* statistics, and one
    update through the C learner's outside-engine path publishes and loads
    back those unknown names;
  - refusals of one line: a module whose outputs have the wrong shape (the
    expected shapes named, at start, before any broker), a build that
    raises or a MOD:FN that does not import;
  - a C actor against a learner with --torch-model is refused in one line
    naming --torch-model;
  - end to end: a learner without --env takes the spec two Python actors
    declare (model torch:MOD:FN, acting with torch_policy), trains CartPole
    well above chance (a mean return >= 100; random play is about 22), with
    the actors acting on versions > 0 and a checkpoint written; --resume
    loads that checkpoint and goes on from its version; `volley eval RUN`
    plays it with its module on the Python env (well above chance, greedy),
    refusing in one line without a Python env, and `volley export RUN`
    writes the module's own tensors and names its model, which
    volley.load_torch_policy builds back. Wall-clock bounds only end a
    broken run."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from procs import PYTHON, REPO, VOLLEY, free_port, top_kind, top_rows

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

import volley  # noqa: E402
from volley import engine as E  # noqa: E402
from volley.action import ActionSpace  # noqa: E402
from volley.envs.cartpole import CartPoleVectorEnv  # noqa: E402
from volley.torch import custom  # noqa: E402
from volley.torch.actor import torch_policy  # noqa: E402
from volley.torch.learner import TorchLearner, TorchOptions  # noqa: E402

pytestmark = pytest.mark.skipif(not E._lib.has("vl_learner_main_engine"),
                                reason="libvolley without include/volley/engine.h's engines")

HERE = Path(__file__).resolve().parent  # torch_custom_nets.py's folder: the processes' cwd
NETS = "torch_custom_nets"
MODEL = f"{NETS}:build"
LEARN_BOUND_S = 150  # only ends a run that hangs; with the resume's 60: under ctest's 300 s
ABOVE_CHANCE = 100.0
STEP_BUDGET = 300_000  # the first learner's --max-steps: above chance within these env steps

ACTOR = f"""
import sys
import volley
from volley.envs.cartpole import CartPoleVectorEnv
from volley.torch.actor import model_text, torch_policy
envs = CartPoleVectorEnv(8)
volley.run_actor(envs, broker=sys.argv[1], actor_id=int(sys.argv[2]), seed=int(sys.argv[2]),
                 policy_fn=torch_policy("{MODEL}", envs), model=model_text("{MODEL}"))
"""


@pytest.fixture(autouse=True)
def nets_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))


def cartpole_spec():
    return custom.spec_of(CartPoleVectorEnv(1), horizon=64)


def test_published_tensors_are_the_modules_own():
    net = custom.build_net(MODEL, cartpole_spec(), seed=3)
    sd = net.state_dict()
    assert list(sd) == ["calls", "trunk.0.weight", "trunk.0.bias", "trunk.2.weight",
                        "trunk.2.bias", "pi.weight", "pi.bias", "v.weight", "v.bias"]
    assert sd["calls"].shape == (1,)  # rank 0 travels as [1]
    out, v = net(torch.zeros(3, 4))
    assert out.shape == (3, 2) and v.shape == (3,)
    assert net.state_size == 0 and net.num_actions == 2 and net.spec_text == "torch:" + MODEL
    again = custom.build_net(MODEL, cartpole_spec(), seed=3)  # the seed decides the weights
    assert all(torch.equal(a, b) for a, b in zip(sd.values(), again.state_dict().values()))
    with pytest.raises(ValueError, match="memoryless"):
        net.forward_seq(torch.zeros(1, 2, 4))


def test_box_log_std_and_image_fields():
    box = custom.ModelSpec((((3,), "f32"),), ActionSpace.box([-1, -1], [1, 1]), 16)
    added = custom.build_net(MODEL, box)
    assert list(added.state_dict())[-1] == "pi.logstd"
    own = custom.build_net(f"{NETS}:build_own_logstd", box)
    assert "pi.logstd" not in own.state_dict() and "logstd" in own.state_dict()
    d = own.dist(torch.zeros(4, 2))
    assert torch.allclose(d.normal.stddev, torch.full((4, 2), float(np.exp(-0.5))))
    img = custom.ModelSpec((((1, 16, 16), "u2"),), ActionSpace.discrete(3), 64)
    cnn = custom.build_net(f"{NETS}:build_cnn", img)
    out, v = cnn(torch.full((2, 256), 3.0))
    assert out.shape == (2, 3) and v.shape == (2,)
    assert list(cnn.state_dict())[0] == "conv.0.weight"


def test_policy_fn_loads_weights_and_normalises():
    box = custom.ModelSpec((((3,), "f32"),), ActionSpace.box([-1, -1], [1, 1]), 16)
    fn = torch_policy(MODEL, box)
    src = custom.build_net(MODEL, box, seed=5)
    w = volley.Weights({k: v.numpy().copy() for k, v in src.state_dict().items()})
    w.update({"norm.obs.mean": np.full(3, 100, np.float32), "norm.obs.var": np.ones(3, np.float32),
              "norm.state": np.zeros(4, np.float32)})
    w.version = 4
    obs = np.full((2, 3), 100.0, np.float32)  # normalised to 0 by those statistics
    greedy = torch_policy(MODEL, box, greedy=True)
    a, lp = greedy(obs, w)
    mean = src(torch.zeros(2, 3))[0].detach().clamp(-1, 1).numpy()
    assert np.allclose(a, mean, atol=1e-6) and lp.shape == (2,)
    a, lp = fn(obs, w)
    assert a.shape == (2, 2) and np.all(np.isfinite(lp))
    other = volley.Weights({"x.weight": np.zeros((2, 2), np.float32)})
    other.version = 5
    with pytest.raises(ValueError, match="not this module's"):
        fn(obs, other)


def test_one_update_through_the_c_learner_publishes_and_loads_back():
    cfg = E.config_default([((3,), "f32")], ActionSpace.box([-2, -2], [2, 2]), horizon=8,
                           model="torch:" + MODEL)
    assert cfg.model == "torch:" + MODEL and cfg.state_size == 0
    cfg = cfg.replace(epochs=2, minibatch=16, batch_segments=4, norm_obs=True)
    engine = TorchOptions(device="cpu").open(cfg)
    c_eng = E.CEngine(cfg, engine)
    r = np.random.default_rng(1)
    n, T = 4, cfg.horizon
    arrays = dict(obs=r.normal(size=(n, T + 1, 3)).astype(np.float32),
                  actions=r.normal(size=(n, T, 2)).astype(np.float32),
                  rewards=r.normal(size=(n, T)).astype(np.float32),
                  dones=(r.random((n, T)) < 0.1).astype(np.float32),
                  logp=np.full((n, T), -2.0, np.float32))
    try:
        before = c_eng.tensors()
        stats, _ = c_eng.update(E.make_batch(cfg, n, arrays))
        after = c_eng.tensors()
        assert np.isfinite(stats["policy_loss"])
        assert list(after)[:3] == ["calls", "trunk.0.weight", "trunk.0.bias"]
        assert {"pi.logstd", "norm.obs.mean", "norm.obs.var", "norm.state"} <= set(after)
        assert not np.allclose(before["trunk.0.weight"], after["trunk.0.weight"])
        c_eng.load(before)  # a checkpoint's tensors of names C does not know load back
        assert all(np.array_equal(before[k], v) for k, v in c_eng.tensors().items()
                   if not k.startswith("norm."))
    finally:
        c_eng.close()


def test_learner_keyword_and_model_text():
    tl = TorchLearner("127.0.0.1:7", env="cartpole", torch_model=MODEL, device="cpu")
    assert tl.argv[-2:] == ["--model", "torch:" + MODEL]
    assert custom.model_text(MODEL) == custom.model_text("torch:" + MODEL) == "torch:" + MODEL
    with pytest.raises(ValueError, match="No module named"):
        TorchLearner("127.0.0.1:7", torch_model="no_such_module:build")
    with pytest.raises(ValueError, match="give one"):
        TorchLearner("127.0.0.1:7", torch_model=MODEL, model="mlp")


def learner_cmd(broker, *args):
    return [PYTHON, "-m", "volley", "learner", "--torch", "--broker", broker, "--device", "cpu",
            "--threads", "1", *map(str, args)]


def refusal(argv):
    """(exit code, stderr's lines that are not the learner's info lines) of argv run in HERE."""
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(REPO / "bindings" / "python"))  # as procs starts them
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=HERE, env=env)
    lines = [x for x in out.stderr.splitlines() if x.strip() and " info: " not in x]
    return out.returncode, lines


def test_wrong_outputs_missing_module_or_raising_build_are_one_line():
    broker = f"127.0.0.1:{free_port()}"  # never reached: each refusal comes first
    rc, lines = refusal(learner_cmd(broker, "--env", "cartpole",
                                    "--torch-model", f"{NETS}:build_wrong"))
    assert rc != 0 and len(lines) == 1, lines
    assert "expected float (outputs [5, 2], values [5])" in lines[0] and "[5, 3]" in lines[0]
    for name, want in (("no_such_module:build", "No module named 'no_such_module'"),
                       (f"{NETS}:nothing", f"{NETS} has no nothing"),
                       ("not a name", "expected package.module:function")):
        rc, lines = refusal(learner_cmd(broker, "--env", "cartpole", "--torch-model", name))
        assert rc == 2 and len(lines) == 1 and want in lines[0], (name, lines)
    rc, lines = refusal(learner_cmd(broker, "--env", "cartpole",
                                    "--torch-model", f"{NETS}:build_raises"))
    assert rc != 0 and len(lines) == 1 and "build(spec) raised RuntimeError: no GPU here" \
        in lines[0], lines
    rc, lines = refusal(learner_cmd(broker, "--torch-model", MODEL, "--model", "mlp"))
    assert rc == 2 and len(lines) == 1 and "give one" in lines[0], lines


def test_c_actor_is_refused_in_one_line(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    learner = procs.python("learner", *learner_cmd(broker, "--env", "cartpole", "--run-dir",
                                                   tmp_path / "run", "--torch-model",
                                                   MODEL)[1:], cwd=HERE)
    assert procs.wait_for(learner, "training policy", 60), procs.dump()
    actor = procs.volley("c_actor", "actor", "--broker", broker, "--env", "cartpole", "--id", 3)
    assert actor.wait(60) == 2, procs.dump()
    lines = [x for x in procs.text(actor).splitlines() if x.strip()]
    assert len(lines) == 1, lines
    assert "torch:" + MODEL in lines[0] and f"--torch-model {MODEL}" in lines[0], lines
    assert learner.poll() is None, procs.dump()


def metrics(run):
    path = run / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_python_actors_train_it_and_resume_goes_on(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    run = tmp_path / "run"
    procs.broker(port)
    first = learner_cmd(broker, "--run-dir", run, "--report-ms", 200, "--torch-model", MODEL,
                        "--max-steps", STEP_BUDGET)
    learner = procs.python("learner", *first[1:], cwd=HERE)
    actors = [procs.python(f"actor{i}", "-c", ACTOR, broker, i, cwd=HERE) for i in (1, 2)]
    stats, start = {}, time.monotonic()
    while True:
        assert time.monotonic() - start < LEARN_BOUND_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(1)
        assert learner.poll() is None and all(a.poll() is None for a in actors), procs.dump()
        stats = top_kind(port, "learner")
        if int(stats.get("window", 0)) >= 50 and \
                float(stats.get("mean_return", 0)) >= ABOVE_CHANCE:
            break
        assert int(stats.get("env_steps", 0)) < STEP_BUDGET, \
            f"not above chance within {STEP_BUDGET} env steps: {stats}\n{procs.dump()}"
    print(f"above chance in {time.monotonic() - start:.0f} s:",
          {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    seen = [r for r in top_rows(port) if r.get("kind") == "actor"]
    assert len(seen) == 2 and all(int(r["weights_version"]) > 0 for r in seen), seen
    assert procs.stop(learner) == 0, procs.dump()
    assert "torch engine: torch:" + MODEL in procs.text(learner), procs.dump()
    assert (run / "checkpoints" / "default.ckpt").exists(), procs.dump()
    assert "model = torch:" + MODEL in (run / "config.ini").read_text()
    rows = metrics(run)
    assert rows and rows[-1]["version"] > 0, procs.dump()
    version, steps = rows[-1]["version"], rows[-1]["env_steps"]

    budget = steps + 8000
    again = procs.python("learner2", *learner_cmd(broker, "--run-dir", run, "--report-ms", 200,
                                                  "--torch-model", MODEL, "--resume",
                                                  "--max-steps", budget)[1:], cwd=HERE)
    end = time.monotonic() + 60
    while time.monotonic() < end and again.poll() is None:
        time.sleep(0.5)
        if any(r["env_steps"] >= budget for r in metrics(run)[len(rows):]):
            break
    time.sleep(1)  # a report after the budget
    assert procs.stop(again) == 0, procs.dump()
    resumed = re.search(r"resumed from \S+ at version (\d+),", procs.text(again))
    assert resumed and int(resumed.group(1)) >= version, procs.dump()
    later = metrics(run)[len(rows):]
    assert later and later[0]["version"] >= version and later[-1]["version"] > version, later
    assert all(a.poll() is None for a in actors), procs.dump()
    check_eval(run)
    check_export(run, tmp_path / "out.safetensors")


def volley_cli(*args):
    """(exit code, stdout, stderr's lines) of the volley binary run in HERE."""
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(REPO / "bindings" / "python"))
    out = subprocess.run([VOLLEY, *map(str, args)], capture_output=True, text=True, timeout=120,
                         cwd=HERE, env=env)
    return out.returncode, out.stdout, [x for x in out.stderr.splitlines() if x.strip()]


def check_eval(run):
    """volley eval of a torch:MOD:FN run: its module plays the Python env
    (the learner recorded only the vector env's name, so --env names it);
    without a Python env, one line asking for one."""
    rc, out, err = volley_cli("eval", run, "--episodes", 3, "--greedy",
                              "--env", "volley.envs.cartpole:make_env")
    assert rc == 0, (out, err)
    assert f"model torch:{MODEL}" in out, out
    got = re.search(r"^return (\S+) ± ", out, re.M)
    assert got and float(got.group(1)) >= ABOVE_CHANCE / 2, out  # random play: about 22
    rc, out, err = volley_cli("eval", run, "--episodes", 3)
    assert rc == 2 and len(err) == 1 and f"torch:{MODEL}" in err[0] and "--env" in err[0], err


def check_export(run, to):
    """volley export of a torch:MOD:FN run: the module's tensors and its model."""
    rc, out, err = volley_cli("export", run, "--to", to)
    assert rc == 0 and f"model torch:{MODEL}" in out, (out, err)
    tensors = volley.load_safetensors(to)
    net = custom.build_net(MODEL, cartpole_spec())
    assert set(tensors) == set(net.state_dict()), sorted(tensors)
    arch = volley.load_export_spec(to)["architecture"]
    assert arch["model"] == f"torch:{MODEL}" and arch["type"] == "torch", arch
    assert json.loads(to.with_suffix(".json").read_text())["architecture"] == arch
    back = volley.load_torch_policy(to)
    assert all(torch.equal(v, torch.from_numpy(tensors[k]))
               for k, v in back.state_dict().items()), "not the exported tensors"
