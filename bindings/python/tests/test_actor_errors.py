"""`python3 -m volley actor` says what stopped it in one line, exit 2, with no
traceback, where the cause is the command's flags, the env's values or the
broker, not the env's code: a --model spec that does not build (naming the
flag, what was wrong and what it takes), an observation outside its u2 field's
range (libvolley's message alone), and a spec the broker refuses (its reason,
said once). An env that raises still shows its traceback, exit 1."""
import os
import subprocess

from procs import PYTHON, REPO, free_port

ENVS = '''import numpy as np
from volley.envs.cartpole import Box, Discrete


class U2:
    """Six values of 0..3 (a u2 field); value 3 of env 0's first step is 7."""
    def __init__(self):
        self.observation_space = Box(0, 3, shape=(6,), dtype=np.uint8)
        self.action_space = Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(6, np.uint8), {}

    def step(self, action):
        obs = np.zeros(6, np.uint8)
        obs[3] = 7
        return obs, 1.0, False, False, {}


class Raises(U2):
    def step(self, action):
        raise RuntimeError("the emulator crashed (a test env)")


def make_u2():
    return U2()


def make_raises():
    return Raises()
'''


def actor(tmp_path, port, *args):
    """Runs `python3 -m volley actor --broker 127.0.0.1:port ARGS` to its end
    (a minute at most: a hang guard); returns (exit code, stderr's lines)."""
    (tmp_path / "err_envs.py").write_text(ENVS)
    env = {"PYTHONPATH": f"{tmp_path}:{REPO / 'bindings' / 'python'}"}
    r = subprocess.run([PYTHON, "-m", "volley", "actor", "--broker", f"127.0.0.1:{port}",
                        "--envs", "2", *map(str, args)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, env={**os.environ, **env})
    return r.returncode, r.stderr


def said(log):
    """The lines the command itself said (libvolley's log lines carry a time)."""
    return [line for line in log.splitlines() if line.startswith("volley actor:")]


def test_a_model_that_does_not_build_is_one_line(tmp_path):
    port = free_port()  # nothing listens: the actor stops before it connects
    rc, log = actor(tmp_path, port, "--env", "volley.envs.cartpole:make_env", "--model",
                    "bogus(3)")
    assert rc == 2 and "Traceback" not in log and len(log.splitlines()) == 1, log
    assert said(log) == ["volley actor: --model 'bogus(3)': unknown layer 'bogus' at column 1; "
                         "expected conv(out,k,stride[,pad]), linear(n), lstm(n), relu, tanh or "
                         "a preset (mlp, cnn)"], log
    rc, log = actor(tmp_path, port, "--env", "volley.envs.cartpole:make_env", "--model", "cnn")
    assert rc == 2 and "Traceback" not in log and len(log.splitlines()) == 1, log
    assert said(log)[0].startswith("volley actor: --model 'cnn': ") and \
        "needs an image field" in log and "f32[4]" in log, log


def test_a_value_out_of_its_u2_range_is_one_line(procs, tmp_path):
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    rc, log = actor(tmp_path, port, "--env", "err_envs:make_u2")
    assert rc == 2 and "Traceback" not in log, log
    assert said(log) == ["volley actor: next_obs[0][3] = 7: field 0 must be a whole number "
                         "0..3 (u2)"], log


def test_an_env_that_raises_still_shows_its_traceback(procs, tmp_path):
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    rc, log = actor(tmp_path, port, "--env", "err_envs:make_raises")
    assert rc == 1 and "Traceback" in log and "the emulator crashed" in log, log


def test_a_refused_spec_says_its_reason_once(procs, tmp_path):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--env", "cartpole")  # the policy's spec: CartPole's f32[4]
    rc, log = actor(tmp_path, port, "--env", "err_envs:make_u2")
    assert rc == 2 and "Traceback" not in log, log
    assert said(log) == ["volley actor: the broker refused this actor: observation: policy "
                         "'default' has f32[4], this actor u2[6]"], log
