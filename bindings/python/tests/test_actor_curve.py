"""A Python actor under CURVE, with `volley keygen`'s certificates: with its
own key and the broker's (`python3 -m volley actor --cert --broker-key`,
volley.Actor(cert=, broker_key=)) its segments reach a C learner through a
secured broker (the learner's env steps grow); with a key the broker does
not allow, or a broker key that is not the broker's, it stops saying why in
one line (exit 2; KeyRefused from the API) instead of waiting for ever: it
stops within seconds, printed; HANG_S only ends one that waits on."""
import re
import signal
import subprocess
import time
from contextlib import contextmanager

import pytest

import volley
from procs import VOLLEY, free_port
from volley.envs.cartpole import CartPoleEnv

ENV = "volley.envs.cartpole:make_env"
HANG_S = 60


@pytest.fixture
def secured(procs, tmp_path):
    """A secured broker allowing the keys of keys/ (not those of other/) and a
    C learner taking its spec from the actors; returns (port, keys, other)."""
    keys, other = tmp_path / "keys", tmp_path / "other"
    for d in (keys, other):
        subprocess.run([VOLLEY, "keygen", str(d)], check=True, capture_output=True, timeout=20)
    port = free_port()
    broker = procs.broker(port, "--bind", "127.0.0.1", "--cert", keys / "broker.cert",
                          "--allow", keys / "allowed")
    assert procs.wait_for(broker, "listening", 10), procs.dump()
    procs.learner(port, "--cert", keys / "learner.cert", "--broker-key", keys / "broker.cert")
    return port, keys, other


def learner_steps(port, keys):
    """The learner's env steps, as `volley top` shows them with the monitor's key."""
    out = subprocess.run([VOLLEY, "top", "--once", "--kv", "--broker", f"127.0.0.1:{port}",
                          "--cert", str(keys / "monitor.cert"), "--broker-key",
                          str(keys / "broker.cert")], capture_output=True, text=True,
                         timeout=20).stdout
    m = re.search(r"kind=learner .*?env_steps=(\d+)", out)
    return int(m.group(1)) if m else 0


def python_actor(procs, port, cert, broker_key):
    return procs.python("actor", "-m", "volley", "actor", "--env", ENV, "--broker",
                        f"127.0.0.1:{port}", "--envs", 4, "--cert", cert, "--broker-key",
                        broker_key)


def refusal(procs, actor):
    """The actor's exit code and its log, once it stopped; fails as hung after HANG_S."""
    start = time.monotonic()
    try:
        rc = actor.wait(HANG_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: the refused actor still runs after {HANG_S} s\n{procs.dump()}")
    print(f"refused, exit {rc}, in {time.monotonic() - start:.1f} s")
    return rc, procs.text(actor)


@contextmanager
def hang_guard(what):
    """Fails as hung when the block runs past HANG_S (SIGALRM, which ends a wait inside C
    as Ctrl-C does)."""
    def hung(signum, frame):
        raise AssertionError(f"hung: {what} after {HANG_S} s")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_python_actor_with_its_keys_feeds_the_learner(procs, secured):
    port, keys, _ = secured
    actor = python_actor(procs, port, keys / "actor.cert", keys / "broker.cert")
    seen = []
    for _ in range(60):
        time.sleep(0.5)
        assert actor.poll() is None, procs.dump()
        seen.append(learner_steps(port, keys))
        if len(set(s for s in seen if s > 0)) >= 2:
            break
    assert len(set(s for s in seen if s > 0)) >= 2, f"env steps {seen}\n{procs.dump()}"
    assert "Traceback" not in procs.text(actor)


def test_a_key_the_broker_does_not_allow_is_refused_in_one_line(procs, secured):
    port, keys, other = secured
    rc, log = refusal(procs, python_actor(procs, port, other / "actor.cert",
                                          keys / "broker.cert"))
    said = [line for line in log.splitlines() if line.startswith("volley actor:")]
    assert rc == 2, log
    assert said == ["volley actor: CURVE: segments: the broker refused our key (ZAP status 400): "
                    "nothing is delivered until our public certificate is in the broker's "
                    "--allow directory"], log
    assert "Traceback" not in log


def test_a_wrong_broker_key_is_refused_in_one_line(procs, secured):
    port, keys, other = secured
    rc, log = refusal(procs, python_actor(procs, port, keys / "actor.cert",
                                          other / "broker.cert"))
    said = [line for line in log.splitlines() if line.startswith("volley actor:")]
    assert rc == 2 and len(said) == 1, log
    assert "the CURVE handshake with the broker failed (is --broker-key the broker's public " \
        "certificate?)" in said[0], log
    assert "Traceback" not in log


def test_the_api_raises_key_refused_and_names_bad_files(secured, tmp_path):
    port, keys, other = secured
    with volley.Actor(f"127.0.0.1:{port}", spec=CartPoleEnv(), num_envs=2,
                      cert=str(other / "actor.cert"), broker_key=str(keys / "broker.cert")) as a:
        start = time.monotonic()
        with hang_guard("sync() with a refused key"), \
                pytest.raises(volley.KeyRefused, match="the broker refused our key"):
            a.sync()
        print(f"KeyRefused in {time.monotonic() - start:.1f} s")
    with pytest.raises(ValueError, match="cannot read the certificate .*nothing.cert"):
        volley.Actor(f"127.0.0.1:{port}", spec=CartPoleEnv(), cert=str(tmp_path / "nothing.cert"),
                     broker_key=str(keys / "broker.cert"))
    with pytest.raises(ValueError, match="cert and broker_key go together"):
        volley.Actor(f"127.0.0.1:{port}", spec=CartPoleEnv(), cert=str(keys / "actor.cert"))
