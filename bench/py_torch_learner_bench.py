#!/usr/bin/python3
"""py_torch_learner_bench: volley's torch engine update beside a plain
PyTorch loop, the same model on the same batches, in ms per update and the
overhead of volley's path (goal: 20 % or less).

  plain    a PyTorch learner as one would write it without volley: the
           batch's NumPy arrays through torch.from_numpy, values and
           log-probs recomputed, V-trace in torch (a reverse loop over T,
           vectorized over segments), PPO epochs (clipped surrogate, value
           loss, entropy, Adam, gradient-norm clip)
  volley   volley.torch_engine.TorchEngine's update as the C learner's loop
           calls it (vl_engine_update on a batch of vl_engine_batch_new):
           the arrays gathered by C, volley.vtrace (the C kernel) for
           V-trace, the learner's minibatch order

Cases (each a fixed batch generated from a seed, both arms fed the same one,
the same initial weights and minibatch order):
  cartpole-mlp   obs 4 f32, mlp, 16 segments x 64 steps, 4 epochs of 256
                 (the C learner's defaults)
  catch-pixels   1x16x16 u2 frames, the cnn preset (for frames under 36x36
                 its scaled-down torso: conv(16,3,2) relu conv(32,3,1) relu
                 linear(256) relu), 16 x 64, 4 epochs of 256
  atari-cnn      4x84x84 u8 frames, the cnn preset, 4 segments x 64 steps =
                 one minibatch of 256, 1 epoch
The two arms' V-trace results are compared first (they must agree to 1e-4).
Each time is the best of RUNS runs of UPDATES updates, torch on --threads
threads (default 1).

usage: /usr/bin/python3 bench/py_torch_learner_bench.py [--quick] [--threads N]
"""
import argparse
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
    sys.exit(f"py_torch_learner_bench: needs torch ({e}; Debian: python3-torch)")

import volley  # noqa: E402
from volley import engine as E  # noqa: E402
from volley.torch import build  # noqa: E402
from volley.torch_engine import TorchEngine  # noqa: E402


class Hyper:
    """The plain arm's hyperparameters: the C learner's defaults."""

    def __init__(self, epochs=4, lr=1e-3, minibatch=256):
        self.epochs, self.lr, self.minibatch = epochs, lr, minibatch
        self.gamma, self.lam, self.clip, self.ent_coef, self.vf_coef = 0.99, 0.95, 0.2, 0.01, 0.5
        self.max_grad_norm, self.rho_bar, self.c_bar = 0.5, 1.0, 1.0

CASES = [  # name, fields, actions, model, n, T, epochs
    ("cartpole-mlp", [((4,), "f32")], 2, "mlp", 16, 64, 4),
    ("catch-pixels", [((1, 16, 16), "u2")], 3, "cnn", 16, 64, 4),
    ("atari-cnn", [((4, 84, 84), "u8")], 6, "cnn", 4, 64, 1),
]


def make_model(case, seed):
    """The case's network, built by volley.torch (the C model's initial weights for seed)."""
    name, fields, A, spec, n, T, epochs = case
    return build(spec, fields, A, seed=seed)


def make_batch(case, seed):
    """A fixed batch of the transport's arrays: obs of the fields' ranges,
    rewards, ends (1 % terminated, 0.3 % truncated), behaviour log-probs."""
    name, fields, A, spec, n, T, epochs = case
    rng = np.random.default_rng(seed)
    (shape, enc), = fields
    D = int(np.prod(shape))
    hi = {"u8": 256, "u2": 4, "u1": 2}.get(enc)
    obs = (rng.integers(0, hi, (n, T + 1, D)) if hi else rng.standard_normal((n, T + 1, D)))
    dones = (rng.random((n, T)) < 0.013).astype(np.float32)
    truncated = ((rng.random((n, T)) < 0.25) & (dones > 0)).astype(np.uint8)
    final = np.where(truncated[..., None] > 0, obs[:, 1:], 0)
    return volley.Batch({
        "obs": obs.astype(np.float32),
        "actions": rng.integers(0, A, (n, T)).astype(np.int32),
        "rewards": rng.standard_normal((n, T)).astype(np.float32),
        "dones": dones,
        "truncated": truncated,
        "logp": (np.log(1 / A) + 0.1 * rng.standard_normal((n, T))).astype(np.float32),
        "final_obs": final.astype(np.float32),
    })


