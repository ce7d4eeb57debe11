"""volley.torch.TorchLearner: the C learner's loop with the PyTorch engine,
in this process. Keywords become `volley learner` flags; run() trains with
unmodified C actors through a real broker until SIGTERM (sent here once the
weights have gone through 30 versions and the return has risen to 60, which
the learner's stats and its metrics.jsonl must show; else once VERSION_BUDGET
versions pass without it, and the case fails) and returns 0, with Python's
own signal handlers back; the engine's tensors are the C model's names. The
model here is recurrent: the torch learner trains linear(64) lstm(64) as the
C one does."""
import json
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


# The run's target: many versions published, the return well above a random policy's (about
# 22); one that does not learn (lr 0) passes VERSION_BUDGET at about 22. Batches of 32 segments
# keep an update short. Measured on 2 busy cores: return >= 60 by version 9, version 30 after
# 90 s. HANG_S only ends a run that hangs.
TARGET_VERSION, TARGET_RETURN, VERSION_BUDGET, BATCH = 30, 60, 60, 32
HANG_S = 270  # under ctest's 300 s for the file


def reached(row):
    """True when a learner stats row (top's or metrics.jsonl's) shows the target."""
    ret = row.get("mean_return", row.get("return_mean"))
    return int(row.get("version") or 0) >= TARGET_VERSION and float(ret or 0) >= TARGET_RETURN


def stop_when(port, ended):
    """SIGTERM to this process once the learner's stats show the target, or its version
    passes VERSION_BUDGET, or HANG_S pass, unless the event ended is set first. Returns the
    thread and a dict that says which came (why) and the last stats seen."""
    seen = {"why": "ended", "stats": {}}

    def watch():
        end = time.monotonic() + HANG_S
        while not ended.is_set():
            if time.monotonic() > end:
                seen["why"] = "hung"
                break
            time.sleep(0.5)
            try:
                stats = top_kind(port, "learner")
            except Exception:
                continue
            seen["stats"] = stats or seen["stats"]
            if reached(stats):
                seen["why"] = "reached"
                break
            if int(stats.get("version", 0)) > VERSION_BUDGET:
                seen["why"] = "over budget"
                break
        if not ended.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t, seen


def metrics(run):
    """The rows the learner wrote to RUN/metrics.jsonl."""
    path = run / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


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
    run = tmp_path / "run"
    tl = TorchLearner(broker, env="cartpole", model=model, run_dir=run, device="cpu",
                      threads=1, burn_in=8, batch=BATCH)
    ended = threading.Event()
    start = time.monotonic()
    watcher, seen = stop_when(port, ended)
    try:
        rc = tl.run()
    finally:
        ended.set()
    watcher.join()
    rows = metrics(run)
    first = next((r for r in rows if reached(r)), None)
    keys = ("env_steps", "version", "return_mean", "window", "uptime_s")
    print(f"stopped: {seen['why']} after {time.monotonic() - start:.0f} s; first metrics row "
          f"at the target: {first and {k: first[k] for k in keys}}")
    assert seen["why"] != "hung", f"hung: neither the target nor the budget in {HANG_S} s " \
        f"{seen['stats']}\n{procs.dump()}"
    assert seen["why"] == "reached", f"version >= {TARGET_VERSION} and return >= " \
        f"{TARGET_RETURN} not reached within {VERSION_BUDGET} versions: {seen['stats']}\n" \
        f"{procs.dump()}"
    # the learner's own record says the same: a row at the target, within the budget
    assert first is not None and first["version"] <= VERSION_BUDGET, (first, rows[-3:])
    assert rc == 0, procs.dump()
    assert signal.getsignal(signal.SIGTERM) is before
    w = tl.weights()
    assert "lstm.weight_ih" in w, list(w)
    assert not any(k.startswith("norm.") for k in w)
    assert (run / "checkpoints" / "default.ckpt").exists()
