"""`python3 -m volley learner --torch` end to end: a real broker, two C
actors and the C learner's loop with the PyTorch engine solve CartPole (a
mean return of 475 over 100 episodes within STEP_BUDGET env steps; 80k-250k
measured, a minute at most on 2 busy cores; the bound of 240 s only ends a
run that hangs), keep a run directory whose checkpoint `volley eval` plays
and whose metrics.jsonl has rows; then
--resume continues the weights version and the env-step count and restores
Adam's state (its step count in the checkpoint goes on from where it was).
Also the command's --help (the C learner's plus the torch options), its
refusals, and an engine whose update raises: the learner stops with a
non-zero exit, its log naming the exception."""
import json
import subprocess
import time

import numpy as np
import pytest

from procs import PYTHON, VOLLEY, free_port, top_kind

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley import engine as E  # noqa: E402
from volley.torch.engine import OPT_MAGIC  # noqa: E402

pytestmark = pytest.mark.skipif(not E._lib.has("vl_learner_main_engine"),
                                reason="libvolley without include/volley/engine.h's engines")

LEARN_BOUND_S = 240
STEP_BUDGET = 750_000
LEARNED = 475.0  # CartPole's solved return, as `volley up` judges it


def adam_steps(ckpt):
    """The Adam step count the checkpoint's torch optimiser state holds."""
    raw = ckpt.read_bytes()
    at = raw.index(OPT_MAGIC) + len(OPT_MAGIC) + 4
    return int(np.frombuffer(raw, np.uint64, 2, at)[1])


def metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def torch_learner(procs, name, broker, run, *args):
    return procs.python(name, "-m", "volley", "learner", "--torch", "--broker", broker,
                        "--env", "cartpole", "--run-dir", run, "--device", "cpu",
                        "--threads", 1, "--report-ms", 200, *args)


def test_learns_cartpole_keeps_a_run_and_resumes(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    run = tmp_path / "run"
    learner = torch_learner(procs, "learner", broker, run)
    actors = [procs.volley(f"actor{i}", "actor", "--broker", broker, "--id", i, "--env",
                           "cartpole", "--quiet") for i in (1, 2)]
    stats, start = {}, time.monotonic()
    while True:
        assert time.monotonic() - start < LEARN_BOUND_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(1)
        assert learner.poll() is None and all(a.poll() is None for a in actors), procs.dump()
        stats = top_kind(port, "learner")
        if int(stats.get("window", 0)) >= 100 and float(stats.get("mean_return", 0)) >= LEARNED:
            break
        assert int(stats.get("env_steps", 0)) <= STEP_BUDGET, \
            f"not learned within {STEP_BUDGET} env steps: {stats}\n{procs.dump()}"
    print(f"learned in {time.monotonic() - start:.0f} s:",
          {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    assert procs.stop(learner) == 0, procs.dump()
    ckpt = run / "checkpoints" / "default.ckpt"
    assert ckpt.exists(), procs.dump()
    rows = metrics(run)
    assert rows and rows[-1]["version"] > 0 and rows[-1]["return_mean"] > 50
    version, steps, adam = rows[-1]["version"], rows[-1]["env_steps"], adam_steps(ckpt)
    assert adam > 0
    ev = subprocess.run([VOLLEY, "eval", str(run), "--episodes", "5", "--greedy"],
                        capture_output=True, text=True, timeout=60)
    assert ev.returncode == 0 and "5 episodes" in ev.stdout, ev.stdout + ev.stderr
    mean = float(ev.stdout.strip().splitlines()[-1].split()[1])  # return M ± S ...
    assert mean > 50, ev.stdout

    # --resume: the version, the env steps and Adam's steps go on from the checkpoint's
    budget = steps + 8000
    again = torch_learner(procs, "learner2", broker, run, "--resume", "--max-steps", budget)
    end = time.monotonic() + 120
    while time.monotonic() < end and again.poll() is None:
        time.sleep(0.5)
        done = [r for r in metrics(run)[len(rows):] if r["env_steps"] >= budget]
        if done:
            break
    time.sleep(1)  # a report and a checkpoint after the budget
    assert procs.stop(again) == 0, procs.dump()
    later = metrics(run)[len(rows):]
    assert later, procs.dump()
    assert later[0]["version"] >= version and later[-1]["version"] > version
    assert later[0]["env_steps"] >= steps and later[-1]["env_steps"] >= budget
    assert adam_steps(ckpt) > adam


def test_help_is_the_c_learners_and_the_torch_options():
    out = subprocess.run([PYTHON, "-m", "volley", "learner", "--torch", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "usage: volley learner" in out.stdout and "--max-steps" in out.stdout
    assert out.stdout.index("--max-steps") < out.stdout.index("--amp bf16")


def test_refusals_name_the_option():
    for args, want in ((["--amp", "fp8"], "--amp: expected bf16"),
                       (["--device"], "--device: needs a value"),
                       (["--device", "nope"], "--device")):
        out = subprocess.run([PYTHON, "-m", "volley", "learner", "--torch", *args],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and want in out.stderr, (args, out.stderr)
    if not hasattr(torch, "compile"):
        out = subprocess.run([PYTHON, "-m", "volley", "learner", "--torch", "--compile"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "needs PyTorch 2" in out.stderr


FAILING_ENGINE = """
import sys
import volley.torch.engine as te
def update(self, batch, lr):
    raise RuntimeError("the device went away")
te.TorchEngine.update = update
from volley.torch.learner import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_engine_that_fails_stops_the_learner_saying_why(procs, tmp_path):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    learner = procs.python("learner", "-c", FAILING_ENGINE, "--broker", broker, "--env",
                           "cartpole", "--device", "cpu", "--run-dir", tmp_path / "run")
    procs.volley("actor", "actor", "--broker", broker, "--id", 1, "--env", "cartpole", "--quiet")
    try:
        rc = learner.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError("the learner went on after its engine failed\n" + procs.dump())
    assert rc != 0, procs.dump()
    assert "the device went away" in procs.text(learner), procs.dump()