def vtrace_torch(values, rewards, dones, log_rhos, boot, h):
    """V-trace with truncation, in torch: values [n, T+1], the rest [n, T]."""
    T = rewards.shape[1]
    rho = log_rhos.exp()
    rho_c, c = rho.clamp(max=h.rho_bar), h.lam * rho.clamp(max=h.c_bar)
    disc = h.gamma * (1 - dones)
    boot_term = h.gamma * boot * dones
    delta = rho_c * (rewards + disc * values[:, 1:] + boot_term - values[:, :-1])
    acc, out = torch.zeros_like(values[:, 0]), torch.empty_like(rewards)
    for t in range(T - 1, -1, -1):
        acc = delta[:, t] + disc[:, t] * c[:, t] * acc
        out[:, t] = acc
    vs = values[:, :-1] + out
    vs_next = torch.cat([vs[:, 1:], values[:, -1:]], 1)
    adv = rho_c * (rewards + disc * vs_next + boot_term - values[:, :-1])
    return vs, adv


def plain_update(model, opt, b, h, gen):
    """The plain loop's update: what the torch engine's update does, in torch alone."""
    n, T = b.actions.shape
    obs = torch.from_numpy(b.obs)
    actions = torch.from_numpy(b.actions).long()
    D = obs.shape[-1]
    with torch.no_grad():
        logits, values = model(obs.reshape(-1, D))
        logits, values = logits.reshape(n, T + 1, -1), values.reshape(n, T + 1)
        logp = torch.log_softmax(logits[:, :T], -1).gather(-1, actions[..., None])[..., 0]
        cut = torch.from_numpy(b.truncated.astype(bool))
        boot = torch.zeros(n, T)
        if cut.any():
            boot[cut] = model(torch.from_numpy(b.final_obs)[cut])[1]
        vs, adv = vtrace_torch(values, torch.from_numpy(b.rewards), torch.from_numpy(b.dones),
                               logp - torch.from_numpy(b.logp), boot, h)
    obs, actions = obs[:, :T].reshape(n * T, D), actions.reshape(-1)
    old_logp, vs, adv = logp.reshape(-1), vs.reshape(-1), adv.reshape(-1)
    for _ in range(h.epochs):
        for mb in torch.randperm(n * T, generator=gen).split(h.minibatch):
            logits, v = model(obs[mb])
            logp_all = torch.log_softmax(logits, -1)
            ratio = (logp_all.gather(-1, actions[mb, None])[:, 0] - old_logp[mb]).exp()
            m_adv = (adv[mb] - adv[mb].mean()) / (adv[mb].std(unbiased=False) + 1e-8)
            pg = -torch.min(ratio * m_adv, ratio.clamp(1 - h.clip, 1 + h.clip) * m_adv).mean()
            vf = 0.5 * ((v - vs[mb]) ** 2).mean()
            ent = -(logp_all.exp() * logp_all).sum(-1).mean()
            opt.zero_grad(set_to_none=True)
            (pg + h.vf_coef * vf - h.ent_coef * ent).backward()
            nn.utils.clip_grad_norm_(model.parameters(), h.max_grad_norm)
            opt.step()
    return float(pg), float(vf), float(ent)


def volley_engine(case, b, h):
    """The torch engine for the case inside vl_engine_new, and the case's batch
    made by vl_engine_batch_new: (engine, C wrapper, batch)."""
    name, fields, A, spec, n, T, epochs = case
    cfg = E.config_default(fields, A, horizon=T, model=spec).replace(
        epochs=h.epochs, lr=h.lr, minibatch=h.minibatch, batch_segments=n, norm_obs=False,
        norm_reward=False, seed=1)
    eng = TorchEngine(cfg, device="cpu")
    arrays = dict(obs=b.obs, actions=b.actions[..., None].astype(np.float32), rewards=b.rewards,
                  dones=b.dones, logp=b.logp, truncated=b.truncated, final_obs=b.final_obs)
    return eng, E.CEngine(cfg, eng), E.make_batch(cfg, n, arrays)


