#!/usr/bin/python3
"""torch_engine_bench: the PyTorch engine's whole step inside the C learner's
loop beside a plain PyTorch loop and the C engine, on the same batches, in
one run.

  engine  vl_engine_update with TorchEngine's ops (volley.engine.CEngine over
          volley.torch_engine.TorchEngine): C normalises and hands the batch
          over, the engine gathers it into staging memory, copies it to the
          device, takes the update (V-trace, PPO epochs, Adam), and the
          publication's weights copy to the host follows (vl_engine_tensor)
  plain   the same nn.Module trained by a loop one would write without
          volley, fed the same batches from host memory (u8 rows as bytes,
          floats as floats): copy to the device, V-trace in torch, the same
          PPO epochs and minibatch sizes, Adam, weights back to the host
  c       the C engine (vl_engine_new with ops NULL) on the CPU

Cases: cartpole-mlp (obs 4 f32, mlp, 16 x 64), atari-cnn (4x84x84 u8, the
cnn preset, 4 x 64 = one minibatch of 256 samples, 1 epoch) and
lstm (obs 4 f32, linear(256) lstm(256), 16 x 64); with --cases screens-u2, a GPU learner's
batch (176 x 64 1x72x80 u2 screens, the cnn, 4 epochs of 2048). Each figure is the best
of RUNS runs of UPDATES updates; overhead = engine / plain - 1 (target
<= 10 %). Then the bytes moved host->device per sample and per batch, and
their time on the device, for 4x84x84 u8 and a 72x80 u2 screen: as the
engine moves them (OBS_PACKED: u8 a byte a value, u2 four values a byte,
counted from a batch's own gather), one byte a value (the stored rows) and
float32.

--agree instead takes one update of the torch engine on the device and of
the C engine on the same batch, for mlp, cnn, lstm, a box and a
multi-discrete space, and prints the largest relative errors of the loss
figures and of the weights after it (fails above 1e-3: a GPU's sums differ
from the CPU's in their last bits, TF32 off).

usage: python3 bench/torch_engine_bench.py [--device cpu|cuda] [--quick] [--agree]
"""
import argparse
import copy
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
    from torch import nn  # noqa: E402
except ImportError as e:
    sys.exit(f"torch_engine_bench: needs torch ({e})")

from volley import ActionSpace  # noqa: E402
from volley import engine as E  # noqa: E402
from volley import _lib  # noqa: E402
from volley._types import TransportTensor  # noqa: E402
from volley.torch_engine import TorchEngine  # noqa: E402

CASES = [  # name, fields, action, model, n, T, changes to the learner's defaults
    ("cartpole-mlp", [((4,), "f32")], 2, "", 16, 64, {}),
    ("atari-cnn", [((4, 84, 84), "u8")], 6, "cnn", 4, 64, dict(epochs=1, minibatch=256)),
    ("lstm", [((4,), "f32")], 2, "linear(256) lstm(256)", 16, 64, {}),
]
# A GPU learner's batch: 176 segments of 72x80 screens, minibatch 2048 (--cases screens-u2; on
# a CPU one update of it takes minutes).
GPU_CASES = [
    ("screens-u2", [((1, 72, 80), "u2")], 7, "cnn", 176, 64, dict(minibatch=2048)),
]
AGREE = [  # name, fields, action, model, n, T, changes
    ("mlp", [((4,), "f32")], 2, "", 6, 16, dict(epochs=2, minibatch=32)),
    ("cnn", [((2, 10, 10), "u8")], 3, "cnn", 4, 8, dict(epochs=2, minibatch=16)),
    ("lstm", [((4,), "f32")], 2, "linear(64) lstm(64)", 6, 16,
     dict(epochs=2, minibatch=32, burn_in=4)),
    ("box", [((3,), "f32")], ActionSpace.box([-2, -2], [2, 2]), "", 6, 16,
     dict(epochs=2, minibatch=32)),
    ("multi-discrete", [((5,), "f32")], ActionSpace.multi_discrete([3, 2, 4]), "", 6, 16,
     dict(epochs=2, minibatch=32)),
]


