#!/usr/bin/env python3
"""custom_policy: a model volley's C policy does not have, trained end to end.

The network is an actor-critic with a shared ReLU trunk and two heads
(trunk.0 -> ReLU -> trunk.2 -> ReLU -> pi | v), a shape volley's C MLP
(two tanh towers) lacks, so the actors here are Python: volley.run_actor
steps a NumPy CartPole and calls `forward` below (NumPy, no torch) with the
newest weights the learner published, as a dict of arrays. The learner is
PyTorch on volley's transport and V-trace kernel, like torch_learner.py, and
publishes with check_policy=False (its tensors are not volley's MLP's).

    volley broker &
    python3 custom_policy.py learner --broker 127.0.0.1 &
    python3 custom_policy.py actor --broker 127.0.0.1 --id 1 &
    python3 custom_policy.py actor --broker 127.0.0.1 --id 2

The learner exits 0 with `solved: ...` once the mean return of the last 100
episodes reaches --until-return, 1 when --max-seconds pass first.
"""
import argparse
import signal
import sys
import time

import numpy as np

import volley
from volley.envs.cartpole import CartPoleVectorEnv


def forward(w, obs):
    """The model in NumPy from published weights w: (logits [N, A], values [N])."""
    h = np.maximum(obs @ w["trunk.0.weight"].T + w["trunk.0.bias"], 0)
    h = np.maximum(h @ w["trunk.2.weight"].T + w["trunk.2.bias"], 0)
    return h @ w["pi.weight"].T + w["pi.bias"], (h @ w["v.weight"].T + w["v.bias"])[:, 0]


def actor_main(a):
    rng = np.random.default_rng([a.seed, a.id])

    def policy_fn(obs, weights):  # sample from softmax(logits); return actions and log-probs
        logits, _ = forward(weights, obs)
        logp = logits - logits.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        u = rng.random((len(obs), 1))
        actions = np.minimum((np.exp(logp).cumsum(1) < u).sum(1), logits.shape[1] - 1)
        return actions, logp[np.arange(len(obs)), actions]

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)  # Ctrl-C or SIGTERM: close, let queued segments leave
    signal.signal(signal.SIGTERM, stop)
    try:
        volley.run_actor(CartPoleVectorEnv(a.envs), broker=a.broker, policy=a.policy,
                         horizon=a.horizon, hidden=a.hidden, actor_id=a.id, seed=a.seed,
                         policy_fn=policy_fn)
    except (KeyboardInterrupt, volley.ActorInterrupted):
        pass
    return 0