def check_vtrace(case, b, h):
    """The two arms' V-trace agree on the case's batch: returns the largest
    difference."""
    eng, wrapper, batch = volley_engine(case, b, h)
    t = eng.targets(eng.load_batch(batch))
    vs_v, adv_v = torch.from_numpy(t["vs"]).reshape(-1), torch.from_numpy(t["adv"]).reshape(-1)
    model = eng.module
    n, T = b.actions.shape
    with torch.no_grad():
        obs = torch.from_numpy(b.obs)
        logits, values = model(obs.reshape(-1, obs.shape[-1]))
        logits, values = logits.reshape(n, T + 1, -1), values.reshape(n, T + 1)
        acts = torch.from_numpy(b.actions).long()
        logp = torch.log_softmax(logits[:, :T], -1).gather(-1, acts[..., None])[..., 0]
        cut = torch.from_numpy(b.truncated.astype(bool))
        boot = torch.zeros(n, T)
        if cut.any():
            boot[cut] = model(torch.from_numpy(b.final_obs)[cut])[1]
        vs, adv = vtrace_torch(values, torch.from_numpy(b.rewards), torch.from_numpy(b.dones),
                               logp - torch.from_numpy(b.logp), boot, h)
    wrapper.close()
    return max(float((vs.reshape(-1) - vs_v).abs().max()),
               float((adv.reshape(-1) - adv_v).abs().max()))


def time_arm(update, runs, updates):
    """Best of runs of `updates` calls, in ms per update."""
    best = math.inf
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(updates):
            losses = update()
        best = min(best, (time.perf_counter() - t0) / updates * 1e3)
        if not np.isfinite(losses).all():
            sys.exit("py_torch_learner_bench: an update diverged")
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one update of each, for tests")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    p.add_argument("--runs", type=int, default=3, help="runs per arm, best kept (3)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), cpu; ms per update, best of "
          f"{1 if a.quick else a.runs}")
    worst = -math.inf
    for case in CASES:
        name, fields, A, spec, n, T, epochs = case
        h = Hyper(epochs=epochs, lr=3e-4 if spec == "cnn" else 1e-3)
        b = make_batch(case, 7)
        diff = check_vtrace(case, b, h)
        if not diff < 1e-4:
            sys.exit(f"py_torch_learner_bench: {name}: V-trace differs by {diff:g}")
        runs = 1 if a.quick else a.runs
        updates = 1 if a.quick else {"cartpole-mlp": 10, "catch-pixels": 3}.get(name, 2)
        m_plain = make_model(case, 1)
        opt = torch.optim.Adam(m_plain.parameters(), lr=h.lr, eps=1e-5)
        gen = torch.Generator().manual_seed(1)
        _, wrapper, batch = volley_engine(case, b, h)
        # alternate the arms so that neither gets the quieter half of a busy machine
        t_plain = t_volley = math.inf
        for _ in range(runs):
            t_plain = min(t_plain, time_arm(lambda: plain_update(m_plain, opt, b, h, gen), 1,
                                            updates))
            t_volley = min(t_volley, time_arm(
                lambda: np.array(list(wrapper.update(batch)[0].values())[:3]), 1, updates))
        over = t_volley / t_plain - 1
        worst = max(worst, over)
        print(f"{name:13s} {n}x{T} {spec:4s} plain {t_plain:8.2f} ms  volley "
              f"{t_volley:8.2f} ms  overhead {over * 100:+6.1f} %  (V-trace agree to {diff:.1e})")
    print(f"worst overhead {worst * 100:+.1f} % (goal <= 20 %)")


if __name__ == "__main__":
    main()
