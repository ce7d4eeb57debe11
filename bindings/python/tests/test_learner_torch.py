"""examples/torch_learner.py solves CartPole (mean return >= 475 over the
last 100 episodes, as `volley up` judges it) with two unmodified C actors
through a real broker. The cap is wall-clock generous (it solves in about
35 s on 2 cores); no figure is asserted."""
import importlib.util
from pathlib import Path

import pytest

from procs import REPO, free_port

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed (Debian: python3-torch)")

EXAMPLE = REPO / "bindings" / "python" / "examples" / "torch_learner.py"


def test_torch_learner_solves_cartpole_with_c_actors(procs):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    for i in (1, 2):
        procs.volley(f"actor{i}", "actor", "--broker", broker, "--id", i, "--quiet")
    learner = procs.python("torch_learner", EXAMPLE, "--broker", broker, "--max-seconds", 220)
    try:
        rc = learner.wait(240)
    except Exception:
        rc = None
    out = Path(learner.log).read_text(errors="replace")
    assert rc == 0 and "solved:" in out, procs.dump()
    assert "version 0 " not in out.splitlines()[-2]  # it trained: versions went up
