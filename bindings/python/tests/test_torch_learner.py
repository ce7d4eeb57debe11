"""volley.torch.TorchLearner: the C learner's loop with the PyTorch engine,
in this process. Keywords become `volley learner` flags; run() trains with
unmodified C actors through a real broker until SIGTERM (sent here once the
weights have gone through many versions and the return has risen) and
returns 0, with Python's own signal handlers back; the engine's tensors are
the C model's names. The model here is recurrent: the torch learner trains
linear(64) lstm(64) as the C one does."""
import os
import signal
import threading
import time

import pytest

from procs import free_port, top_kind

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley import engine as E  # noqa: E402
from volley.torch import TorchLearner  # noqa: E402

pytestmark = pytest.mark.skipif(not E._lib.has("vl_learner_main_engine"),
                                reason="libvolley without include/volley/engine.h's engines")


def test_keywords_become_flags():
    tl = TorchLearner("127.0.0.1:7", env="cartpole", max_steps=100, resume=True, force=False,
                      burn_in=4, device="cpu")
    assert tl.argv == ["learner", "--broker", "127.0.0.1:7", "--policy", "default", "--env",
                       "cartpole", "--max-steps", "100", "--resume", "--burn-in", "4"]
    with pytest.raises(ValueError, match="--amp"):
        TorchLearner(amp="fp16")


def stop_when(port, pred, secs, ended):
    """SIGTERM to this process once pred(learner stats) holds, or after secs,
    unless the event ended is set first."""
    def watch():
        end = time.monotonic() + secs
        while time.monotonic() < end and not ended.is_set():
            time.sleep(0.5)
            try:
                if pred(top_kind(port, "learner")):
                    break
            except Exception:
                pass
        if not ended.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def test_trains_a_recurrent_model_in_process_with_c_actors(procs, tmp_path):
    # one run a process: the C learner's interrupted flag, once set by SIGTERM, stays set
    model = "linear(64) lstm(64)"
    port = free_port()
    broker = f"127.0.0.1:{port}"
    procs.broker(port)
    for i in (1, 2):
        procs.volley(f"actor{i}", "actor", "--broker", broker, "--id", i, "--env", "cartpole",
                     "--model", model, "--quiet")
    before = signal.getsignal(signal.SIGTERM)
    tl = TorchLearner(broker, env="cartpole", model=model, run_dir=tmp_path / "run",
                      device="cpu", threads=1, burn_in=8)
    ended = threading.Event()
    watcher = stop_when(port, lambda s: int(s.get("version", 0)) >= 30 and
                        float(s.get("mean_return", 0)) >= 60, 180, ended)
    try:
        rc = tl.run()
    finally:
        ended.set()
    watcher.join()
    assert rc == 0, procs.dump()
    assert signal.getsignal(signal.SIGTERM) is before
    w = tl.weights()
    assert "lstm.weight_ih" in w, list(w)
    assert not any(k.startswith("norm.") for k in w)
    assert (tmp_path / "run" / "checkpoints" / "default.ckpt").exists()
