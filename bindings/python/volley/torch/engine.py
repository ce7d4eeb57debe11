"""volley.torch.engine: the PyTorch engine of volley's learner.

The C learner's loop (include/volley/engine.h) receives segments, chooses
each batch, normalises observations and rewards, draws the minibatch order,
schedules the learning rate, publishes weights, keeps checkpoints and
reports; this engine holds volley.torch.model's module of the policy's model spec
and its Adam, and takes one update on a batch exactly as the C engine
(learner/vl_trainer.c with models/vl_policy.c's loss):

  1. outputs and values with the current weights over [n, T+1] (a recurrent
     model: each segment from its stored state, reset after a done); the
     model's log-probs of the actions are PPO's old log-probs, and minus the
     behaviour's, V-trace's log-rhos; V-trace (volley.vtrace, in C)
     bootstraps truncated steps from V(final observation), read after its
     episode's history alone for a recurrent model;
  2. `epochs` passes over the batch in the learner's order
     (vl_engine_batch_shuffle): minibatches of `minibatch` samples, or of
     whole segments for a recurrent model (the first burn_in steps only
     rebuilding the state); advantages normalised per minibatch; loss =
     sum_i w_i / m * (-min(r A, clip(r) A) - ent_coef H + vf_coef (v - vs)^2 / 2);
     the global gradient norm clipped; Adam (eps 1e-5) at the lr given.

The device path: each array is gathered by C straight into a pinned host
tensor (two sets, alternating) and copied to the device without blocking;
with observation normalisation off, observations with a field other than
f32 cross as the wire packs them (OBS_PACKED: u8 a byte a value, u2 four
values a byte) and are unpacked to floats on the device.
Published weights are copied to pinned host memory after each update
without blocking, and waited for only when the learner asks for them.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np
import torch

from .. import engine as E
from .._types import wire_bytes
from ..vtrace import vtrace
from .model import NORM_TENSORS, VolleyNet, build, load_weights

__all__ = ["TorchEngine", "packed_layout", "obs_from_packed", "unpack_u2", "unpack_u1",
           "default_device"]

OPT_MAGIC = b"volley-torch-adam1\n"  # optimizer()'s first bytes


def default_device() -> torch.device:
    """CUDA when a GPU is available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def packed_layout(fields: Sequence[Tuple[Tuple[int, ...], str]]) -> List[Tuple[str, int, int]]:
    """Where each field sits in an observation as the wire packs it
    (OBS_PACKED): [(encoding, values, byte offset)], field after field with
    no padding: f32 four bytes a value, u8 one, u2 four values a byte, u1
    eight."""
    out, offset = [], 0
    for shape, enc in fields:
        count = int(np.prod(shape))
        out.append((enc, count, offset))
        offset += wire_bytes(enc, count)
    return out


def obs_from_packed(packed: torch.Tensor, layout: List[Tuple[str, int, int]]) -> torch.Tensor:
    """Observations float32 [..., D] of packed observations uint8 [...,
    wire_bytes] (on any device): f32 fields as their bytes read as floats,
    u8 each byte, u2 and u1 unpacked by shifts and masks, each value as a
    whole number, as vl_obs_from_rows converts them."""
    lead, parts = packed.shape[:-1], []
    flat = packed.reshape(-1, packed.shape[-1])
    for enc, count, offset in layout:
        raw = flat[:, offset:offset + wire_bytes(enc, count)]
        if enc == "f32":
            parts.append(raw.contiguous().view(torch.float32))
        elif enc == "u8":
            parts.append(raw.to(torch.float32))
        else:
            parts.append((unpack_u2(raw, count) if enc == "u2" else unpack_u1(raw, count))
                         .to(torch.float32))
    out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
    return out.reshape(*lead, -1)


def unpack_u1(packed: torch.Tensor, count: int) -> torch.Tensor:
    """count u1 values uint8 [..., count] of bytes packed eight values a byte,
    the first in the lowest bit (the wire's order)."""
    shifts = torch.arange(8, dtype=torch.uint8, device=packed.device)
    vals = (packed.unsqueeze(-1) >> shifts) & 1
    return vals.reshape(*packed.shape[:-1], -1)[..., :count]


def unpack_u2(packed: torch.Tensor, count: int) -> torch.Tensor:
    """count u2 values uint8 [..., count] of bytes packed four values a byte,
    the first in the lowest two bits (the wire's order), by shifts and masks."""
    shifts = torch.tensor([0, 2, 4, 6], dtype=torch.uint8, device=packed.device)
    vals = (packed.unsqueeze(-1) >> shifts) & 3
    return vals.reshape(*packed.shape[:-1], -1)[..., :count]