def config(case):
    name, fields, action, model, n, T, changes = case
    cfg = E.config_default(fields, action, horizon=T, model=model)
    return cfg.replace(batch_segments=n, **changes)


def arrays(cfg, n, seed):
    """n segments of cfg's spec: observations of each field's range, valid
    actions, ends (half of them time limits, with final observations)."""
    r = np.random.default_rng(seed)
    T = cfg.horizon
    cols = []
    for shape, enc in cfg.fields:
        top = {"u8": 256, "u2": 4, "u1": 2}.get(enc)
        k = int(np.prod(shape))
        cols.append(r.integers(0, top, (n, T + 1, k)).astype(np.float32) if top else
                    r.normal(size=(n, T + 1, k)).astype(np.float32))
    obs = np.concatenate(cols, 2)
    a = cfg.action
    actions = (r.normal(size=(n, T, a.dims)) if a.is_box else
               np.stack([r.integers(0, int(k), (n, T)) for k in a.n[:a.dims]], -1))
    dones = (r.random((n, T)) < 0.05).astype(np.float32)
    trunc = (dones * (r.random((n, T)) < 0.5)).astype(np.uint8)
    return dict(obs=obs, actions=actions.astype(np.float32),
                rewards=r.normal(size=(n, T)).astype(np.float32), dones=dones,
                logp=(-0.7 - 0.3 * r.random((n, T))).astype(np.float32), truncated=trunc,
                final_obs=obs[:, 1:] * trunc[..., None])


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def publish(eng):
    """What the learner's publication reads: every tensor's table entry."""
    t = TransportTensor()
    for i in range(_lib.lib.vl_engine_tensor_count(eng.ptr)):
        _lib.lib.vl_engine_tensor(eng.ptr, i, E.ctypes.byref(t))


class Plain:
    """The plain loop: the engine's nn.Module (a copy) trained in torch alone."""

    def __init__(self, module, cfg, a, device):
        self.m, self.cfg, self.dev = copy.deepcopy(module).to(device), cfg, device
        self.opt = torch.optim.Adam(self.m.parameters(), lr=cfg.lr, eps=1e-5)
        u8 = all(enc != "f32" for _, enc in cfg.fields)
        obs = a["obs"].astype(np.uint8) if u8 else a["obs"]
        self.host = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in
                     dict(obs=obs, actions=a["actions"], rewards=a["rewards"],
                          dones=a["dones"], logp=a["logp"]).items()}
        if device.type == "cuda":
            self.host = {k: v.pin_memory() for k, v in self.host.items()}
        self.gen = torch.Generator().manual_seed(1)

    def _out(self, obs, reset):
        if self.m.state_size:
            out, v, _ = self.m.forward_seq(obs, None, reset)
            return out, v
        B, L = obs.shape[:2]
        out, v = self.m(obs.reshape(B * L, -1))
        return out.reshape(B, L, -1), v.reshape(B, L)

    def update(self):
        c, d = self.cfg, {k: v.to(self.dev, non_blocking=True) for k, v in self.host.items()}
        obs = d["obs"].float()
        n, T = d["rewards"].shape
        reset = None
        if self.m.state_size:
            reset = torch.zeros(n, T + 1, dtype=torch.bool, device=self.dev)
            reset[:, 1:] = d["dones"] != 0
        with torch.no_grad():
            out, values = self._out(obs, reset)
            old = self.m.dist(out[:, :T].reshape(n * T, -1)).log_prob(
                d["actions"].reshape(n * T, -1)).reshape(n, T)
            rho = (old - d["logp"]).exp()
            disc = c.gamma * (1 - d["dones"])
            rc, cc = rho.clamp(max=c.rho_bar), c.lam * rho.clamp(max=c.c_bar)
            delta = rc * (d["rewards"] + disc * values[:, 1:] - values[:, :-1])
            acc, vs = torch.zeros_like(values[:, 0]), torch.empty_like(d["rewards"])
            for t in range(T - 1, -1, -1):
                acc = delta[:, t] + disc[:, t] * cc[:, t] * acc
                vs[:, t] = values[:, t] + acc
            vs_next = torch.cat([vs[:, 1:], values[:, -1:]], 1)
            adv = rc * (d["rewards"] + disc * vs_next - values[:, :-1])
        for _ in range(c.epochs):
            if self.m.state_size:  # whole segments a minibatch
                per = max(1, c.minibatch // T)
                for mb in torch.randperm(n, generator=self.gen).split(per):
                    mb = mb.to(self.dev)
                    out, v = self._out(obs[mb], reset[mb])
                    self._step(out[:, :T].reshape(-1, out.shape[-1]), v[:, :T].reshape(-1),
                               d["actions"][mb].reshape(-1, d["actions"].shape[-1]),
                               old[mb].reshape(-1), vs[mb].reshape(-1), adv[mb].reshape(-1))
            else:
                flat = obs[:, :T].reshape(n * T, -1)
                for mb in torch.randperm(n * T, generator=self.gen).split(c.minibatch):
                    mb = mb.to(self.dev)
                    out, v = self.m(flat[mb])
                    self._step(out, v, d["actions"].reshape(n * T, -1)[mb],
                               old.reshape(-1)[mb], vs.reshape(-1)[mb], adv.reshape(-1)[mb])
        return {k: p.detach().cpu() for k, p in self.m.state_dict().items()}

    def _step(self, out, v, actions, old, vs, adv):
        c = self.cfg
        dist = self.m.dist(out)
        ratio = (dist.log_prob(actions) - old).exp()
        adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
        pg = -torch.min(ratio * adv, ratio.clamp(1 - c.clip, 1 + c.clip) * adv).mean()
        loss = pg + c.vf_coef * 0.5 * ((v - vs) ** 2).mean() - c.ent_coef * dist.entropy().mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.m.parameters(), c.max_grad_norm)
        self.opt.step()


