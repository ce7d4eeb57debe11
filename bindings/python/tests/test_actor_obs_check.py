"""An observation is checked per element against its own declared bounds (a
Box whose low/high differ per element), a value outside them is named
(element, value, declared range, the Dict field), and obs_check="warn" or
"off" lets an env with approximate bounds run (NaN is refused in every
mode)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import volley
from actor_envs import Dict
from procs import free_port
from volley.envs.cartpole import Box, Discrete

LOW = np.array([0.0, -10.0], np.float32)
HIGH = np.array([1.0, 10.0], np.float32)


def spaces():
    return Box(LOW, HIGH, shape=(2,), dtype=np.float32), Discrete(2)


def start(procs):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 4)
    return port


def test_spec_keeps_each_elements_bounds():
    s = volley.spec_from_spaces(*spaces())
    assert s.low.tolist() == [0.0, -10.0] and s.high.tolist() == [1.0, 10.0]
    unbounded = volley.spec_from_spaces(Box(np.array([0, -np.inf]), np.array([1, np.inf]),
                                            shape=(2,), dtype=np.float32), Discrete(2))
    assert unbounded.low[0] == 0 and np.isneginf(unbounded.low[1])
    assert unbounded.high[0] == 1 and np.isposinf(unbounded.high[1])


def test_each_element_is_checked_against_its_own_bounds(procs):
    port = start(procs)
    with volley.Actor(broker=f"127.0.0.1:{port}", spec=spaces(), num_envs=2, horizon=4) as actor:
        # 5 is inside the field's widest range [-10, 10] but outside element 0's [0, 1].
        with pytest.raises(ValueError, match=r"obs\[1\]\[0\] = 5: field 0 element \[0\] is "
                                             r"outside its declared range \[0, 1\].*--obs-check"):
            actor.act(np.array([[0.5, 0.0], [5.0, 0.0]], np.float32))
        with pytest.raises(ValueError, match=r"obs\[0\]\[1\] = -11: field 0 element \[1\] .*"
                                             r"\[-10, 10\]"):
            actor.act(np.array([[0.5, -11.0], [0.5, 0.0]], np.float32))
        # -5 is outside element 0's range but inside element 1's: taken.
        a = actor.act(np.array([[0.5, -5.0], [1.0, 10.0]], np.float32))
        assert a.shape == (2,)


def test_a_dict_field_is_named(procs):
    port = start(procs)
    spec = (Dict({"speed": Box(0.0, 1.0, shape=(1,), dtype=np.float32),
                  "grid": Box(0.0, 1.0, shape=(2, 3), dtype=np.float32)}), Discrete(2))
    with volley.Actor(broker=f"127.0.0.1:{port}", spec=spec, num_envs=1, horizon=4) as actor:
        bad = {"speed": np.array([[0.5]]), "grid": np.array([[[0, 0, 0], [0, 1.5, 0]]])}
        with pytest.raises(ValueError, match=r"obs\[0\]\[5\] = 1.5: field 1 \('grid'\) element "
                                             r"\[1, 1\] is outside its declared range \[0, 1\]"):
            actor.act(bad)


def test_warn_and_off_let_approximate_bounds_run(procs, capfd):
    port = start(procs)
    outside = np.array([[1.5, 0.0], [2.0, 0.0]], np.float32)  # like PufferLib's Box(0, 1)
    for mode in ("warn", "off"):
        with volley.Actor(broker=f"127.0.0.1:{port}", spec=spaces(), num_envs=2, horizon=4,
                          obs_check=mode) as actor:
            z = np.zeros(2)
            for _ in range(3):
                actor.act(outside)
                actor.observe(z, z, z, outside)
            with pytest.raises(ValueError, match=r"obs\[0\]\[0\] = nan: field 0 must be finite"):
                actor.act(np.array([[np.nan, 0.0], [0.5, 0.0]], np.float32))
        err = capfd.readouterr().err
        warned = err.count("is outside its declared range")
        assert warned == (1 if mode == "warn" else 0), f"{mode}: {err}"
    with pytest.raises(ValueError, match=r"obs_check: 'loud', expected one of error, warn, off"):
        volley.Actor(broker=f"127.0.0.1:{port}", spec=spaces(), obs_check="loud")


def test_the_command_line_offers_obs_check():
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = subprocess.run([sys.executable, "-m", "volley", "actor", "--help"], capture_output=True,
                         text=True, check=True, env=env).stdout
    assert "--obs-check {error,warn,off}" in out
