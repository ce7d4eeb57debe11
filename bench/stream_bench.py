#!/usr/bin/python3
"""stream_bench: the PyTorch learner fed a stream of Game-Boy-shaped screens
(volley.envs.screens: 1x72x80, four shades, 7 buttons) through a broker, as
a user starts it, beside a plain PyTorch loop training the same network on
the same device, minibatch and epochs, in one run.

  live   build/volley broker, `python3 -m volley learner --torch --device D`
         at its defaults (its --run-dir read back for the batch, minibatch and
         epochs it chose), and the stream's sources:
           feed    (default) K feeder processes, each a volley.Actor over N
                   screen envs with a uniform random policy of its own
                   (policy_fn: no forward pass), which packs, compresses
                   and pushes every segment as actors do, a round of
                   segments each time new weights come (max_ahead 1, waiting
                   as long as the learner takes): the learner is never kept
                   waiting long, so the figure is the learner's
           actors  K `python3 -m volley actor --env volley.envs.screens:...`,
                   volley's policy (the cnn) run in C by each: what a user
                   with a Python env gets
         Over the run's steady part (after --warmup seconds) it prints env
         steps/s arrived, samples/s trained, the share dropped, updates/s,
         the mean segments an update took and its time, the learner's busy
         share as its progress line gives it, and on a GPU its utilisation
         (nvidia-smi, sampled).
  plain  the learner's own nn.Module (volley.torch.model, the cnn preset)
         trained by bench/torch_engine_bench.py's plain loop on a batch of
         the same size: to the device, values and V-trace in torch, the
         epochs of minibatches, Adam, weights back to the host.
  ratio  live samples/s trained / plain samples/s (target >= 0.7 on a GPU).

Encodings: u2 (shades 0..3, four values a byte) and u8 (0..255, a byte a
value): --encodings u2,u8.

usage: python3 bench/stream_bench.py [--device cpu|cuda] [--seconds S] [--warmup W]
         [--source feed|actors] [--sources K] [--envs N] [--encodings u2,u8]
         [--learner-args "..."]
"""
import argparse
import configparser
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from py_actor_bench import free_port  # noqa: E402

VOLLEY = os.environ.get("VOLLEY_BIN") or os.path.join(ROOT, "build", "volley")
PY = sys.executable
ENVS = {"u2": "volley.envs.screens:make_env", "u8": "volley.envs.screens:make_env_u8"}


# ---- a feeder: one process pushing screens with a random policy ----

def feed(broker, encoding, envs, actor_id):
    """Runs one feeder until SIGTERM: volley.Actor over `envs` screen envs,
    uniform random actions with their log-probs."""
    import volley
    from volley.envs.screens import BUTTONS, ScreensVectorEnv
    env = ScreensVectorEnv(envs, scale=1 if encoding == "u2" else 85, seed=actor_id)
    rng = np.random.default_rng(actor_id)
    logp = np.full(envs, -math.log(BUTTONS), np.float32)

    def policy(obs, weights):
        return rng.integers(0, BUTTONS, envs), logp

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        volley.run_actor(env, broker=broker, policy_fn=policy, actor_id=actor_id, seed=actor_id,
                         name=ENVS[encoding], max_ahead=1, wait_ms=600000)
    except (SystemExit, KeyboardInterrupt):
        pass
    return 0


# ---- the live run ----

class GpuSampler(threading.Thread):
    """nvidia-smi's utilisation.gpu every 0.5 s, while running."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu",
                                      "--format=csv,noheader,nounits", "-i", "0"],
                                     capture_output=True, text=True, timeout=5).stdout
                self.samples.append((time.time(), float(out.split()[0])))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                return
            self.stop.wait(0.5)


def rows(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def busy_share(log):
    """The last 'busy N%' the learner's progress line printed, or None."""
    last = None
    try:
        with open(log) as f:
            for line in f:
                i = line.find(" busy ")
                if i >= 0:
                    try:
                        last = float(line[i + 6:].split("%")[0])
                    except ValueError:
                        pass
    except OSError:
        pass
    return last


