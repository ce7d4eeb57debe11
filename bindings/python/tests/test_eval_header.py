"""The eval of a Python env's run (`volley eval RUN`, `python3 -m volley eval
RUN`) heads its result as the C eval does: the kept network's model spec
("model conv(16,3,2) relu ..."), not a hidden size a conv network does not
have. Two runs on one broker, both with the default network for images (cnn):
a C actor's (Catch from pixels) and a Python actor's (an 8x8 screen)."""
import os
import re
import subprocess
import time

from procs import PYTHON, REPO, VOLLEY, free_port, top_rows

BLINK = '''import numpy as np
from volley.envs.cartpole import Box, Discrete


class Blink:
    """An 8x8 screen of shades 0..3 (a cnn's image); action t % 2 earns 1; 8 steps."""
    def __init__(self):
        self.observation_space = Box(0, 3, shape=(8, 8), dtype=np.uint8)
        self.action_space = Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros((8, 8), np.uint8), {}

    def step(self, action):
        self.t += 1
        obs = np.full((8, 8), self.t % 4, np.uint8)
        return obs, float(action == self.t % 2), False, self.t == 8, {}


def make_env():
    return Blink()
'''

HEADER = re.compile(r"eval: (\S+), policy (\S+) version (\d+) \(obs (\d+), model (.+), "
                    r"actions (\S+)\), 2 episodes, sampled actions, seed 1$")


def learned(port, policy):
    """Waits until policy's learner has taken env steps (a minute at most: a hang guard)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for r in top_rows(port):
            if r.get("kind") == "learner" and r.get("policy", "").strip('"') == policy and \
                    int(r.get("env_steps", 0)) > 0:
                return True
        time.sleep(0.3)
    return False


def header(argv, cwd):
    """The first line an eval prints, after checking it ran to its end."""
    env = {**os.environ, "PYTHONPATH": f"{cwd}:{REPO / 'bindings' / 'python'}"}
    r = subprocess.run([*map(str, argv), "--episodes", "2"], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.count("\n") == 2, r.stdout + r.stderr
    return r.stdout.splitlines()[0]


def test_python_env_eval_heads_with_the_model_spec_as_the_c_eval(procs, tmp_path):
    (tmp_path / "blink_env.py").write_text(BLINK)
    port = free_port()
    procs.broker(port)
    runs = {p: tmp_path / f"run_{p}" for p in ("c", "py")}
    learners = {p: procs.learner(port, "--policy", p, "--run-dir", run, "--batch", 4)
                for p, run in runs.items()}
    c_actor = procs.volley("c_actor", "actor", "--broker", f"127.0.0.1:{port}", "--policy", "c",
                           "--env", "catch-pixels")
    py_actor = procs.python("py_actor", "-m", "volley", "actor", "--broker",
                            f"127.0.0.1:{port}", "--policy", "py", "--env", "blink_env:make_env",
                            env={"PYTHONPATH": f"{tmp_path}:{REPO / 'bindings' / 'python'}"},
                            cwd=tmp_path)
    assert learned(port, "c") and learned(port, "py"), procs.dump()
    for p in (c_actor, py_actor, *learners.values()):  # a learner keeps its checkpoint at exit
        assert procs.stop(p) == 0, procs.dump()
    c_head = HEADER.match(header([VOLLEY, "eval", runs["c"], "--policy", "c"], tmp_path))
    assert c_head and c_head.group(1) == "catch-pixels" and "conv(" in c_head.group(5), c_head
    for argv in ([VOLLEY, "eval"], [PYTHON, "-m", "volley", "eval"]):
        line = header([*argv, runs["py"], "--policy", "py"], tmp_path)
        py_head = HEADER.match(line)
        assert py_head, line  # "hidden 64" where "model ..." belongs fails here
        assert py_head.group(1) == "blink_env:make_env" and py_head.group(4) == "64", line
        assert py_head.group(5) == c_head.group(5), (line, c_head.group(0))
