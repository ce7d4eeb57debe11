"""The PyTorch engine takes the C engine's update: the same batch
(vl_engine_batch_new) and initial weights through one update of the C
engine (vl_engine_new, ops NULL) and of TorchEngine (vl_engine_new with its
ops) give the same loss figures and the same updated weights, for an mlp on
cartpole's fields (importance weights not all 1), a conv net on a u8 image,
linear(64) lstm(64) with burn-in and truncations (and with two truncated
episodes in one segment, each bootstrapped after its own history alone, as
a reference running each episode alone gives), a Gaussian box policy with
normalisation on and a multi-discrete one; each with two epochs of several
minibatches, so the learner's shuffle orders both. And one epoch of one
minibatch holding the whole batch, where the C engine takes its loss through
the forward pass that recomputed its targets (its single pass) while the
torch engine runs that pass again: an lstm with truncations, an mlp with
importance weights. Figures agree to 1e-5
relative (the policy loss, a mean of unit-sized terms that nearly cancel,
relative to 1; approx_kl and clip_frac relative to the losses' size), weights to 1e-4 (rel_err: relative to the tensor's
largest value). The torch engine runs on $VOLLEY_TORCH_DEVICE (cpu unless
set: bench/gpu_check.sh sets cuda), with TF32 off, so a GPU's sums are held
to the same bounds."""
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley import ActionSpace  # noqa: E402
from volley import engine as E  # noqa: E402
from volley.torch.engine import TorchEngine  # noqa: E402

pytestmark = pytest.mark.skipif(not E._lib.has("vl_engine_new"),
                                reason="libvolley without include/volley/engine.h's engines")
DEVICE = os.environ.get("VOLLEY_TORCH_DEVICE", "cpu")
# Adam divides each step by its gradient's running size, so an element whose
# gradient is near zero moves by lr whatever its sign: float32 sums taken in
# another order (a GPU's reductions) reach the weights at 1e-4 after a few
# steps (an H200: 1.1e-4 on lstm's pi.weight after 6); on the CPU, 1e-4 holds.
WEIGHTS_TOL = 1e-4 if DEVICE == "cpu" else 1e-3
if DEVICE.startswith("cuda"):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def rel_err(got, want):
    """max over elements of |got - want| / max(|want|, max |want|)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    floor = max(np.abs(want).max() if want.size else 0.0, 1e-30)
    return float((np.abs(got - want) / np.maximum(np.abs(want), floor)).max())


def make_arrays(cfg, n, seed, truncate=True, weights=False, state=False):
    """n segments of cfg's spec: random observations of each field's range,
    valid actions, episode ends (some of them time limits, with final
    observations), behaviour log-probs near the policy's."""
    r = np.random.default_rng(seed)
    T, D = cfg.horizon, cfg.obs_dim
    cols = []
    for shape, enc in cfg.fields:
        k = int(np.prod(shape))
        top = {"u8": 256, "u2": 4, "u1": 2}.get(enc)
        cols.append(r.integers(0, top, size=(n, T + 1, k)).astype(np.float32) if top else
                    r.normal(size=(n, T + 1, k)).astype(np.float32) * 2 + 0.5)
    obs = np.concatenate(cols, axis=2)
    a = cfg.action
    if a.is_box:
        actions = r.normal(size=(n, T, a.dims)).astype(np.float32)
    else:
        actions = np.stack([r.integers(0, int(k), size=(n, T)) for k in a.n[:a.dims]],
                           -1).astype(np.float32)
    dones = (r.random((n, T)) < 0.12).astype(np.float32)
    trunc = (dones * (r.random((n, T)) < 0.5)).astype(np.uint8) if truncate else None
    out = dict(obs=obs, actions=actions, rewards=r.normal(size=(n, T)).astype(np.float32),
               dones=dones, logp=(-0.7 - 0.3 * r.random((n, T))).astype(np.float32),
               truncated=trunc, actor_id=np.arange(n, dtype=np.uint32) % 2)
    if truncate:
        out["final_obs"] = obs[:, 1:] * 0.5 * trunc[..., None]
    if weights:
        out["weights"] = (0.4 + r.random(n)).astype(np.float32)
    if state:
        out["state"] = (0.3 * r.normal(size=(n, cfg.state_size))).astype(np.float32)
    return out