def live(a, encoding, tmp):
    port = free_port()
    broker = f"127.0.0.1:{port}"
    run = os.path.join(tmp, f"run-{encoding}")
    logs = {k: open(os.path.join(tmp, f"{k}-{encoding}.log"), "w")
            for k in ("broker", "learner", "sources")}
    procs = [subprocess.Popen([VOLLEY, "broker", "--port", str(port), "--quiet"],
                              stdout=logs["broker"], stderr=subprocess.STDOUT)]
    time.sleep(0.3)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(ROOT, "bindings", "python"), os.environ.get("PYTHONPATH", "")]))
    learner = [PY, "-m", "volley", "learner", "--torch", "--device", a.device, "--broker", broker,
               "--run-dir", run] + shlex.split(a.learner_args)
    procs.append(subprocess.Popen(learner, stdout=logs["learner"], stderr=subprocess.STDOUT,
                                  env=env))
    for i in range(a.sources):
        if a.source == "feed":
            cmd = [PY, os.path.abspath(__file__), "--feed", broker, "--encoding", encoding,
                   "--envs", str(a.envs), "--id", str(i + 1)]
        else:
            cmd = [PY, "-m", "volley", "actor", "--env", ENVS[encoding], "--broker", broker,
                   "--id", str(i + 1), "--seed", str(i + 1)]
        procs.append(subprocess.Popen(cmd, stdout=logs["sources"], stderr=subprocess.STDOUT,
                                      env=env))
    gpu = GpuSampler() if a.device.startswith("cuda") and shutil.which("nvidia-smi") else None
    if gpu:
        gpu.start()
    metrics = os.path.join(run, "metrics.jsonl")
    t0 = time.time()
    try:
        while time.time() - t0 < a.seconds:
            time.sleep(0.5)
            if procs[1].poll() is not None:
                break
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGINT if p is procs[1] else signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        if gpu:
            gpu.stop.set()
        for f in logs.values():
            f.close()
    rs = [r for r in rows(metrics) if r.get("uptime_s") is not None]
    start = [r for r in rs if r["uptime_s"] >= a.warmup]
    if len(start) < 2 or start[-1]["version"] <= start[0]["version"]:
        start = [r for r in rs if r["version"] >= 1]  # a slow learner: from its first update
    if len(start) < 2 or start[-1]["version"] <= start[0]["version"]:
        tail = open(os.path.join(tmp, f"learner-{encoding}.log")).read()[-1500:]
        sys.exit(f"stream_bench {encoding}: the learner took fewer than 2 updates in {a.seconds} s; "
                 f"its log ends:\n{tail}")
    r0, r1 = start[0], start[-1]
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(run, "config.ini"))
    sect = cfg[cfg.sections()[0]] if cfg.sections() else {}
    dt = r1["uptime_s"] - r0["uptime_s"]
    trained = r1["segments_trained"] - r0["segments_trained"]
    dropped = r1["segments_dropped"] - r0["segments_dropped"]
    updates = r1["version"] - r0["version"]
    T = int(sect.get("horizon", 64))
    out = dict(dt=dt, arrived=(r1["env_steps"] - r0["env_steps"]) / dt,
               trained=trained * T / dt, dropped=dropped / max(1, trained + dropped),
               updates=updates / dt, seg_per_update=trained / max(1, updates),
               update_ms=dt / max(1, updates) * 1e3, busy=busy_share(logs["learner"].name),
               epochs=int(sect.get("epochs", 4)), minibatch=int(sect.get("minibatch", 256)),
               batch=int(sect.get("batch", 0) or 0), T=T, total_dropped=r1["segments_dropped"])
    if gpu and gpu.samples:
        u = [v for t, v in gpu.samples if t - t0 >= a.warmup]
        out["gpu_util"] = sum(u) / len(u) if u else float("nan")
    return out


# ---- the plain loop on the same shapes ----

def plain(a, encoding, n, T, epochs, minibatch, threads):
    import torch
    from torch_engine_bench import Plain, arrays, best_ms
    from volley import engine as E
    from volley.torch.model import build
    torch.set_num_threads(threads)
    device = torch.device(a.device)
    fields = [((1, 72, 80), encoding)]
    cfg = E.config_default(fields, 7, horizon=T, model="cnn").replace(
        batch_segments=n, epochs=epochs, minibatch=minibatch)
    module = build("cnn", fields, cfg.action, seed=1)
    p = Plain(module, cfg, arrays(cfg, n, 7), device)
    ms = best_ms(p.update, 2, 2 if a.quick else 3, device)
    return dict(update_ms=ms, samples=n * T / ms * 1e3)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--seconds", type=float, default=40.0, help="each live run (40)")
    p.add_argument("--warmup", type=float, default=10.0, help="left out of the figures (10)")
    p.add_argument("--source", choices=("feed", "actors"), default="feed")
    p.add_argument("--sources", type=int, default=0,
                   help="feeders or actors (0: the cores less one for the learner, at least 1)")
    p.add_argument("--envs", type=int, default=0,
                   help="screen envs a feeder steps (0: 32 on a GPU, 4 on the CPU)")
    p.add_argument("--encodings", default="u2,u8")
    p.add_argument("--learner-args", default="", help="more flags for the learner")
    p.add_argument("--threads", type=int, default=1, help="the plain loop's torch CPU threads")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--feed", metavar="BROKER", help=argparse.SUPPRESS)
    p.add_argument("--encoding", default="u2", help=argparse.SUPPRESS)
    p.add_argument("--id", type=int, default=1, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.feed:
        return feed(a.feed, a.encoding, a.envs, a.id)
    a.sources = a.sources or max(1, (os.cpu_count() or 2) - 1)
    a.envs = a.envs or (32 if a.device.startswith("cuda") else 4)
    print(f"stream_bench: device {a.device}, {a.sources} {a.source} sources"
          f"{f' x {a.envs} envs' if a.source == 'feed' else ''}, {a.seconds:.0f} s each "
          f"({a.warmup:.0f} s warm-up left out), {os.cpu_count()} cores", flush=True)
    tmp = tempfile.mkdtemp(prefix="volley-stream-")
    worst = math.inf
    for enc in a.encodings.split(","):
        lv = live(a, enc, tmp)
        n = max(1, round(lv["seg_per_update"]))
        pl = plain(a, enc, n, lv["T"], lv["epochs"], lv["minibatch"], a.threads)
        ratio = lv["trained"] / pl["samples"]
        worst = min(worst, ratio)
        gpu = f"  gpu {lv['gpu_util']:.0f}%" if "gpu_util" in lv else ""
        busy = f"  busy {lv['busy']:.0f}%" if lv["busy"] is not None else ""
        print(f"stream {enc} live: arrived {lv['arrived']:8.0f} steps/s  trained "
              f"{lv['trained']:8.0f} samples/s  dropped {lv['dropped'] * 100:4.1f} %  "
              f"{lv['updates']:5.2f} updates/s of {lv['seg_per_update']:.0f} segments "
              f"({lv['update_ms']:.0f} ms; epochs {lv['epochs']}, minibatch "
              f"{lv['minibatch']}){busy}{gpu}", flush=True)
        print(f"stream {enc} plain: {pl['samples']:8.0f} samples/s ({pl['update_ms']:.0f} ms "
              f"an update of {n} segments)  ratio {ratio:.2f} (target >= 0.7 on a GPU)",
              flush=True)
    print(f"stream worst ratio {worst:.2f}; logs in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