def _adam(module: torch.nn.Module, lr: float, device: torch.device
          ) -> Tuple[torch.optim.Optimizer, bool]:
    """(Adam with eps 1e-5 over module's parameters, fused): on a CUDA device
    with PyTorch 2 the fused Adam, one kernel for every parameter, which
    skips a step on the device when told its gradient was not finite."""
    if device.type == "cuda" and int(torch.__version__.split(".")[0]) >= 2:
        try:
            adam: Any = torch.optim.Adam  # PyTorch 1.x's stubs know no fused
            return adam(module.parameters(), lr=lr, eps=1e-5, fused=True), True
        except (TypeError, RuntimeError):
            pass
    return torch.optim.Adam(module.parameters(), lr=lr, eps=1e-5), False


def _grad_norm(grads: List[torch.Tensor], fused: bool) -> torch.Tensor:
    """The global norm of grads, a float64 scalar on their device: with
    fused, each tensor's norm in one foreach kernel (no launch a tensor),
    else each tensor's squares summed in float64."""
    if fused and hasattr(torch, "_foreach_norm"):
        norms = torch._foreach_norm(grads)
        return torch.linalg.vector_norm(torch.stack(norms).double())
    return torch.sqrt(cast(torch.Tensor, sum((g.double() * g.double()).sum() for g in grads)))


def _scale_(grads: List[torch.Tensor], scale: torch.Tensor) -> None:
    """grads *= scale (a scalar tensor on their device), in place."""
    try:
        getattr(torch, "_foreach_mul_")(grads, scale)  # PyTorch 2.1's tensor overload
    except (TypeError, RuntimeError, AttributeError):  # torch before 2.1: no tensor overload
        for g in grads:
            g.mul_(scale)


class _Staging:
    """Host buffers a batch is gathered into: pinned when the device is a GPU,
    two sets used in turn so that one update's copies to the device never
    race the next one's gather."""

    def __init__(self, device: torch.device) -> None:
        self.pin = device.type == "cuda"
        self.sets: List[Dict[int, torch.Tensor]] = [{}, {}]
        self.turn = 0

    def next(self) -> None:
        self.turn ^= 1

    def take(self, array: int, nbytes: int) -> torch.Tensor:
        """A uint8 host tensor of nbytes for array in this turn's set."""
        bufs = self.sets[self.turn]
        buf = bufs.get(array)
        if buf is None or buf.numel() < nbytes:
            buf = torch.empty(max(nbytes, 1), dtype=torch.uint8, pin_memory=self.pin)
            bufs[array] = buf
        return buf[:nbytes]