def net_tensors(d):
    return {k: v for k, v in d.items() if not k.startswith("norm.")}


def one_update(cfg, n, arrays=None, **kw):
    """(C's figures, C's weights, torch's figures, torch's weights, adv sums of both)
    of arrays (None: make_arrays')."""
    arrays = make_arrays(cfg, n, seed=7, **kw) if arrays is None else arrays
    c_eng = E.CEngine(cfg)
    torch_eng = TorchEngine(cfg, device=DEVICE)
    start = net_tensors(c_eng.tensors())
    for k, v in torch_eng.state_dict().items():  # both start from the seed's weights
        assert rel_err(v, start[k]) < 1e-6, k
    t_eng = E.CEngine(cfg, torch_eng)
    try:
        cb, tb = E.make_batch(cfg, n, arrays), E.make_batch(cfg, n, arrays)
        c_fig, c_sums = c_eng.update(cb)
        t_fig, t_sums = t_eng.update(tb)
        c_w, t_w = net_tensors(c_eng.tensors()), net_tensors(t_eng.tensors())
    finally:
        t_eng.close()
        c_eng.close()
    return c_fig, c_w, t_fig, t_w, c_sums, t_sums, start


def check_agree(cfg, n, **kw):
    c_fig, c_w, t_fig, t_w, c_sums, t_sums, start = one_update(cfg, n, **kw)
    scale = max(abs(c_fig["policy_loss"]), abs(c_fig["value_loss"]), 1e-30)
    for k, want in c_fig.items():
        got = t_fig[k]
        if math.isnan(want):
            assert math.isnan(got), k
            continue
        # the policy loss is a mean of terms of unit size (normalised advantages) that
        # nearly cancel: its size is 1's; approx_kl's and clip_frac's, the losses'
        floor = {"policy_loss": max(abs(want), 1.0), "approx_kl": scale,
                 "clip_frac": scale}.get(k, abs(want))
        assert abs(got - want) <= 1e-5 * max(floor, 1e-30), (k, got, want, t_fig, c_fig)
    assert rel_err(t_sums, c_sums) < 1e-5
    assert list(t_w) == list(c_w)
    moved = max(rel_err(c_w[k], start[k]) for k in c_w)
    assert moved > 1e-3  # the update changed the weights, so agreeing means something
    for k in c_w:
        assert rel_err(t_w[k], c_w[k]) < WEIGHTS_TOL, (k, rel_err(t_w[k], c_w[k]))
    return c_fig


def test_mlp_on_cartpoles_fields_with_importance_weights():
    cfg = E.config_default([((4,), "f32")], 2, horizon=16)
    cfg = cfg.replace(epochs=2, minibatch=48, batch_segments=8)
    check_agree(cfg, 8, weights=True)


def test_conv_net_on_a_u8_image():
    cfg = E.config_default([((2, 10, 10), "u8")], 3, horizon=8,
                           model="conv(4,3,2) relu linear(32) relu")
    cfg = cfg.replace(epochs=2, minibatch=16, batch_segments=6)
    check_agree(cfg, 6)


def test_lstm_with_burn_in_and_truncations():
    cfg = E.config_default([((4,), "f32")], 2, horizon=16, model="linear(64) lstm(64)")
    assert cfg.state_size == 128
    cfg = cfg.replace(epochs=2, minibatch=32, burn_in=4, batch_segments=6)
    check_agree(cfg, 6, state=True)


def two_truncations(cfg, n, seed):
    """make_arrays' segments with segment 0's episodes cut by time limits at
    steps 4 and 10 and segment 1's at its first and last steps."""
    arrays = make_arrays(cfg, n, seed=seed, state=True)
    T = cfg.horizon
    for i, cuts in ((0, (4, 10)), (1, (0, T - 1))):
        arrays["dones"][i] = 0
        arrays["truncated"][i] = 0
        arrays["dones"][i, list(cuts)] = 1
        arrays["truncated"][i, list(cuts)] = 1
    arrays["final_obs"] = (arrays["obs"][:, 1:] * 0.5 + 1.0) * arrays["truncated"][..., None]
    return arrays


