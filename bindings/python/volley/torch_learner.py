"""volley.torch.TorchLearner (defined here): a PyTorch learner for volley's actors.

volley does the transport and the hot kernels (volley.Learner receives the
policy's segments through the broker into its C buffer, volley.vtrace
computes the targets); PyTorch does the model and the optimizer. Each
update takes a batch of segments, recomputes values and log-probs with the
current weights, computes V-trace targets and advantages (IMPALA;
truncated episodes bootstrap from V(final observation)), runs PPO epochs
over minibatches (clipped surrogate + value + entropy, Adam, gradient-norm
clip) and publishes the state_dict as the next weights version, which
unmodified C actors (`volley actor`) act with when the model's tensors are
the ones they load.

    from volley.torch import TorchLearner
    tl = TorchLearner("127.0.0.1:7600", env="catch-pixels", model="cnn")
    tl.run()                          # prints progress, then `solved: ...`

Hyperparameters default to the C learner's (learner/vl_learner.c); the
device is CUDA when available, else the CPU. Importing volley does not
import torch: this module does.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch import nn

from . import _lib
from .action import ActionSpace
from .learner import Learner
from .vtrace import vtrace

__all__ = ["TorchLearner", "Hyper", "env_spec"]

_ENCODINGS = ("f32", "u8", "u2", "u1")  # include/volley/env.h's VL_ENV_F32 .. U1


@dataclasses.dataclass
class Hyper:
    """The update's hyperparameters; every default is the C learner's."""
    batch: int = 16             # segments per update
    batch_wait: float = 0.05    # seconds to wait for a full batch before taking what waits
    epochs: int = 4             # PPO passes over each batch
    minibatch: int = 256        # samples per Adam step
    max_lag: int = 4            # segments acted more versions ago than this are dropped
    lr: Optional[float] = None  # Adam; None: 1e-3, 3e-4 for a model with conv layers
    gamma: float = 0.99         # discount
    lam: float = 0.95           # V-trace lambda
    clip: float = 0.2           # PPO ratio clip
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    rho_bar: float = 1.0        # V-trace rho clip (and the policy gradient's)
    c_bar: float = 1.0

    def check(self) -> None:
        """Raises ValueError naming the first hyperparameter out of range."""
        for name in ("batch", "epochs", "minibatch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: expected >= 1, got {getattr(self, name)}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"lr: expected > 0, got {self.lr}")
        for name in ("rho_bar", "c_bar"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: expected > 0, got {getattr(self, name)}")
        for name in ("gamma", "lam"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name}: expected 0 .. 1, got {getattr(self, name)}")
        for name in ("batch_wait", "max_lag", "clip", "ent_coef", "vf_coef", "max_grad_norm"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: expected >= 0, got {getattr(self, name)}")


def env_spec(name: str, horizon: int = 64, hidden: int = 64) -> dict:
    """The spec a learner declares for volley's built-in env `name`
    (cartpole, catch, catch-pixels ...), as `volley learner --env NAME`
    fills it: the env table's observation fields and actions, with horizon
    and hidden. Raises ValueError for a name that is not built in."""
    from .actor import _Env
    symbol = "vl_" + str(name).replace("-", "_") + "_env"
    try:
        t = _Env.in_dll(_lib.lib, symbol)
    except ValueError:
        raise ValueError(f"env '{name}': not one of volley's built-in envs (see `volley actor "
                         "--help`)") from None
    fields = [(tuple(t.fields[i].shape[:t.fields[i].ndim]), _ENCODINGS[t.fields[i].encoding])
              for i in range(t.n_fields)]
    action = ActionSpace.from_c(t.action)
    return {"fields": fields, "action": action, "num_actions": action.outputs,
            "horizon": int(horizon),
            "hidden": int(hidden), "env": t.name.decode(),
            "solved_return": t.solved_return if t.has_solved_return else None}


def default_model_text(fields) -> str:
    """volley's default model for these observation fields: `cnn` when a
    field is an image (three dimensions, channels first), else `mlp`."""
    return "cnn" if any(len(shape) == 3 for shape, _ in fields) else "mlp"


def build_model(model: Any, fields, num_actions: Any, seed: Optional[int] = 0) -> nn.Module:
    """model as an nn.Module: a module is returned as it is; a spec text or
    preset is built by volley.torch.build (the C model's tensors, names,
    layout and, for seed, initial weights) for the action space num_actions
    (an ActionSpace, or an int of discrete choices). ValueError for a
    recurrent one: this learner trains on single steps, not sequences."""
    from .torch import VolleyNet, build
    if isinstance(model, nn.Module):
        module = model
    elif not isinstance(model, str) or not model.strip():
        raise TypeError(f"model: expected an nn.Module or a model spec text, got {model!r}")
    else:
        module = build(model, fields, num_actions, seed=seed)
    if isinstance(module, VolleyNet) and module.hidden:
        raise ValueError(f"model {getattr(module, 'spec_text', model)!r}: a recurrent core "
                         "(lstm), which this learner cannot train (it takes single steps, not "
                         "sequences from a state); train it with the C learner, `volley learner`")
    return module


def default_device() -> torch.device:
    """CUDA when a GPU is available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run_dir_files(directory: str, policy: str, force: bool = False):
    """The files a run directory of policy's checkpoints holds: (config.ini,
    checkpoints/<policy>.ckpt, those of them already there). Raises
    FileExistsError naming the first already there unless force."""
    d = Path(directory)
    config, ckpt = d / "config.ini", d / "checkpoints" / f"{policy}.ckpt"
    there = [p for p in (config, ckpt) if p.exists()]
    if there and not force:
        raise FileExistsError(f"{there[0]}: already there (another run's?); choose another "
                              "directory, or force (--force) to keep it as .bak")
    return config, ckpt, there