def best_ms(fn, runs, updates, device):
    """Best of runs of `updates` calls, ms per call (one warm-up call first)."""
    fn()
    sync(device)
    best = math.inf
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(updates):
            fn()
        sync(device)
        best = min(best, (time.perf_counter() - t0) / updates * 1e3)
    return best


def bench_case(case, device, runs, updates):
    name, fields, action, model, n, T, _ = case
    cfg = config(case)
    a = arrays(cfg, n, 7)
    batch = E.make_batch(cfg, n, a)
    te = TorchEngine(cfg, device=device)
    plain = Plain(te.module, cfg, a, device)
    eng = E.CEngine(cfg, te)

    def engine_step():
        eng.update(batch)
        publish(eng)

    t_eng = t_plain = math.inf
    for _ in range(runs):  # alternate, so that neither gets the quieter half of a busy machine
        t_eng = min(t_eng, best_ms(engine_step, 1, updates, device))
        t_plain = min(t_plain, best_ms(plain.update, 1, updates, device))
    c_eng = E.CEngine(cfg)
    t_c = math.nan if n * T > 4096 else \
        best_ms(lambda: (c_eng.update(batch), publish(c_eng)), runs, updates, device)
    samples = n * T
    over = t_eng / t_plain - 1
    print(f"step {name:12s} {n}x{T}: engine {t_eng:8.2f} ms ({samples / t_eng * 1e3:8.0f} "
          f"samples/s)  plain {t_plain:8.2f} ms ({samples / t_plain * 1e3:8.0f} samples/s)  "
          f"overhead {over * 100:+6.1f} %  C engine (cpu) {t_c:8.2f} ms "
          f"({samples / t_c * 1e3:8.0f} samples/s)", flush=True)
    eng.close(), c_eng.close(), batch.close()
    return over


