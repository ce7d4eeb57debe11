"""A run whose actors were Python (`python3 -m volley actor --env MOD:FN`) can
be evaluated and exported: the learner's run records MOD:FN (the actors'
spec names it), `volley eval RUN` plays that env in Python with the C policy
of the run's checkpoint, `--env MOD:FN` names one outright, and `volley
export RUN` writes it. A wrong or missing env is one line, exit 2. Training
is bounded by env steps (STEP_BUDGET; about 20k measured, seconds); HANG_S
only ends a run that hangs."""
import json
import os
import subprocess
import time
from pathlib import Path

from procs import REPO, VOLLEY, free_port, top_kind

TESTS = Path(__file__).resolve().parent
ENV = "eval_envs:make_guess"
STEP_BUDGET = 100_000
HANG_S = 120


def _env():
    e = dict(os.environ)
    e["PYTHONPATH"] = f"{TESTS}:{REPO / 'bindings' / 'python'}"
    return e


def _volley(*args, cwd):
    return subprocess.run([VOLLEY, *map(str, args)], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=120)


def _mean(out):
    last = out.strip().splitlines()[-1]
    assert last.startswith("return "), out
    return float(last.split()[1])


def _train(procs, run):
    port = free_port()
    procs.broker(port)
    learner = procs.learner(port, "--run-dir", run, "--batch", 8, "--report-ms", 200)
    actor = procs.python("actor", "-m", "volley", "actor", "--env", ENV, "--broker",
                         f"127.0.0.1:{port}", "--envs", 8, env={"PYTHONPATH": _env()["PYTHONPATH"]})
    stats, start = {}, time.monotonic()
    while int(stats.get("env_steps", 0)) <= STEP_BUDGET:
        assert time.monotonic() - start < HANG_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(0.5)
        assert actor.poll() is None and learner.poll() is None, procs.dump()
        stats = top_kind(port, "learner")
        if int(stats.get("window", 0)) >= 50 and float(stats.get("mean_return", 0)) >= 7.5:
            break
    print(f"trained in {time.monotonic() - start:.0f} s:",
          {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    assert int(stats.get("window", 0)) >= 50 and float(stats.get("mean_return", 0)) >= 7.5, \
        f"not learnt within {STEP_BUDGET} env steps: {stats}\n{procs.dump()}"
    assert procs.stop(actor) == 0 and procs.stop(learner) == 0, procs.dump()


def test_eval_and_export_of_a_python_env_run(procs, tmp_path):
    run = tmp_path / "run"
    _train(procs, run)
    assert f"env = {ENV}" in (run / "config.ini").read_text()
    r = _volley("eval", run, "--episodes", 40, cwd=tmp_path)  # the run's own record
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"eval: {ENV}, policy default version "), r.stdout
    assert "40 episodes, sampled actions" in r.stdout and _mean(r.stdout) >= 7, r.stdout
    r = _volley("eval", run / "checkpoints" / "default.ckpt", "--env", ENV, "--greedy",
                "--episodes", 10, cwd=tmp_path)
    assert r.returncode == 0 and _mean(r.stdout) == 8.0, r.stdout + r.stderr
    r = _volley("export", run, "--to", tmp_path / "g.safetensors", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    spec = json.loads((tmp_path / "g.json").read_text())
    assert spec["env"]["name"] == ENV and spec["architecture"]["obs_dim"] == 1
    for env, words in (("volley.envs.cartpole:make_env", "takes 1 observations and acts in "
                        "discrete(2); the env gives 4 and acts in discrete(2)"),
                       ("nosuch_mod:make", "No module named")):
        r = _volley("eval", run, "--env", env, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
