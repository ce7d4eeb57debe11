"""A Python actor's life as `volley actor`'s: Ctrl-C while it waits inside C
for weights ends it with exit 0 at once (the wake fd: without it the actor
never wakes; the time it took is printed, not judged); a spec the broker's
policy does not have exits 2 naming the field; a broker restart is ridden
out (segments flow to the new broker)."""
import signal
import subprocess
import time

from procs import free_port, top_kind

ENV = "volley.envs.cartpole:make_env"
HANG_S = 60  # an actor woken by SIGINT exits well within a second


def actor(procs, port, *args, name="actor"):
    return procs.python(name, "-m", "volley", "actor", "--env", ENV, "--broker",
                        f"127.0.0.1:{port}", "--envs", 4, *args)



def test_ctrl_c_while_waiting_for_weights_exits_0(procs):
    port = free_port()
    procs.broker(port)  # no learner: the actor waits for weights in C
    a = actor(procs, port)
    time.sleep(2)
    assert a.poll() is None, procs.dump()
    t0 = time.monotonic()
    a.send_signal(signal.SIGINT)
    try:  # at once when the wake fd works; HANG_S only ends an actor that never wakes
        rc = a.wait(HANG_S)
    except subprocess.TimeoutExpired:
        rc = None
    print(f"SIGINT to exit: {time.monotonic() - t0:.2f} s")
    assert rc is not None, f"hung: SIGINT did not end the wait inside C in {HANG_S} s\n" \
        + procs.dump()
    assert rc == 0, procs.dump()
    assert "Traceback" not in procs.text(a)


def test_refused_spec_exits_2(procs):
    port = free_port()
    procs.broker(port)
    learner = procs.learner(port, "--env", "cartpole", "--horizon", 64)
    # the learner's spec first (else the actor's would be the policy's, and the learner refused)
    assert procs.wait_for(learner, "training policy", 30), procs.dump()
    a = actor(procs, port, "--horizon", 32)
    assert a.wait(20) == 2, procs.dump()
    assert "horizon" in procs.text(a), procs.dump()


def test_broker_restart_is_ridden_out(procs):
    port = free_port()
    b = procs.broker(port)
    procs.learner(port)
    a = actor(procs, port, "--max-ahead", 0)
    assert procs.wait_for(a, "acting for policy", 20), procs.dump()
    time.sleep(1)
    assert procs.stop(b, signal.SIGKILL) is not None
    time.sleep(1)
    procs.broker(port)
    deadline = time.monotonic() + 30
    received = 0
    while time.monotonic() < deadline and received < 100:
        time.sleep(0.5)
        received = int(top_kind(port, "broker").get("received", 0))
    assert received >= 100, procs.dump()
    assert a.poll() is None, procs.dump()
    assert procs.stop(a, signal.SIGTERM) == 0