def h2d(device, quick):
    """Bytes and time host->device per batch of 256 samples (T+1 rows of 4 segments of 64)."""
    rows = 4 * 65
    for name, shape, enc in (("4x84x84 u8", (4, 84, 84), "u8"), ("72x80 u2", (1, 72, 80), "u2")):
        values = int(np.prod(shape))
        cfg = E.config_default([(shape, enc)], 2, horizon=64, model="linear(16)").replace(
            batch_segments=4)
        batch = E.make_batch(cfg, 4, arrays(cfg, 4, 1))
        packed = batch.nbytes(E.OBS_PACKED) // rows  # what the engine moves
        batch.close()
        forms = [(f"{enc} as the engine moves it", packed), ("one byte a value", values),
                 ("float32", 4 * values)]
        for form, per_row in forms:
            host = torch.empty(rows * per_row, dtype=torch.uint8,
                               pin_memory=device.type == "cuda")
            ms = best_ms(lambda: host.to(device, non_blocking=True), 1 if quick else 5,
                         3 if quick else 20, device) if device.type == "cuda" else float("nan")
            print(f"h2d {name:10s} {form:36s} {per_row * rows / 256:9.0f} bytes/sample "
                  f"{per_row * rows / 1048576:7.2f} MiB/batch  {ms:7.3f} ms/batch", flush=True)


def agree(device):
    """One update each of the torch engine on device and the C engine on the same batch."""
    worst = 0.0
    for case in AGREE:
        name, n = case[0], case[4]
        cfg = config(case)
        a = arrays(cfg, n, 7)
        if cfg.state_size:
            a["state"] = (0.3 * np.random.default_rng(3).normal(
                size=(n, cfg.state_size))).astype(np.float32)
        b1, b2 = E.make_batch(cfg, n, a), E.make_batch(cfg, n, a)
        c_eng, t_eng = E.CEngine(cfg), E.CEngine(cfg, TorchEngine(cfg, device=device))
        c_fig, c_sums = c_eng.update(b1)
        t_fig, t_sums = t_eng.update(b2)
        scale = max(abs(c_fig["policy_loss"]), abs(c_fig["value_loss"]), 1.0)
        fig_err = max(abs(t_fig[k] - c_fig[k]) / scale for k in c_fig
                      if math.isfinite(c_fig[k]))
        cw, tw = c_eng.tensors(), t_eng.tensors()
        w_err = max(float(np.abs(tw[k] - cw[k]).max() / max(np.abs(cw[k]).max(), 1e-30))
                    for k in cw)
        s_err = float(np.abs(t_sums - c_sums).max() / max(np.abs(c_sums).max(), 1e-30))
        worst = max(worst, fig_err, w_err, s_err)
        print(f"agree {name:15s} {device.type}: loss figures {fig_err:.1e}  weights {w_err:.1e}  "
              f"priorities {s_err:.1e}", flush=True)
        c_eng.close(), t_eng.close(), b1.close(), b2.close()
    print(f"agree worst {worst:.1e} (limit 1e-3)")
    return worst <= 1e-3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true", help="one run of one update, for tests")
    p.add_argument("--agree", action="store_true", help="the agreement check instead")
    p.add_argument("--runs", type=int, default=3, help="runs per arm, best kept (3)")
    p.add_argument("--cases", default="",
                   help="only these cases (comma-separated names; screens-u2 only when named)")
    a = p.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if not _lib.has("vl_engine_new"):
        sys.exit("torch_engine_bench: libvolley has no vl_engine_new (include/volley/engine.h)")
    print(f"torch {torch.__version__}, device {device}"
          f"{' ' + torch.cuda.get_device_name(0) if device.type == 'cuda' else ''}, "
          f"{torch.get_num_threads()} cpu threads", flush=True)
    if a.agree:
        return 0 if agree(device) else 1
    runs = 1 if a.quick else a.runs
    worst = max(bench_case(c, device, runs, 1 if a.quick else
                           {"cartpole-mlp": 10}.get(c[0], 3), ) for c in CASES + GPU_CASES
                if c[0] in a.cases.split(",") or (not a.cases and c in CASES))
    print(f"overhead worst {worst * 100:+.1f} % (target <= 10 %)")
    h2d(device, a.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