def learner_main(a):
    import torch  # only the learner needs torch
    from torch import nn

    class Agent(nn.Module):
        """Shared trunk D -> H -> H (ReLU), policy head H -> A, value head H -> 1."""

        def __init__(self, D, A, H):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU())
            self.pi, self.v = nn.Linear(H, A), nn.Linear(H, 1)
            for layer, gain in ((self.trunk[0], 2 ** 0.5), (self.trunk[2], 2 ** 0.5),
                                (self.pi, 0.01), (self.v, 1.0)):
                nn.init.orthogonal_(layer.weight, gain)
                nn.init.zeros_(layer.bias)

        def forward(self, x):
            h = self.trunk(x)
            return self.pi(h), self.v(h).squeeze(-1)

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    learner = volley.Learner(a.broker, a.policy, capacity=max(4 * a.batch, 64))
    spec = learner.spec
    agent = Agent(spec["obs_dim"], spec["num_actions"], spec["hidden"])
    opt = torch.optim.Adam(agent.parameters(), lr=a.lr, eps=1e-5)
    print(f"policy '{a.policy}' at {a.broker}: obs {spec['obs_dim']} actions "
          f"{spec['num_actions']} horizon {spec['horizon']}; tensors " + " ".join(
              f"{k}{list(v.shape)}" for k, v in agent.state_dict().items()), flush=True)
    version, newest_acted, losses = 0, 0, np.zeros(3)
    learner.publish(agent.state_dict(), version, check_policy=False)  # actors wait for it
    start = next_print = time.monotonic()
    while True:
        b = learner.take(a.batch, timeout=a.batch_wait, partial=True)
        if b is not None:
            newest_acted = max(newest_acted, int(b.policy_version.max()))
            fresh = version - b.policy_version.astype(np.int64) <= a.max_lag
            if fresh.any():
                b = b.select(fresh)
                # actions [n, T, 1]: one discrete choice a step, as a whole number
                n, T = b.actions.shape[:2]
                act = torch.from_numpy(b.actions[..., 0]).long()
                obs = torch.from_numpy(b.obs)
                with torch.no_grad():  # V-trace targets with the current weights
                    logits, values = agent(obs)
                    logp = torch.log_softmax(logits[:, :T], -1).gather(-1, act[..., None])[..., 0]
                    boot = torch.zeros(n, T)
                    cut = torch.from_numpy(b.truncated.astype(bool))
                    if cut.any():  # time limit: bootstrap from V(final obs)
                        boot[cut] = agent(torch.from_numpy(b.final_obs)[cut])[1]
                vs, adv = volley.vtrace(values.numpy(), b.rewards, b.dones,
                                        (logp - torch.from_numpy(b.logp)).numpy(), gamma=a.gamma,
                                        lam=a.lam, rho_bar=1.0, c_bar=1.0, boot=boot.numpy())
                obs, act, logp = obs[:, :T].reshape(n * T, -1), act.reshape(-1), logp.reshape(-1)
                vs, adv = torch.from_numpy(vs).reshape(-1), torch.from_numpy(adv).reshape(-1)
                for _ in range(a.epochs):  # PPO: clipped surrogate + value + entropy
                    for mb in torch.randperm(n * T).split(a.minibatch):
                        lg, v = agent(obs[mb])
                        lp = torch.log_softmax(lg, -1)
                        ratio = (lp.gather(-1, act[mb, None])[:, 0] - logp[mb]).exp()
                        m = (adv[mb] - adv[mb].mean()) / (adv[mb].std(unbiased=False) + 1e-8)
                        pg = -torch.min(ratio * m, ratio.clamp(1 - a.clip, 1 + a.clip) * m).mean()
                        vf = 0.5 * ((v - vs[mb]) ** 2).mean()
                        ent = -(lp.exp() * lp).sum(-1).mean()
                        opt.zero_grad()
                        (pg + 0.5 * vf - a.ent_coef * ent).backward()
                        nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                        opt.step()
                losses = np.array([pg.item(), vf.item(), ent.item()])
                version += 1
                learner.publish(agent.state_dict(), version, check_policy=False)
        learner.publish_stats(version, 0, *losses)
        c, now = learner.counters, time.monotonic()
        if now >= next_print:
            print(f"{now - start:6.1f} s  version {version}  acted by {newest_acted}  steps "
                  f"{c['env_steps']}  episodes {c['episodes']}  return {c['mean_return']:.1f} "
                  f"(last {c['window']})  losses pg {losses[0]:.3f} v {losses[1]:.3f} "
                  f"ent {losses[2]:.3f}", flush=True)
            next_print = now + 1.0
        solved = c["window"] >= 100 and c["mean_return"] >= a.until_return
        if solved or now - start > a.max_seconds:
            print(f"final: version {version}, segments acted by versions up to {newest_acted}, "
                  f"return {c['mean_return']:.1f} (last {c['window']})", flush=True)
            print(f"{'solved' if solved else 'not solved'}: {c['env_steps']} steps in "
                  f"{now - start:.1f} s ({c['env_steps'] / (now - start):.0f} steps/s)",
                  flush=True)
            return 0 if solved else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("mode", choices=("learner", "actor"))
    p.add_argument("--broker", default="127.0.0.1:7600", help="HOST[:PORT] of the broker")
    p.add_argument("--policy", default="default", help="policy id")
    p.add_argument("--hidden", type=int, default=64, help="trunk width (actors declare it; the learner reads it from the spec)")
    p.add_argument("--seed", type=int, default=1)
    g = p.add_argument_group("actor")
    g.add_argument("--id", type=int, default=1, help="actor id")
    g.add_argument("--envs", type=int, default=8, help="CartPoles stepped together")
    g.add_argument("--horizon", type=int, default=64, help="steps per segment")
    g = p.add_argument_group("learner")
    g.add_argument("--max-seconds", type=float, default=600, help="give up after this long")
    g.add_argument("--until-return", type=float, default=475,
                   help="stop when the mean return of the last 100 episodes reaches this")
    g.add_argument("--batch", type=int, default=16, help="segments per update")
    g.add_argument("--batch-wait", type=float, default=0.05,
                   help="seconds to wait for a full batch before training on what came")
    g.add_argument("--epochs", type=int, default=4)
    g.add_argument("--minibatch", type=int, default=256, help="samples per Adam step")
    g.add_argument("--max-lag", type=int, default=4, help="drop segments this many versions old")
    g.add_argument("--lr", type=float, default=1e-3)
    g.add_argument("--gamma", type=float, default=0.99)
    g.add_argument("--lam", type=float, default=0.95, help="V-trace lambda")
    g.add_argument("--clip", type=float, default=0.2)
    g.add_argument("--ent-coef", type=float, default=0.01)
    g.add_argument("--threads", type=int, default=1, help="torch threads")
    a = p.parse_args()
    return actor_main(a) if a.mode == "actor" else learner_main(a)


if __name__ == "__main__":
    sys.exit(main())
