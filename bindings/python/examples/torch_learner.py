#!/usr/bin/env python3
"""torch_learner: a PyTorch learner for volley's C actors, in one file.

volley does the transport and the hot kernels (volley.Learner receives the
policy's segments through the broker, volley.vtrace computes the targets);
PyTorch does the model and the optimizer. The network is volley's built-in
MLP with its tensor names (pi.0.weight ... v.2.bias), so unmodified C
actors (`volley actor`) act with the weights published here.

    volley broker &
    volley actor --broker 127.0.0.1 --id 1 &  volley actor --broker 127.0.0.1 --id 2 &
    python3 bindings/python/examples/torch_learner.py --broker 127.0.0.1

Each update: take a batch of segments, recompute values and log-probs with
the current weights, V-trace targets and advantages (IMPALA; truncated
episodes bootstrap from V(final observation)), then PPO epochs (clipped
surrogate + value + entropy, Adam), and publish the weights as the next
version. Defaults are the C learner's (learner/vl_learner.c). Exits 0 with
`solved: ...` once the mean return of the last 100 episodes reaches
--until-return, 1 when --max-seconds pass first.
"""
import argparse
import math
import sys
import time

import numpy as np
import torch
from torch import nn

import volley


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--broker", default="127.0.0.1:7600", help="HOST[:PORT] of the broker")
    p.add_argument("--policy", default="default", help="policy id to train")
    p.add_argument("--max-seconds", type=float, default=600, help="give up after this long")
    p.add_argument("--until-return", type=float, default=475,
                   help="stop when the mean return of the last 100 episodes reaches this")
    p.add_argument("--batch", type=int, default=16, help="segments per update")
    p.add_argument("--batch-wait", type=float, default=0.05,
                   help="seconds to wait for a full batch before training on what came")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatch", type=int, default=256, help="samples per Adam step")
    p.add_argument("--max-lag", type=int, default=4, help="drop segments this many versions old")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.95, help="V-trace lambda")
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--rho-bar", type=float, default=1.0, help="V-trace rho clip (and pg's)")
    p.add_argument("--c-bar", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (the actors need the other cores)")
    return p.parse_args()


class Agent(nn.Module):
    """volley's MLP: a policy net D -> H -> H -> A and a value net D -> H -> H -> 1,
    tanh between layers; state_dict names match what C actors load."""

    def __init__(self, D, A, H):
        super().__init__()
        self.pi = self._mlp(D, H, A, 0.01)
        self.v = self._mlp(D, H, 1, 1.0)

    @staticmethod
    def _mlp(d, h, out, out_gain):
        layers = nn.ModuleList([nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, out)])
        for layer, gain in zip(layers, (math.sqrt(2), math.sqrt(2), out_gain)):
            nn.init.orthogonal_(layer.weight, gain)
            nn.init.zeros_(layer.bias)
        return layers

    @staticmethod
    def _run(layers, x):
        for layer in layers[:-1]:
            x = torch.tanh(layer(x))
        return layers[-1](x)

    def forward(self, x):
        return self._run(self.pi, x), self._run(self.v, x).squeeze(-1)

    def value(self, x):
        return self._run(self.v, x).squeeze(-1)


def targets(agent, b, a):
    """V-trace targets and advantages for batch b, with the current weights's
    log-probs (PPO's old_logp). Returns obs, actions, old_logp, vs, adv flat [n*T]."""
    n, T = b.actions.shape[:2]  # actions [n, T, 1]: one discrete choice a step
    obs = torch.from_numpy(b.obs)
    actions = torch.from_numpy(b.actions[..., 0]).long()
    with torch.no_grad():
        logits, values = agent(obs)  # [n, T+1, A], [n, T+1]
        logp = torch.log_softmax(logits[:, :T], -1).gather(-1, actions[..., None])[..., 0]
        boot = torch.zeros(n, T)
        cut = torch.from_numpy(b.truncated.astype(bool))
        if cut.any():  # a time limit ended these episodes: bootstrap from V(final obs)
            boot[cut] = agent.value(torch.from_numpy(b.final_obs)[cut])
    vs, adv = volley.vtrace(values.numpy(), b.rewards, b.dones, (logp - torch.from_numpy(b.logp))
                            .numpy(), gamma=a.gamma, lam=a.lam, rho_bar=a.rho_bar,
                            c_bar=a.c_bar, boot=boot.numpy())
    return (obs[:, :T].reshape(n * T, -1), actions.reshape(-1), logp.reshape(-1),
            torch.from_numpy(vs).reshape(-1), torch.from_numpy(adv).reshape(-1))


def update(agent, opt, b, a):
    """PPO epochs over the batch; returns the last epoch's mean losses."""
    obs, actions, old_logp, vs, adv = targets(agent, b, a)
    N = len(actions)
    for _ in range(a.epochs):
        sums, steps = np.zeros(3), 0
        for mb in torch.randperm(N).split(a.minibatch):
            logits, v = agent(obs[mb])
            logp_all = torch.log_softmax(logits, -1)
            ratio = (logp_all.gather(-1, actions[mb, None])[:, 0] - old_logp[mb]).exp()
            m_adv = (adv[mb] - adv[mb].mean()) / (adv[mb].std(unbiased=False) + 1e-8)
            pg = -torch.min(ratio * m_adv, ratio.clamp(1 - a.clip, 1 + a.clip) * m_adv).mean()
            vf = 0.5 * ((v - vs[mb]) ** 2).mean()
            ent = -(logp_all.exp() * logp_all).sum(-1).mean()
            opt.zero_grad()
            (pg + a.vf_coef * vf - a.ent_coef * ent).backward()
            nn.utils.clip_grad_norm_(agent.parameters(), a.max_grad_norm)
            opt.step()
            sums += (pg.item(), vf.item(), ent.item())
            steps += 1
    return sums / max(steps, 1)


def main():
    a = parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    learner = volley.Learner(a.broker, a.policy, capacity=max(4 * a.batch, 64))
    spec = learner.spec
    print(f"policy '{a.policy}' at {a.broker}: obs {spec['obs_dim']} actions "
          f"{spec['num_actions']} horizon {spec['horizon']} hidden {spec['hidden']}", flush=True)
    agent = Agent(spec["obs_dim"], spec["num_actions"], spec["hidden"])
    opt = torch.optim.Adam(agent.parameters(), lr=a.lr, eps=1e-5)
    version, trained, losses = 0, 0, np.zeros(3)
    learner.publish(agent.state_dict(), version)  # actors wait for a first version
    start = next_print = time.monotonic()
    while True:
        b = learner.take(a.batch, timeout=a.batch_wait, partial=True)
        if b is not None:
            fresh = version - b.policy_version.astype(np.int64) <= a.max_lag
            if fresh.any():
                losses = update(agent, opt, b.select(fresh), a)
                trained += int(fresh.sum())
                version += 1
                learner.publish(agent.state_dict(), version)
        learner.publish_stats(version, trained, *losses)
        c, now = learner.counters, time.monotonic()
        if now >= next_print:
            print(f"{now - start:6.1f} s  version {version}  steps {c['env_steps']}  episodes "
                  f"{c['episodes']}  return {c['mean_return']:.1f} (last {c['window']})  "
                  f"losses pg {losses[0]:.3f} v {losses[1]:.3f} ent {losses[2]:.3f}", flush=True)
            next_print = now + 1.0
        if c["window"] >= 100 and c["mean_return"] >= a.until_return:
            secs = now - start
            print(f"solved: {c['env_steps']} steps in {secs:.1f} s "
                  f"({c['env_steps'] / secs:.0f} steps/s)", flush=True)
            return 0
        if now - start > a.max_seconds:
            print(f"not solved: {c['env_steps']} steps in {now - start:.1f} s, return "
                  f"{c['mean_return']:.1f}", flush=True)
            return 1


if __name__ == "__main__":
    sys.exit(main())
