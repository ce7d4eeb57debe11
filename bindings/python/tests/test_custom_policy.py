"""examples/custom_policy.py: a PyTorch model volley's C policy does not
have (a shared ReLU trunk, two heads) solves CartPole (mean return >= 475
over the last 100 episodes) with two Python actors running its NumPy
forward pass (volley.run_actor's policy_fn), through a real broker.

Besides the learner's `solved:` line it checks that the actors acted with
the learner's weights (`volley top` reports both on a version > 0, as do
the segments' policy versions), that what was published is the custom
model's tensors and not volley's MLP (read back from the broker's
last-value cache by an external-mode volley.Actor), and that a C actor,
given those weights, refuses them: only the Python forward pass could have
acted. Training is bounded by env steps (STEP_BUDGET; 270k measured); the
learner's --max-seconds and the wait on it only end a run that hangs (it
solved in 11-47 s, median about 20 s, over 10 runs on 2 cores)."""
import importlib.util
import json
import re
import time

import pytest

from procs import REPO, free_port, top_rows

STEP_BUDGET = 1_000_000
HANG_S = 240

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed (Debian: python3-torch)")

EXAMPLE = REPO / "bindings" / "python" / "examples" / "custom_policy.py"
MLP = {f"{net}.{i}.{p}" for net in ("pi", "v") for i in (0, 1, 2) for p in ("weight", "bias")}
CUSTOM = {f"{layer}.{p}" for layer in ("trunk.0", "trunk.2", "pi", "v")
          for p in ("weight", "bias")}

PROBE = """
import json, sys, volley
from volley.envs.cartpole import CartPoleEnv
with volley.Actor(broker=sys.argv[1], spec=CartPoleEnv(), num_envs=1, actor_id=99,
                  policy_fn=lambda o, w: ([0], [0.0])) as actor:
    actor.sync()
    w = actor.weights()
    print(json.dumps({"version": w.version, "tensors": {k: v.shape for k, v in w.items()}}))
"""



def test_custom_model_solves_cartpole_with_python_actors(procs):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    learner = procs.python("learner", EXAMPLE, "learner", "--broker", broker,
                           "--max-seconds", HANG_S)
    actors = [procs.python(f"actor{i}", EXAMPLE, "actor", "--broker", broker, "--id", i)
              for i in (1, 2)]
    rc, steps = _train(procs, learner)
    lines = procs.text(learner).splitlines()
    assert steps <= STEP_BUDGET, f"not solved within {STEP_BUDGET} env steps\n{procs.dump()}"
    assert rc is not None, f"hung: no end within {HANG_S} s\n{procs.dump()}"
    assert rc == 0 and lines and lines[-1].startswith("solved:"), procs.dump()
    print(lines[-1])
    assert all(a.poll() is None for a in actors), procs.dump()  # still acting, no crash

    # The segments were acted with the learner's weights, not only its initial version 0.
    acted = re.search(r"segments acted by versions up to (\d+)", lines[-2])
    assert acted and int(acted.group(1)) > 0, procs.dump()
    seen = {r["id"]: r for r in top_rows(port) if r.get("kind") == "actor"}
    for i in ("1", "2"):
        assert i in seen and int(seen[i]["weights_version"]) > 0 \
            and int(seen[i]["segments"]) > 0, (seen, procs.dump())

    # What the broker holds for the policy is the custom model, not volley's MLP.
    probe = procs.python("probe", "-c", PROBE, broker)
    assert probe.wait(30) == 0, procs.dump()
    w = json.loads(next(x for x in procs.text(probe).splitlines() if x.startswith("{")))
    assert w["version"] > 0 and set(w["tensors"]) == CUSTOM, w
    assert not MLP & set(w["tensors"]), w
    assert w["tensors"]["trunk.2.weight"] == [64, 64], w

    # ... so volley's C policy cannot act with it: a C actor refuses those weights.
    c_actor = procs.volley("c_actor", "actor", "--broker", broker, "--id", 7)
    assert procs.wait_for(c_actor, "do not fit this actor's network", 20), procs.dump()


def _train(procs, learner):
    """Waits for the learner to end, or its env steps (its progress lines' and its last
    line's) to pass STEP_BUDGET; returns its exit code (None while it runs) and those steps.
    The wait is bounded by HANG_S and a little, as the learner's own --max-seconds."""
    rc, steps, start = None, 0, time.monotonic()
    while rc is None and steps <= STEP_BUDGET and time.monotonic() - start < HANG_S + 30:
        time.sleep(1)
        rc = learner.poll()
        found = re.findall(r"\bsteps (\d+)|^(?:not )?solved: (\d+) steps", procs.text(learner),
                           re.M)
        steps = max((int(a or b) for a, b in found), default=0)
    return rc, steps
