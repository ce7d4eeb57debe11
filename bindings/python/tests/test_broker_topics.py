"""The broker's bound on distinct subscription topics (256) cannot be used to
starve a policy it serves: throwaway connections subscribe to 300 made-up
policy names (filling the table for good), then a learner and an actor of a
new policy start, and the actor must still receive its weights and act.
Real volley processes and a real broker; the flood comes from pyzmq
(python3-zmq) SUB sockets, as an outsider's would."""
import time

import pytest

from procs import free_port, top_kind

zmq = pytest.importorskip("zmq", reason="python3-zmq (compose/setup.sh installs it)")


def test_junk_topics_do_not_starve_a_served_policy(procs):
    port = free_port()
    procs.broker(port)
    ctx = zmq.Context()
    for c in range(5):  # 5 connections x 60 distinct names: over the 256-topic bound
        s = ctx.socket(zmq.SUB)
        s.connect(f"tcp://127.0.0.1:{port + 3}")
        for i in range(60):
            s.setsockopt(zmq.SUBSCRIBE, f"junk{c:02d}x{i:03d}".encode())
        time.sleep(0.3)
        s.close(linger=0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and \
            "bound: subscription topics full" not in procs.text(procs.procs[0]):
        time.sleep(0.1)
    broker_log = procs.text(procs.procs[0])
    assert "subscription topics full" in broker_log, procs.dump()  # the table is full

    learner = procs.learner(port, "--policy", "late", "--env", "cartpole")
    assert procs.wait_for(learner, "training policy", 30), procs.dump()
    actor = procs.volley("actor", "actor", "--broker", f"127.0.0.1:{port}", "--policy", "late",
                         "--envs", 4)
    assert procs.wait_for(actor, "acting for policy 'late'", 30), procs.dump()
    ctx.term()