def test_lstm_two_truncations_in_one_segment():
    cfg = E.config_default([((4,), "f32")], 2, horizon=16, model="linear(32) lstm(16)")
    cfg = cfg.replace(epochs=2, minibatch=32, batch_segments=4)
    arrays = two_truncations(cfg, 4, seed=11)
    eng = TorchEngine(cfg, device=DEVICE)
    b = eng.load_batch(E.make_batch(cfg, 4, arrays))
    reset = torch.zeros(4, cfg.horizon + 1, dtype=torch.bool, device=eng.device)
    reset[:, 1:] = b["dones"] != 0
    with torch.no_grad():
        boot = eng._boot(b, reset)
    obs, fin, st = (torch.from_numpy(arrays[k]) for k in ("obs", "final_obs", "state"))
    with torch.no_grad():
        for i, t in zip(*np.nonzero(arrays["truncated"])):
            cuts = np.nonzero(arrays["dones"][i, :t])[0]
            start = int(cuts[-1]) + 1 if cuts.size else 0
            # each episode alone: the segment's stored state for its first, zeros after a reset
            seq = torch.cat([obs[i, start:t + 1], fin[i, t][None]])[None].to(eng.device)
            s0 = st[i][None].to(eng.device) if start == 0 else None
            want = float(eng.module.forward_seq(seq, s0)[1][0, -1])
            # on a GPU the packed sequence kernel and a lone sequence sum in other orders
            floor = 1e-3 if DEVICE == "cpu" else 1.0
            assert abs(boot[i, t] - want) <= 1e-5 * max(abs(want), floor), (i, t, boot[i, t], want)
    c_fig, c_w, t_fig, t_w, c_sums, t_sums, start = one_update(cfg, 4, arrays=arrays)
    assert rel_err(t_sums, c_sums) < 1e-5
    for k in c_w:
        assert rel_err(t_w[k], c_w[k]) < WEIGHTS_TOL, (k, rel_err(t_w[k], c_w[k]))


def test_single_pass_of_one_epoch_over_the_whole_batch():
    cfg = E.config_default([((4,), "f32")], 2, horizon=16, model="linear(32) lstm(16)")
    cfg = cfg.replace(epochs=1, minibatch=4 * 16, batch_segments=4)
    check_agree(cfg, 4, arrays=two_truncations(cfg, 4, seed=12))
    cfg = E.config_default([((4,), "f32")], 2, horizon=16)
    cfg = cfg.replace(epochs=1, minibatch=8 * 16, batch_segments=8)
    check_agree(cfg, 8, weights=True)


def test_box_policy_with_normalisation_on():
    cfg = E.config_default([((3,), "f32")], ActionSpace.box([-2, -2], [2, 2]), horizon=16)
    cfg = cfg.replace(epochs=2, minibatch=32, batch_segments=6, norm_obs=True, norm_reward=True)
    check_agree(cfg, 6)


def test_multi_discrete_policy():
    cfg = E.config_default([((5,), "f32")], ActionSpace.multi_discrete([3, 2, 4]), horizon=16)
    cfg = cfg.replace(epochs=3, minibatch=40, batch_segments=6)
    check_agree(cfg, 6)


def test_weights_and_optimizer_round_trip_through_load():
    """load() restores what weights() and optimizer() gave: a second engine
    loaded from the first takes the same next update."""
    cfg = E.config_default([((4,), "f32")], 2, horizon=8).replace(minibatch=16,
                                                                   batch_segments=4)
    arrays = make_arrays(cfg, 4, seed=3)
    a = TorchEngine(cfg, device=DEVICE)
    ea = E.CEngine(cfg, a)
    try:
        ea.update(E.make_batch(cfg, 4, arrays))
        b = TorchEngine(cfg, device=DEVICE)
        b.load(a.state_dict(), a.optimizer())
        assert b.optimizer() == a.optimizer()
        with pytest.raises(ValueError, match="not this engine's Adam"):
            b.load(a.state_dict(), b"\0" * 64)
    finally:
        ea.close()