class _Categorical:
    """One discrete choice's distribution over logits [m, A], for a model
    without dist(): log_prob of actions [m, 1] and entropy, both [m]."""

    def __init__(self, logits):
        self.logp = torch.log_softmax(logits, -1)

    def log_prob(self, actions):
        return self.logp.gather(-1, actions.long().reshape(-1, 1))[:, 0]

    def entropy(self):
        return -(self.logp.exp() * self.logp).sum(-1)


class TorchLearner:
    """Trains one policy's nn.Module on the segments volley's actors send.

    broker "HOST[:PORT]"; policy the policy id. The spec declared to the
    broker: env, the name of a built-in env (its fields and actions, as
    `volley learner --env`), or spec, a dict as volley.Learner takes it; with
    neither, the spec an actor declared is fetched (waiting up to timeout
    seconds). model: an nn.Module whose forward(obs [n, obs_dim] float) gives
    (logits [n, A], values [n]) (and, for a space other than one discrete
    choice, dist(outputs) -> a distribution with log_prob(actions [n, dims])
    and entropy(), as volley.torch.VolleyNet's), or a spec text / preset
    built with volley.torch.build (None: `cnn` for image fields, else
    `mlp`). The space is the spec's "action" (volley.ActionSpace). device
    None: CUDA when available, else the CPU. check_policy (default True):
    publish only the tensors of the spec's model, what C actors load; False
    for a model whose actors take its own tensors. hyper: a
    Hyper, or its fields as keyword arguments. Raises VolleyError when the
    broker refuses the spec, ValueError or TypeError for a model that
    cannot be built (the transport closed again).
    """

    def __init__(self, broker: str = "127.0.0.1:7600", policy: str = "default",
                 model: Any = None, env: Optional[str] = None, spec: Optional[dict] = None,
                 device: Any = None, hyper: Optional[Hyper] = None, seed: int = 1,
                 horizon: int = 64, hidden: int = 64, check_policy: bool = True,
                 timeout: float = 30.0, **hyper_fields) -> None:
        self.hyper = dataclasses.replace(hyper or Hyper(), **hyper_fields)
        self.hyper.check()
        if env is not None and spec is not None:
            raise ValueError("give env or spec, not both")
        self.solved_return = None
        if env is not None:
            spec = env_spec(env, horizon, hidden)
            self.solved_return = spec["solved_return"]
        if spec is not None and isinstance(model, str):
            spec = dict(spec, model=model)  # the network C actors build, declared to the broker
        torch.manual_seed(seed)
        self.device = torch.device(device) if device is not None else default_device()
        self.learner = Learner(broker, policy, capacity=max(4 * self.hyper.batch, 64),
                               spec=spec, timeout=timeout)
        s = self.learner.spec
        self.spec, self.env = s, env
        self.model_text = model if isinstance(model, str) else None
        if model is None or isinstance(model, str):
            # the policy's network in its canonical text, as the transport settled it (the
            # broker's spec when it was fetched; the default for the fields when none was said)
            self.model_text = model = (s.get("model") or model
                                       or default_model_text(s["fields"]))
        try:
            self.model = build_model(model, s["fields"], s["action"], seed)
        except Exception:
            self.learner.close()
            raise
        self.model.to(self.device)
        if self.hyper.lr is None:  # as the C learner: conv layers train at a lower rate
            self.hyper.lr = 3e-4 if any(isinstance(m, nn.Conv2d) for m in self.model.modules()) \
                else 1e-3
        self.opt = torch.optim.Adam(self.model.parameters(), lr=self.hyper.lr, eps=1e-5)
        self.check_policy = bool(check_policy)
        self.version, self.trained, self.losses = 0, 0, np.zeros(3)
        self._gen = torch.Generator().manual_seed(seed)
        self.checkpoint_path, self.published = None, False

    # ---- one update ------------------------------------------------------

    def _to_device(self, a: np.ndarray) -> torch.Tensor:
        """One NumPy array as a tensor on the device: no copy on the CPU;
        through pinned memory and one asynchronous copy to a GPU."""
        t = torch.from_numpy(a)
        if self.device.type == "cuda":
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    def _forward(self, obs: torch.Tensor):
        """(logits, values) of obs [..., D], the leading dimensions kept."""
        lead = obs.shape[:-1]
        logits, values = self.model(obs.reshape(-1, obs.shape[-1]))
        return logits.reshape(*lead, -1), values.reshape(lead)

    def _dist(self, outputs):
        """The action distribution of head outputs [m, A]: the model's own
        (dist), else a categorical over the logits (a module of one's own
        acting in one discrete choice)."""
        if hasattr(self.model, "dist"):
            return self.model.dist(outputs)
        return _Categorical(outputs)

    def targets(self, b):
        """V-trace targets and advantages for batch b (a volley.Batch, or any
        object with its obs, actions [n, T, dims] (or [n, T]), rewards, dones,
        truncated, logp and final_obs arrays), with the current weights'
        log-probs (PPO's old log-probs). Returns obs, actions [n*T, dims],
        old_logp, vs, adv, flat [n*T]."""
        h = self.hyper
        acts = np.asarray(b.actions, dtype=np.float32)
        n, T = acts.shape[:2]
        acts = np.ascontiguousarray(acts.reshape(n, T, -1))
        obs = self._to_device(b.obs)
        actions = self._to_device(acts).reshape(n * T, -1)
        with torch.no_grad():
            logits, values = self._forward(obs)  # [n, T+1, A], [n, T+1]
            logp = self._dist(logits[:, :T].reshape(n * T, -1)).log_prob(actions).reshape(n, T)
            logp_cpu = logp.cpu()
            boot = np.zeros((n, T), np.float32)
            cut = b.truncated.astype(bool)
            if cut.any():  # a time limit ended these episodes: bootstrap from V(final obs)
                _, v_final = self._forward(self._to_device(np.ascontiguousarray(b.final_obs[cut])))
                boot[cut] = v_final.cpu().numpy()
            log_rhos = logp_cpu.numpy() - b.logp
        vs, adv = vtrace(values.cpu().numpy(), b.rewards, b.dones, log_rhos, gamma=h.gamma,
                         lam=h.lam, rho_bar=h.rho_bar, c_bar=h.c_bar, boot=boot)
        return (obs[:, :T].reshape(n * T, -1), actions, logp.reshape(-1),
                self._to_device(vs).reshape(-1), self._to_device(adv).reshape(-1))

    def update(self, b) -> np.ndarray:
        """PPO epochs over batch b (see targets); returns the last epoch's mean
        (policy loss, value loss, entropy)."""
        h = self.hyper
        obs, actions, old_logp, vs, adv = self.targets(b)
        N = len(actions)
        sums, steps = torch.zeros(3, device=self.device), 0
        for _ in range(h.epochs):
            sums.zero_()
            steps = 0
            order = torch.randperm(N, generator=self._gen).to(self.device)
            for mb in order.split(h.minibatch):
                logits, v = self.model(obs[mb])
                dist = self._dist(logits)
                ratio = (dist.log_prob(actions[mb]) - old_logp[mb]).exp()
                m_adv = (adv[mb] - adv[mb].mean()) / (adv[mb].std(unbiased=False) + 1e-8)
                pg = -torch.min(ratio * m_adv, ratio.clamp(1 - h.clip, 1 + h.clip) * m_adv).mean()
                vf = 0.5 * ((v.reshape(-1) - vs[mb]) ** 2).mean()
                ent = dist.entropy().mean()
                self.opt.zero_grad(set_to_none=True)
                (pg + h.vf_coef * vf - h.ent_coef * ent).backward()
                nn.utils.clip_grad_norm_(self.model.parameters(), h.max_grad_norm)
                self.opt.step()
                sums += torch.stack((pg.detach(), vf.detach(), ent.detach()))
                steps += 1
        self.losses = (sums / max(steps, 1)).cpu().numpy()
        return self.losses

    # ---- checkpoints -----------------------------------------------------

    def keep_checkpoints(self, directory: str, force: bool = False) -> Path:
        """Keeps checkpoints in directory laid out as a run directory, so that
        `volley eval DIR` and `volley export DIR` find the env: DIR/config.ini
        (env, model, policy and hyperparameters, written now) and
        DIR/checkpoints/<policy>.ckpt (the newest weights, replaced by each
        save_checkpoint). A DIR that holds either file already is refused
        (FileExistsError naming it) unless force, which keeps the old ones
        as .bak. Returns the checkpoint's path."""
        config, ckpt, there = run_dir_files(directory, self.learner.policy, force)
        for p in there:
            p.replace(p.with_name(p.name + ".bak"))
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        lines = ["# written by volley's torch learner", "[learner]",
                 f"env = {self.env or '?'}", f"model = {self._model_name()}",
                 f"policy = {self.learner.policy}", f"broker = {self.learner.broker}"]
        lines += [f"{f.name.replace('_', '-')} = {getattr(self.hyper, f.name)}"
                  for f in dataclasses.fields(Hyper)]
        config.write_text("\n".join(lines) + "\n")
        self.checkpoint_path = ckpt
        return ckpt

    def _model_name(self) -> str:
        return self.model_text or f"{type(self.model).__module__}.{type(self.model).__name__}"

    def save_checkpoint(self) -> None:
        """Writes the weights published last to the checkpoint keep_checkpoints
        set up, its spec (env and model) and config section (the spec, the
        torch module's class, the mean return)."""
        if self.checkpoint_path is None:
            raise ValueError("save_checkpoint: call keep_checkpoints(DIR) first")
        c = self.learner.counters
        module = f"{type(self.model).__module__}.{type(self.model).__name__}"
        extra = (f"learner = torch\nmodule = {module}\ntrained = {self.trained}\n"
                 f"env_steps = {c['env_steps']}\nmean_return = {c['mean_return']:.9g}\n"
                 f"return_window = {c['window']}\n")
        self.learner.checkpoint(self.checkpoint_path, env=self.env, extra=extra)

    # ---- the loop --------------------------------------------------------

    def weights(self) -> dict:
        """The model's state_dict as float32 NumPy arrays (every rank)."""
        return {k: v.detach().to("cpu", torch.float32).numpy()
                for k, v in self.model.state_dict().items()}

    def publish(self) -> None:
        """Publishes the current weights as self.version."""
        self.learner.publish(self.weights(), self.version, check_policy=self.check_policy)
        self.published = True

    def step(self) -> int:
        """Takes a batch (waiting up to batch_wait s, then what waits), drops
        segments more than max_lag versions old, trains on the rest and
        publishes the next version. Returns the segments trained on."""
        h = self.hyper
        b = self.learner.take(h.batch, timeout=h.batch_wait, partial=True)
        if b is None:
            return 0
        fresh = self.version - b.policy_version.astype(np.int64) <= h.max_lag
        if not fresh.any():
            return 0
        self.update(b if fresh.all() else b.select(fresh))
        self.trained += int(fresh.sum())
        self.version += 1
        self.publish()
        return int(fresh.sum())

    def run(self, max_steps: Optional[int] = None, until_return: Optional[float] = None,
            max_seconds: Optional[float] = None, log: Callable[[str], None] = print,
            every: float = 1.0, checkpoint_every: int = 10) -> int:
        """Trains until the mean return of the last 100 episodes reaches
        until_return (the env's solved return when it is built in and none
        is given), max_steps env steps are in, or max_seconds pass. Prints
        progress every `every` s and, when solved, a last line
        `solved: <steps> steps in <s> s (<steps/s> steps/s)` as the C
        learner's runs end. With keep_checkpoints called, saves a checkpoint
        every checkpoint_every updates and at the end. Returns 0 when solved
        or the step budget is reached, 1 when max_seconds pass first."""
        try:
            return self._loop(max_steps, until_return, max_seconds, log, every, checkpoint_every)
        finally:
            if self.checkpoint_path is not None and self.published:
                self.save_checkpoint()

    def _loop(self, max_steps, until_return, max_seconds, log, every, checkpoint_every):
        if until_return is None:
            until_return = self.solved_return
        self.publish()  # actors wait for a first version
        start = next_print = next_stats = time.monotonic()
        while True:
            if (self.step() and self.checkpoint_path is not None
                    and self.version % max(1, checkpoint_every) == 0):
                self.save_checkpoint()
            now = time.monotonic()
            if now >= next_stats:
                self.learner.publish_stats(self.version, self.trained, *self.losses)
                next_stats = now + 0.25  # as the C learner reports: 4 a second
            c = self.learner.counters
            if now >= next_print:
                pg, vf, ent = self.losses
                log(f"{now - start:6.1f} s  version {self.version}  steps {c['env_steps']}  "
                    f"episodes {c['episodes']}  return {c['mean_return']:.2f} (last "
                    f"{c['window']})  losses pg {pg:.3f} v {vf:.3f} ent {ent:.3f}")
                next_print = now + every
            secs = max(now - start, 1e-9)
            if (until_return is not None and c["window"] >= 100
                    and c["mean_return"] >= until_return):
                self.learner.publish_stats(self.version, self.trained, *self.losses)
                log(f"solved: {c['env_steps']} steps in {secs:.1f} s "
                    f"({c['env_steps'] / secs:.0f} steps/s)")
                return 0
            if max_steps is not None and c["env_steps"] >= max_steps:
                log(f"done: {c['env_steps']} steps in {secs:.1f} s "
                    f"({c['env_steps'] / secs:.0f} steps/s), return {c['mean_return']:.2f}")
                return 0
            if max_seconds is not None and secs >= max_seconds:
                log(f"not solved: {c['env_steps']} steps in {secs:.1f} s, return "
                    f"{c['mean_return']:.2f} (last {c['window']})")
                return 1

    def close(self) -> None:
        """Stops receiving and closes the transport; safe twice."""
        self.learner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