class TorchEngine:
    """An outside engine (see volley.engine.ops_for) training volley.torch's
    module of config's model spec, or module when given (a network with
    VolleyNet's interface: forward, dist, num_actions, state_size, set_norm;
    volley.torch.custom.CustomNet); device None: CUDA when available, else
    the CPU. compile: torch.compile the module (PyTorch 2). amp "bf16":
    forward and loss under bfloat16 autocast. ValueError for an option this
    torch cannot honour."""

    def __init__(self, config: E.Config, device: Any = None, compile: bool = False,
                 amp: Optional[str] = None, module: Optional[torch.nn.Module] = None) -> None:
        if amp not in (None, "bf16"):
            raise ValueError(f"amp: expected None or 'bf16', got {amp!r}")
        self.config = c = config
        self.device = torch.device(device) if device is not None else default_device()
        self.module: VolleyNet = cast(VolleyNet, module) if module is not None else \
            build(c.model, c.fields, c.action, seed=c.seed)
        self.module.set_norm(False)  # the learner hands observations normalised already
        if self.module.state_size != c.state_size:
            raise ValueError(f"{c.model!r}: a state of {self.module.state_size} floats, the "
                             f"learner's {c.state_size}")
        self.module.to(self.device)
        self.net = self.module
        if compile:
            if not hasattr(torch, "compile"):
                raise ValueError(f"compile: torch.compile needs PyTorch 2, this is "
                                 f"{torch.__version__}")
            self.net = torch.compile(self.module)
        self.amp = amp
        self.opt, self.fused = _adam(self.module, c.lr, self.device)
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = True  # the shapes repeat update after update
        self.T, self.D, self.W = c.horizon, c.obs_dim, c.action.dims
        self.A, self.S = self.module.num_actions, self.module.state_size
        self.layout = packed_layout(c.fields)
        self.packed = not c.norm_obs and any(enc != "f32" for _, enc in c.fields)
        self.staging = _Staging(self.device)
        self._host: Dict[str, torch.Tensor] = {}
        self._event: Any = None
        self._stage_weights()

    # ---- the batch on the device ----

    def _autocast(self) -> Any:
        if self.amp != "bf16":
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    def _gather(self, batch: E.Batch, array: int, dtype: torch.dtype,
                shape: Tuple[int, ...]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(host, device) tensors of array, gathered by C into the staging buffer."""
        nbytes = batch.nbytes(array)
        buf = self.staging.take(array, nbytes)
        batch.gather_into(array, buf.data_ptr(), nbytes)
        host = buf.view(dtype).reshape(shape)
        return host, host.to(self.device, non_blocking=True)

    def load_batch(self, batch: E.Batch) -> Dict[str, Any]:
        """The batch's arrays: obs, actions, dones, state, weights, final (on
        the device; final the truncated steps' final observations [k, D],
        None without truncations) and rewards, dones, logp, truncated (host
        NumPy)."""
        n, T, D, W = batch.n, self.T, self.D, self.W
        self.staging.next()
        f32 = torch.float32
        if self.packed:
            enc, count, offset = self.layout[-1]
            wire = offset + wire_bytes(enc, count)
            _, packed = self._gather(batch, E.OBS_PACKED, torch.uint8, (n, T + 1, wire))
            obs = obs_from_packed(packed, self.layout)
        else:
            _, obs = self._gather(batch, E.OBS, f32, (n, T + 1, D))
        _, actions = self._gather(batch, E.ACTIONS, f32, (n, T, W))
        rewards, _ = self._gather(batch, E.REWARDS, f32, (n, T))
        dones_h, dones = self._gather(batch, E.DONES, f32, (n, T))
        logp, _ = self._gather(batch, E.LOGP, f32, (n, T))
        trunc, _ = self._gather(batch, E.TRUNCATED, torch.uint8, (n, T))
        _, weights = self._gather(batch, E.WEIGHTS, f32, (n,))
        state = self._gather(batch, E.STATE, f32, (n, self.S))[1] if self.S else None
        trunc_np = trunc.numpy().astype(bool)
        final = self._finals(batch, trunc_np) if trunc_np.any() else None
        return dict(obs=obs, actions=actions, dones=dones, state=state, weights=weights,
                    final=final, rewards=rewards.numpy(), dones_h=dones_h.numpy(),
                    logp=logp.numpy(), truncated=trunc_np)

    def _finals(self, batch: E.Batch, cut: np.ndarray) -> torch.Tensor:
        """The final observations of the truncated steps cut [n, T] marks, [k,
        D] on the device in (segment, step) order: packed, as the wire packs
        them, where observations cross packed (no n x T x D floats of zeros
        around them), else the rows of FINAL_OBS."""
        k = int(cut.sum())
        if self.packed:
            wire = batch.nbytes(E.FINAL_PACKED) // k
            return obs_from_packed(self._gather(batch, E.FINAL_PACKED, torch.uint8, (k, wire))[1],
                                   self.layout)
        host = self._gather(batch, E.FINAL_OBS, torch.float32, (len(cut), self.T, self.D))[0]
        return host[torch.from_numpy(cut)].to(self.device, non_blocking=True)

    # ---- one update ----

    def _seq(self, obs: torch.Tensor, state: Optional[torch.Tensor],
             reset: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.module.forward_seq(obs, state, reset)

    def _outputs(self, obs: torch.Tensor, state: Any, reset: Any) -> Tuple[torch.Tensor,
                                                                            torch.Tensor]:
        """(outputs [B, L, A], values [B, L]) of obs [B, L, D]."""
        if self.S:
            out, v, _ = self._seq(obs, state, reset)
            return out, v
        B, L = obs.shape[:2]
        out, v = self.net(obs.reshape(B * L, self.D))
        return out.reshape(B, L, -1), v.reshape(B, L)

    def targets(self, b: Dict[str, Any]) -> Dict[str, Any]:
        """Old log-probs, V-trace targets and advantages for batch arrays b
        (load_batch's), with the weights before the update."""
        n, T, c = b["obs"].shape[0], self.T, self.config
        reset = None
        if self.S:
            reset = torch.zeros(n, T + 1, dtype=torch.bool, device=self.device)
            reset[:, 1:] = b["dones"] != 0
        with torch.no_grad(), self._autocast():
            out, values = self._outputs(b["obs"], b["state"], reset)
            out, values = out.float(), values.float()
            old_logp = self.module.dist(out[:, :T].reshape(n * T, -1)).log_prob(
                b["actions"].reshape(n * T, -1)).reshape(n, T).float()
            boot = self._boot(b, reset) if b["final"] is not None else None
        values_np = values.cpu().numpy().astype(np.float32)
        log_rhos = old_logp.cpu().numpy() - b["logp"]
        vs, adv = vtrace(values_np, b["rewards"], b["dones_h"], log_rhos, gamma=c.gamma,
                         lam=c.lam, rho_bar=c.rho_bar, c_bar=c.c_bar, pg_rho_bar=c.rho_bar,
                         boot=boot)
        vs, adv = np.array(vs), np.array(adv)
        return dict(old_logp=old_logp, values=values_np, vs=vs, adv=adv, reset=reset)

    def _boot(self, b: Dict[str, Any], reset: Optional[torch.Tensor]) -> np.ndarray:
        """V(final observation) at each truncated step [n, T] (0 elsewhere); a
        recurrent model's after its episode's history alone, as
        learner/vl_trainer.c lays it out: each segment's T+1 rows again with
        each final observation inserted after its step (no reset there, the
        next episode's first row still resetting), then zero rows up to the
        most truncations one segment holds."""
        cut = b["truncated"]
        n, T = cut.shape
        ii, tt = np.nonzero(cut)
        if not self.S:
            fv = self.net(b["final"])[1].float()
        else:
            before = np.zeros((n, T + 1), np.int64)  # truncations before each row
            before[:, 1:] = np.cumsum(cut, axis=1)
            L = T + 1 + int(before[:, -1].max())
            rows = np.arange(T + 1)[None, :] + before  # where each row goes
            frow = tt + before[ii, tt] + 1  # where each final observation goes
            seg = torch.arange(n, device=self.device)[:, None]
            dev_rows = torch.from_numpy(rows).to(self.device)
            dev_i, dev_f = (torch.from_numpy(a.astype(np.int64)).to(self.device)
                            for a in (ii, frow))
            obs2 = torch.zeros(n, L, self.D, dtype=b["obs"].dtype, device=self.device)
            reset2 = torch.ones(n, L, dtype=torch.bool, device=self.device)
            obs2[seg, dev_rows] = b["obs"]
            assert reset is not None  # a recurrent model's batch always has its resets
            reset2[seg, dev_rows] = reset
            obs2[dev_i, dev_f] = b["final"].to(obs2.dtype)
            reset2[dev_i, dev_f] = False
            fv = self._seq(obs2, b["state"], reset2)[1].float()[dev_i, dev_f]
        boot = np.zeros((n, T), np.float32)
        boot[cut] = fv.cpu().numpy()
        return boot

    @staticmethod
    def _explained_var(vs: np.ndarray, values: np.ndarray) -> float:
        y = vs.astype(np.float64)
        d = y - values[:, :-1].astype(np.float64)
        N = y.size
        var_y = (y * y).sum() / N - (y.sum() / N) ** 2
        var_d = (d * d).sum() / N - (d.sum() / N) ** 2
        return float(1.0 - var_d / var_y) if var_y > 1e-12 else float("nan")

    def _loss(self, out: torch.Tensor, v: torch.Tensor, actions: torch.Tensor,
              old_logp: torch.Tensor, adv: torch.Tensor, vs: torch.Tensor,
              w: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(loss, stats [5]) of m samples: policy loss, value loss, entropy,
        approx_kl, clip_frac, as models/vl_policy.c's loss defines them."""
        c, m = self.config, adv.shape[0]
        a64 = adv.double()
        mean = a64.mean()
        var = (a64 * a64).mean() - mean * mean
        inv = (1.0 / (var.clamp(min=0).sqrt() + 1e-8)).float()
        adv = (adv - mean.float()) * inv
        d = self.module.dist(out.float())
        log_ratio = d.log_prob(actions).float() - old_logp
        ratio = log_ratio.exp()
        s1 = ratio * adv
        s2 = ratio.clamp(1.0 - c.clip, 1.0 + c.clip) * adv
        # min(s1, s2) whose gradient is s1's where s1 <= s2 and none where the clamp wins
        surr = torch.where(s1 <= s2, s1, s2.detach())
        ent = d.entropy().float()
        err = v.float() - vs
        wn = w / m
        loss = (wn * (-surr - c.ent_coef * ent + c.vf_coef * 0.5 * err * err)).sum()
        with torch.no_grad():
            stats = torch.stack([-surr.mean(), 0.5 * (err * err).mean(), ent.mean(),
                                 ((ratio - 1) - log_ratio).mean(),
                                 ((ratio - 1).abs() > c.clip).float().mean()])
        return loss, stats

    def _step(self, lr: float) -> None:
        """The global gradient norm clipped as models/vl_policy.c clips it, then
        Adam; a step whose gradient is not finite is skipped: by the fused
        Adam on the device where there is one (no wait for the device), else
        after reading the norm."""
        grads = [p.grad for p in self.module.parameters() if p.grad is not None]
        norm = _grad_norm(grads, self.fused)
        if not self.fused and not bool(torch.isfinite(norm)):
            return
        mg = self.config.max_grad_norm
        if mg > 0:
            scale = torch.where(norm > mg, mg / (norm.float() + 1e-6),
                                torch.ones((), dtype=torch.float32, device=norm.device))
            _scale_(grads, scale)
        for group in self.opt.param_groups:
            group["lr"] = lr
        if self.fused:  # read by the fused kernel on the device: 1 skips the step
            setattr(self.opt, "found_inf", (~torch.isfinite(norm)).float())
        self.opt.step()

    def update(self, batch: E.Batch, lr: float) -> Tuple[E.Stats, np.ndarray]:
        """One update on batch at lr: (stats, adv_sums [n])."""
        b = self.load_batch(batch)
        t = self.targets(b)
        n, T, c = batch.n, self.T, self.config
        adv_abs = np.abs(t["adv"]).astype(np.float64)
        figures = {"mean_abs_adv": float(adv_abs.sum() / (n * T)),
                   "explained_var": self._explained_var(t["vs"], t["values"])}
        sums = adv_abs.sum(axis=1).astype(np.float32)
        vs = torch.from_numpy(t["vs"]).to(self.device)
        adv = torch.from_numpy(t["adv"]).to(self.device)
        old_logp = t["old_logp"]
        if self.S:
            N, M = n, max(1, c.minibatch // T)
        else:
            N, M = n * T, c.minibatch
            flat_obs = b["obs"][:, :T].reshape(n * T, self.D)
            flat_w = b["weights"].repeat_interleave(T)
        acc = torch.zeros(5, dtype=torch.float64, device=self.device)
        steps = 0
        for _ in range(c.epochs):
            perm = torch.from_numpy(batch.shuffle(N).astype(np.int64)).to(self.device)
            acc.zero_()
            steps = 0
            for start in range(0, N, M):
                idx = perm[start:start + M]
                self.opt.zero_grad(set_to_none=True)
                with self._autocast():
                    if self.S:
                        loss, st = self._sequence_loss(b, t["reset"], idx, old_logp, adv, vs)
                    else:
                        out, v = self.net(flat_obs[idx])
                        ii, tt = idx // T, idx % T
                        loss, st = self._loss(out, v, b["actions"][ii, tt], old_logp[ii, tt],
                                              adv[ii, tt], vs[ii, tt], flat_w[idx])
                loss.backward()
                self._step(lr)
                acc += st.double()
                steps += 1
                if E.stopping():  # the learner checkpoints within its grace
                    break
            if E.stopping():
                break
        mean = (acc / max(steps, 1)).cpu().numpy()
        figures.update(zip(("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac"),
                           (float(x) for x in mean)))
        self._stage_weights()
        return figures, sums

    def _sequence_loss(self, b: Dict[str, Any], reset: torch.Tensor, idx: torch.Tensor,
                       old_logp: torch.Tensor, adv: torch.Tensor,
                       vs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The loss of whole segments idx: their first burn_in steps rebuild the
        state from the stored one without gradient, the rest carry the loss."""
        T = self.T
        K = self.config.burn_in if self.config.burn_in < T else 0
        obs, state = b["obs"][idx], b["state"][idx]
        r = reset[idx]
        if K:
            with torch.no_grad():
                state = self._seq(obs[:, :K], state, r[:, :K])[2]
        out, v, _ = self._seq(obs[:, K:T], state, r[:, K:T])
        L = T - K
        w = b["weights"][idx][:, None].expand(-1, L).reshape(-1)
        return self._loss(out.reshape(-1, self.A), v.reshape(-1),
                          b["actions"][idx, K:].reshape(-1, self.W),
                          old_logp[idx, K:].reshape(-1), adv[idx, K:].reshape(-1),
                          vs[idx, K:].reshape(-1), w)

    # ---- weights and optimiser state ----

    def _stage_weights(self) -> None:
        """Starts copying the module's tensors (norm.* left out) to host memory:
        pinned and without blocking on a GPU, a CUDA event marking the end."""
        sd = {k: v for k, v in self.module.state_dict().items() if k not in NORM_TENSORS}
        if self.device.type != "cuda":
            self._host = {k: v.detach().to(torch.float32).contiguous().clone()
                          for k, v in sd.items()}
            return
        for k, v in sd.items():
            h = self._host.get(k)
            if h is None or h.shape != v.shape:
                h = self._host[k] = torch.empty(v.shape, dtype=torch.float32, pin_memory=True)
            h.copy_(v.detach(), non_blocking=True)
        self._event = torch.cuda.Event()
        self._event.record()

    def weights(self) -> List[Tuple[str, int, Tuple[int, ...]]]:
        """The tensors to publish, in the C model's names and order: (name,
        host address of float32 data, shape), valid until the next update."""
        if self._event is not None:
            self._event.synchronize()
        return [(k, h.data_ptr(), tuple(h.shape)) for k, h in self._host.items()]

    def state_dict(self) -> Dict[str, np.ndarray]:
        """The published tensors as NumPy copies."""
        if self._event is not None:
            self._event.synchronize()
        return {k: h.numpy().copy() for k, h in self._host.items()}

    def optimizer(self) -> bytes:
        """Adam's state as bytes: OPT_MAGIC, the parameter count (uint32), then
        per parameter in the module's order its size and steps (uint64 each)
        and its two moments (float32), as vl_adam keeps one array's."""
        parts = [OPT_MAGIC, np.uint32(len(self.opt.param_groups[0]["params"])).tobytes()]
        for p in self.opt.param_groups[0]["params"]:
            st = self.opt.state.get(p, {})
            steps = int(st["step"]) if "step" in st else 0
            parts.append(np.array([p.numel(), steps], np.uint64).tobytes())
            for k in ("exp_avg", "exp_avg_sq"):
                m = st.get(k)
                m = torch.zeros(p.numel()) if m is None else m.detach().float().reshape(-1)
                parts.append(m.cpu().numpy().tobytes())
        return b"".join(parts)

    def _load_optimizer(self, raw: bytes) -> None:
        """Adam's state from optimizer()'s bytes; ValueError for any other."""
        params = self.opt.param_groups[0]["params"]
        head = len(OPT_MAGIC) + 4
        if raw[:len(OPT_MAGIC)] != OPT_MAGIC or len(raw) < head or \
                int(np.frombuffer(raw, np.uint32, 1, len(OPT_MAGIC))[0]) != len(params):
            raise ValueError("the checkpoint's optimiser state is not this engine's Adam (a C "
                             "learner's checkpoint, or another model's?)")
        sd, at = self.opt.state_dict(), head
        for i, p in enumerate(params):
            numel, steps = (int(x) for x in np.frombuffer(raw, np.uint64, 2, at))
            if numel != p.numel() or len(raw) < at + 16 + 8 * numel:
                raise ValueError(f"optimiser state: parameter {i} has {numel} values, the "
                                 f"module's {p.numel()}")
            at += 16
            m, v = (torch.from_numpy(np.frombuffer(raw, np.float32, numel, at + j * 4 * numel)
                                     .copy()).reshape(p.shape) for j in (0, 1))
            at += 8 * numel
            sd["state"][i] = {"step": torch.tensor(float(steps)), "exp_avg": m, "exp_avg_sq": v}
        self.opt.load_state_dict(sd)

    def load(self, tensors: Dict[str, np.ndarray], opt: bytes = b"") -> None:
        """A checkpoint's weights (norm.* ignored: the learner keeps its own)
        and Adam's state (b"": none kept)."""
        load_weights(self.module, {k: v for k, v in tensors.items() if k not in NORM_TENSORS})
        self.module.set_norm(False)
        if opt:
            self._load_optimizer(bytes(opt))
        self._stage_weights()

    def close(self) -> None:
        """Nothing held outside Python's reach: the module and buffers go with the object."""
        self._event = None