USAGE = """\
Trains a policy with PyTorch on the segments volley's actors send through
the broker: volley's C buffer and V-trace, a PyTorch model and PPO update,
the weights published to the actors after every update (C actors act with
them when the model is one they run). Hyperparameters default to the C
learner's; the device is CUDA when available, else the CPU.

example: python3 -m volley learner --torch --env catch-pixels --model cnn
"""


def main(argv=None) -> int:
    """`python3 -m volley learner --torch ...`; returns the exit code."""
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m volley learner", description=USAGE,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch", action="store_true", required=True,
                    help="train with PyTorch (required: `volley learner` is the C learner)")
    ap.add_argument("--broker", default="127.0.0.1:7600", metavar="HOST[:PORT]",
                    help="the broker (default 127.0.0.1:7600)")
    ap.add_argument("--policy", default="default", help="policy id to train (default: default)")
    ap.add_argument("--env", metavar="NAME",
                    help="a built-in env (cartpole, catch, catch-pixels): declare its spec to "
                         "the broker and stop at its solved return; without it the spec is the "
                         "one an actor declared")
    ap.add_argument("--model", metavar="SPEC",
                    help="model spec or preset, built by volley.torch (default: cnn for image "
                         "fields, else mlp)")
    ap.add_argument("--max-steps", type=int, metavar="N", help="stop once N env steps are in")
    ap.add_argument("--until-return", type=float, metavar="R",
                    help="stop when the mean return of the last 100 episodes reaches R "
                         "(default: the env's solved return)")
    ap.add_argument("--max-seconds", type=float, metavar="S",
                    help="give up after S seconds (exit 1)")
    ap.add_argument("--checkpoint", metavar="DIR",
                    help="keep checkpoints in DIR as a run directory (DIR/config.ini, "
                         "DIR/checkpoints/POLICY.ckpt) that `volley eval DIR` and `volley export "
                         "DIR` read; refused when DIR holds them already, unless --force")
    ap.add_argument("--checkpoint-every", type=int, default=10, metavar="N",
                    help="save every N updates, and at the end (default 10)")
    ap.add_argument("--force", action="store_true",
                    help="with --checkpoint: keep an earlier run's files as .bak and start over")
    ap.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: the actors need the other cores)")
    ap.add_argument("--seed", type=int, default=1, help="model init and minibatch order (1)")
    ap.add_argument("--horizon", type=int, default=64, help="steps per segment, with --env (64)")
    ap.add_argument("--hidden", type=int, default=64,
                    help="width of the mlp preset, with --env (64)")
    for f in dataclasses.fields(Hyper):
        if f.name == "lr":
            ap.add_argument("--lr", type=float, help="Adam's learning rate (default 1e-3, 3e-4 "
                                                     "for a model with conv layers)")
            continue
        ap.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default,
                        help=f"(default {f.default})")
    a = ap.parse_args(argv)
    if a.threads < 1:
        ap.error("--threads: expected >= 1")
    if a.max_steps is not None and a.max_steps < 1:
        ap.error("--max-steps: expected >= 1")
    if a.checkpoint_every < 1:
        ap.error("--checkpoint-every: expected >= 1")
    torch.set_num_threads(a.threads)
    if a.checkpoint:  # refused before waiting for a broker
        try:
            run_dir_files(a.checkpoint, a.policy, a.force)
        except OSError as e:
            print(f"volley learner --torch: --checkpoint: {e}", file=sys.stderr)
            return 2
    hyper = Hyper(**{f.name: getattr(a, f.name) for f in dataclasses.fields(Hyper)})
    try:
        hyper.check()
    except ValueError as e:
        ap.error(f"--{str(e).replace('_', '-')}")
    try:
        tl = TorchLearner(a.broker, a.policy, model=a.model, env=a.env, device=a.device,
                          hyper=hyper, seed=a.seed, horizon=a.horizon, hidden=a.hidden)
    except (ValueError, TypeError, _lib.VolleyError) as e:
        print(f"volley learner --torch: {e}", file=sys.stderr)
        return 2
    if a.checkpoint:
        try:
            tl.keep_checkpoints(a.checkpoint, force=a.force)
        except OSError as e:
            print(f"volley learner --torch: --checkpoint: {e}", file=sys.stderr)
            tl.close()
            return 2
    s = tl.spec
    print(f"policy '{a.policy}' at {a.broker}: fields {s['fields']} actions {s['action']} "
          f"horizon {s['horizon']} model {tl.model_text or type(tl.model).__name__} on "
          f"{tl.device}", flush=True)
    try:
        return tl.run(max_steps=a.max_steps, until_return=a.until_return,
                      max_seconds=a.max_seconds, log=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        return 0
    finally:
        tl.close()
