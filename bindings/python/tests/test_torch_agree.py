"""volley.torch builds the C engine's network (volley.Model, include/volley/model.h)
in PyTorch: the same tensors (names, shapes, order), and with the same weights
the same outputs and the same parameter gradients, layer kind by layer kind
and for whole networks; weights cross between the two unchanged both ways.

How agreement is judged: float32 C against float32 PyTorch, elementwise
relative error |c - t| / max(|t|, floor), at most 1e-5 for logits and values
and 1e-4 for gradients. The floor is the tensor's largest magnitude: an
element made by summing many products carries float32 rounding of the size
of its terms, not of itself, so an element that cancels to near zero is
judged against the tensor's scale (PyTorch's own float32 against float64 on
the cnn preset is already 1.2e-5 off at a floor of a tenth of that, 1.2e-6
at this one). A failure also prints each side's error against a float64
PyTorch run of the same weights: both near it and apart from each other is
more than rounding. Each case prints its worst errors (pytest -s shows them)."""
import copy
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import need

import volley
from volley import VolleyError

torch = need("torch")
import volley.torch as vt  # noqa: E402  (after torch is known to be there)

OUT_TOL, GRAD_TOL = 1e-5, 1e-4
# A hand-written small-frame net with padding: 16x16 -> 8x8 -> 4x4, 512 features.
SMALL_CNN = "conv(16,3,2,1) relu conv(32,3,2,1) relu linear(256) relu"
CATCH = [((1, 16, 16), "u2")]  # catch's screen
_HIGH = {"u8": 255, "u2": 3, "u1": 1}


def rel_err(got, want):
    """max over elements of |got - want| / max(|want|, max |want|) (see the docstring)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = np.abs(want).max() if want.size else 0.0
    floor = max(scale, 1e-30)
    return float((np.abs(got - want) / np.maximum(np.abs(want), floor)).max())


def make_obs(fields, n, seed):
    """n observations of fields [(shape, encoding)] as float32 [n, obs_dim]: integer
    fields hold random values of their range (raw, as actors send them), f32 fields
    standard normals."""
    rng = np.random.default_rng(seed)
    parts = []
    for shape, enc in fields:
        size = int(np.prod(shape))
        if enc in _HIGH:
            parts.append(rng.integers(0, _HIGH[enc] + 1, (n, size)).astype(np.float32))
        else:
            parts.append(rng.standard_normal((n, size)).astype(np.float32))
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def torch_run(net, obs, dlogits, dvalues, dtype):
    """(logits, values, {name: grad}) of net in dtype, grads of
    sum(logits * dlogits) + sum(values * dvalues)."""
    net = copy.deepcopy(net).to(dtype)
    logits, values = net(torch.from_numpy(obs).to(dtype))
    loss = (logits * torch.from_numpy(dlogits).to(dtype)).sum() + \
        (values * torch.from_numpy(dvalues).to(dtype)).sum()
    loss.backward()
    grads = {k: p.grad.detach().numpy() for k, p in net.named_parameters()}
    return logits.detach().numpy(), values.detach().numpy(), grads


def same_layout(model, net):
    ours = [(k, tuple(v.shape)) for k, v in net.state_dict().items()]
    theirs = [(k, tuple(v.shape)) for k, v in model.tensors().items()]
    assert ours == theirs, f"torch {ours}\n   C {theirs}"


def check_agree(spec, fields, num_actions, n=5, seed=3):
    """The C model (weights from seed) and volley.torch's module given C's weights:
    same layout, outputs and gradients within tolerance."""
    model = volley.Model(spec, fields, num_actions, seed=seed)
    net = vt.build(spec, fields, num_actions, seed=None)  # PyTorch's own init ...
    same_layout(model, net)
    vt.load_weights(net, model.tensors())  # ... replaced by C's, by name
    for k, v in net.state_dict().items():
        assert np.array_equal(v.numpy(), model.tensors()[k]), k
    obs = make_obs(model.fields, n, seed)
    rng = np.random.default_rng(seed + 1)
    dlogits = rng.standard_normal((n, num_actions)).astype(np.float32)
    dvalues = rng.standard_normal(n).astype(np.float32)

    logits, values = model.forward(obs)
    model.zero_grad()
    model.backward(dlogits, dvalues)
    grads = model.grads(copy=True)
    t32 = torch_run(net, obs, dlogits, dvalues, torch.float32)
    t64 = torch_run(net, obs, dlogits, dvalues, torch.float64)

    def verdict(what, c, t, r, tol):
        e = rel_err(c, t)
        return e <= tol, (f"{spec} {what}: C vs torch float32 {e:.3g} (tolerance {tol:g}); "
                          f"vs float64: C {rel_err(c, r):.3g}, torch {rel_err(t, r):.3g}")

    bad = []
    for what, c, t, r in (("logits", logits, t32[0], t64[0]), ("values", values, t32[1], t64[1])):
        ok, line = verdict(what, c, t, r, OUT_TOL)
        bad += [] if ok else [line]
    assert list(grads) == list(t32[2])
    for name in grads:
        ok, line = verdict(f"grad {name}", grads[name], t32[2][name], t64[2][name], GRAD_TOL)
        bad += [] if ok else [line]
    assert not bad, "\n".join(bad)
    worst_out = max(rel_err(logits, t32[0]), rel_err(values, t32[1]))
    worst_grad = max(rel_err(grads[k], t32[2][k]) for k in grads)
    print(f"{spec} on {model.fields}: outputs {worst_out:.2g}, gradients {worst_grad:.2g}")
    assert np.abs(logits).max() > 0 and all(np.abs(g).max() > 0 for g in grads.values()), \
        "a degenerate case: zero outputs or a zero gradient agree with anything"
    return model, net


# ---- one layer kind at a time ----------------------------------------------


def test_conv_alone():
    check_agree("conv(4,3,1)", [((2, 7, 6), "u8")], 3)


def test_conv_with_pad_and_stride():
    check_agree("conv(5,3,2,1)", [((3, 9, 8), "u8")], 3)
    check_agree("conv(4,4,3,2) conv(3,2,1,1)", [((2, 11, 13), "u8")], 4)


def test_activations_after_conv():
    check_agree("conv(4,3,1) relu", [((2, 8, 8), "u8")], 3)
    check_agree("conv(4,3,2) tanh", [((2, 9, 9), "u2")], 3)


def test_activations_after_linear():
    check_agree("conv(4,3,1) linear(8) relu", [((1, 6, 6), "u8")], 3)
    check_agree("conv(4,3,1) relu linear(8) tanh", [((1, 6, 6), "u8")], 3)
    check_agree("conv(4,3,1) linear(8)", [((1, 6, 6), "u1")], 2)


def test_linear_only_specs_are_two_towers():
    model, net = check_agree("mlp", [((4,), "f32")], 2)  # CartPole's network
    assert list(model.tensors()) == [f"{h}.{j}.{p}" for h in ("pi", "v") for j in range(3)
                                     for p in ("weight", "bias")]
    check_agree("linear(128) relu linear(128) relu", [((6,), "f32")], 3)
    check_agree("linear(16)", [((5,), "f32")], 2)
    # without conv layers an image field is taken as its values, unscaled
    check_agree("mlp(32)", [((1, 4, 4), "u8"), ((3,), "f32")], 3)


# ---- whole networks ---------------------------------------------------------


def test_two_image_fields_and_a_vector_field():
    fields = [((3, 12, 10), "u8"), ((5,), "f32"), ((1, 9, 9), "u2")]
    model, net = check_agree("conv(6,3,2,1) relu conv(8,3,1) tanh linear(32) relu linear(16) tanh",
                             fields, 3)
    assert [k for k in model.tensors() if k.startswith("conv.1.")] == \
        ["conv.1.0.weight", "conv.1.0.bias", "conv.1.1.weight", "conv.1.1.bias"]
    assert model.shapes["conv.1.0.weight"] == (6, 1, 3, 3)


def test_every_encoding_and_a_four_dimensional_field():
    # an f32 image is taken as it is (scale 1); a 4-d field is not an image: its values
    check_agree("conv(3,2,1) relu linear(8) relu",
                [((2, 5, 5), "f32"), ((2, 2, 2, 2), "f32"), ((1, 4, 4), "u1")], 3)


def test_cnn_preset_on_84x84_frames():
    model, _ = check_agree("cnn", [((4, 84, 84), "u8")], 6, n=4)
    assert model.shapes["torso.0.weight"] == (512, 64 * 7 * 7)


def test_small_frame_cnn_on_catch_screen():
    # cnn on a frame under 36x36 is the Nature torso scaled down: 16x16 -> 7x7 -> 5x5
    model, net = check_agree("cnn", CATCH, 3, n=6)
    assert model.spec_text == net.spec_text == \
        "conv(16,3,2) relu conv(32,3,1) relu linear(256) relu"
    assert model.shapes["torso.0.weight"] == (256, 32 * 5 * 5)
    check_agree(SMALL_CNN, CATCH, 3, n=6)


def test_batch_sizes_change_and_one_head_alone():
    """The engine keeps state per batch size: n = 4, 1, 7, 4 each agree row for row; a
    backward given only dvalues (dlogits None: zero) moves no logits-only gradient."""
    model = volley.Model("cnn", CATCH, 3, seed=2)
    net = vt.build("cnn", CATCH, 3, seed=2)
    for n in (4, 1, 7, 4):
        obs = make_obs(CATCH, n, n)
        logits, values = model.forward(obs)
        with torch.no_grad():
            t_logits, t_values = net(torch.from_numpy(obs))
        assert rel_err(logits, t_logits.numpy()) <= OUT_TOL, n
        assert rel_err(values, t_values.numpy()) <= OUT_TOL, n
    dvalues = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    model.zero_grad()
    model.backward(None, dvalues)
    grads = model.grads()
    assert not grads["pi.weight"].any() and not grads["pi.bias"].any()
    net.zero_grad()
    (net(torch.from_numpy(obs))[1] * torch.from_numpy(dvalues)).sum().backward()
    for name, p in net.named_parameters():
        if p.grad is not None:
            assert rel_err(grads[name], p.grad.numpy()) <= GRAD_TOL, name


# ---- weights cross unchanged -----------------------------------------------


def test_torch_state_dict_loads_into_c(tmp_path):
    fields = CATCH
    net = vt.build(SMALL_CNN, fields, 3, seed=None)  # PyTorch's init: not C's
    torch.save(net.state_dict(), tmp_path / "net.pt")
    saved = torch.load(tmp_path / "net.pt")
    model = volley.Model(SMALL_CNN, fields, 3, seed=11)
    model.forward(make_obs(fields, 4, 4))  # the engine now holds its own copies of C's init
    model.set_tensors(saved)  # ... which set_tensors must replace
    for k, v in saved.items():
        assert np.array_equal(model.tensors()[k], v.numpy()), k
    obs = make_obs(fields, 4, 5)
    logits, values = model.forward(obs)
    with torch.no_grad():
        t_logits, t_values = net(torch.from_numpy(obs))
    assert rel_err(logits, t_logits.numpy()) <= OUT_TOL
    assert rel_err(values, t_values.numpy()) <= OUT_TOL


def test_c_tensors_load_into_torch(tmp_path):
    fields = [((2, 10, 10), "u8"), ((3,), "f32")]
    spec = "conv(8,3,1) relu linear(32) tanh"
    model = volley.Model(spec, fields, 4, seed=5)
    np.savez(tmp_path / "weights.npz", **model.tensors())  # what a checkpoint holds
    with np.load(tmp_path / "weights.npz") as z:
        mapping = {k: z[k] for k in z.files}
    net = vt.build(spec, fields, 4, seed=None)
    net.load_state_dict(vt.state_dict_from(mapping))
    for k, v in net.state_dict().items():
        assert np.array_equal(v.numpy(), model.tensors()[k]), k
    obs = make_obs(fields, 3, 9)
    logits, values = model.forward(obs)
    with torch.no_grad():
        t_logits, t_values = net(torch.from_numpy(obs))
    assert rel_err(logits, t_logits.numpy()) <= OUT_TOL
    assert rel_err(values, t_values.numpy()) <= OUT_TOL
    # and numpy_weights hands the module's tensors back as C takes them
    other = volley.Model(spec, fields, 4, seed=6)
    other.set_tensors(vt.numpy_weights(net))
    assert np.array_equal(other.forward(obs)[0], logits)


def test_build_starts_from_the_c_models_initial_weights():
    fields = [((4,), "f32")]
    net = vt.build("mlp", fields, 2, seed=7)
    c = volley.Model("mlp", fields, 2, seed=7).tensors()
    for k, v in net.state_dict().items():
        assert np.array_equal(v.numpy(), c[k]), k


def _expected_gain(name, last_pi, last_v):
    if name.startswith(last_pi):
        return 0.01
    return 1.0 if name.startswith(last_v) else 2 ** 0.5


@pytest.mark.parametrize("spec,fields,last_pi,last_v", [
    ("cnn", CATCH, "pi.", "v."),
    ("conv(6,3,2,1) relu linear(32)", [((3, 12, 10), "u8"), ((5,), "f32"), ((1, 9, 9), "u2")],
     "pi.", "v."),
    ("mlp", [((4,), "f32")], "pi.2.", "v.2.")])
def test_c_initial_weights_are_orthogonal_with_the_contracts_gains(spec, fields, last_pi, last_v):
    """The weights volley.torch.build starts from: each weight (a conv's as [out, in*kh*kw])
    is gain * an orthogonal matrix, gain sqrt(2) hidden, 0.01 on the logits, 1 on the value;
    biases 0."""
    for name, w in volley.Model(spec, fields, 6, seed=3).tensors().items():
        if name.endswith(".bias"):
            assert not w.any(), name
            continue
        w = w.reshape(w.shape[0], -1).astype(np.float64)
        gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        gain = _expected_gain(name, last_pi, last_v)
        assert np.abs(gram / gain ** 2 - np.eye(len(gram))).max() < 1e-5, name


# ---- the spec is read by C ---------------------------------------------------


def test_parse_reads_the_c_canonical_text():
    cnn = vt.parse("cnn")
    assert [la.kind for la in cnn] == ["conv", "relu", "conv", "relu", "conv", "relu",
                                       "linear", "relu"]
    assert cnn[0] == vt.Layer("conv", 32, 8, 4, 0) and cnn[6] == vt.Layer("linear", 512)
    assert vt.parse("mlp") == [vt.Layer("linear", 64), vt.Layer("tanh"),
                               vt.Layer("linear", 64), vt.Layer("tanh")]
    assert vt.parse(" conv( 4 , 3 , 2 , 1 )  relu ") == [vt.Layer("conv", 4, 3, 2, 1),
                                                          vt.Layer("relu")]
    assert vt.canonical("mlp(32)", [((3,), "f32")]) == "linear(32) tanh linear(32) tanh"


def test_refusals_name_the_fault():
    with pytest.raises(VolleyError, match="6x4"):
        vt.parse("linear(6x4)")
    with pytest.raises(VolleyError, match="image field"):
        vt.build("conv(4,3,1)", [((4,), "f32")], 2)
    model = volley.Model("mlp", [((4,), "f32")], 2)
    with pytest.raises(ValueError, match="pi.0.weight"):
        model.set_tensors({"pi.0.weight": np.zeros((64, 5), np.float32)}, strict=False)
    with pytest.raises(ValueError, match="missing"):
        model.set_tensors({"pi.0.weight": np.zeros((64, 4), np.float32)})
    with pytest.raises(ValueError, match="obs"):
        model.forward(np.zeros((2, 5), np.float32))
    net = vt.build("mlp", [((4,), "f32")], 2)
    with pytest.raises(ValueError, match="v.2.bias"):
        vt.load_weights(net, {"v.2.bias": np.zeros(2, np.float32)}, strict=False)


def test_import_volley_does_not_import_torch():
    code = "import sys, volley; volley.Model; assert 'torch' not in sys.modules"
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(volley.__file__)))
    env = dict(os.environ, PYTHONPATH=package_dir)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---- action spaces: a box's Gaussian head and a multi-discrete head ----------
#
# The C engine's side is its network (forward, backward through the head's outputs);
# the distribution on top is checked against formulas written out here in float64
# (models/vl_dist.h's: a categorical per dimension, a diagonal Gaussian of std
# exp(pi.logstd)) and against PyTorch's autograd through torch.distributions.

BOX2 = volley.ActionSpace.box([-1.0, -2.0], [1.0, 2.0])
MULTI32 = volley.ActionSpace.multi_discrete([3, 2])
C_LOGP, C_ENT = 1.3, 0.7  # the test loss: -(w * C_LOGP * logp(a)) - C_ENT * entropy + v * dv


def ref_logp_entropy(space, z, logstd, actions):
    """float64 log-probs [n] of actions [n, dims] and entropies [n] of outputs z [n, A]."""
    z, a = np.asarray(z, np.float64), np.asarray(actions, np.float64)
    if space.is_box:
        ls = np.asarray(logstd, np.float64)[None, :]
        logp = -((a - z) ** 2) / (2 * np.exp(2 * ls)) - ls - 0.5 * np.log(2 * np.pi)
        ent = np.broadcast_to(ls + 0.5 + 0.5 * np.log(2 * np.pi), z.shape)
        return logp.sum(1), ent.sum(1)
    logp, ent, at = np.zeros(len(z)), np.zeros(len(z)), 0
    for d, k in enumerate(space.n):
        part = z[:, at:at + k]
        lsm = part - part.max(1, keepdims=True)
        lsm -= np.log(np.exp(lsm).sum(1, keepdims=True))
        logp += lsm[np.arange(len(z)), a[:, d].astype(int)]
        ent -= (np.exp(lsm) * lsm).sum(1)
        at += k
    return logp, ent


def ref_dlogits(space, z, logstd, actions, w):
    """float64 d/dz [n, A] (and d/dlogstd [dims] for a box) of the test loss
    sum(-w * C_LOGP * logp(a) - C_ENT * entropy)."""
    z, a = np.asarray(z, np.float64), np.asarray(actions, np.float64)
    w = np.asarray(w, np.float64)[:, None]
    if space.is_box:
        var = np.exp(2 * np.asarray(logstd, np.float64))[None, :]
        dz = -w * C_LOGP * (a - z) / var  # entropy does not depend on the mean
        dls = (-w * C_LOGP * ((a - z) ** 2 / var - 1) - C_ENT).sum(0)
        return dz, dls
    dz, at = np.zeros_like(z), 0
    for d, k in enumerate(space.n):
        part = z[:, at:at + k]
        p = np.exp(part - part.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        onehot = np.eye(k)[a[:, d].astype(int)]
        logp = np.log(p)
        ent = -(p * logp).sum(1, keepdims=True)
        dent = -p * (logp + ent)  # d entropy / d logits
        dz[:, at:at + k] = -w * C_LOGP * (onehot - p) - C_ENT * dent
        at += k
    return dz, None


def actions_for(space, n, rng):
    """n actions in space: whole choices, or box values some of them outside the bounds
    (a Gaussian's draws before clipping)."""
    if space.is_box:
        return (rng.standard_normal((n, space.dims)) * 1.5 * space.high).astype(np.float32)
    return np.stack([rng.integers(0, k, n) for k in space.n], 1).astype(np.float32)


@pytest.mark.parametrize("space", [BOX2, MULTI32], ids=str)
@pytest.mark.parametrize("spec,fields", [("mlp(16)", [((5,), "f32")]),
                                         ("conv(4,3,2) relu linear(16) tanh",
                                          [((1, 7, 7), "u8"), ((3,), "f32")])])
def test_action_heads_agree_with_the_c_engine(space, spec, fields):
    n, seed = 6, 4
    model = volley.Model(spec, fields, action=space, seed=seed)
    net = vt.build(spec, fields, action=space, seed=None)
    same_layout(model, net)
    names = list(model.tensors())
    assert ("pi.logstd" in names) == space.is_box and (names[-1] == "pi.logstd") == space.is_box
    assert model.num_actions == net.num_actions == space.outputs
    rng = np.random.default_rng(seed)
    weights = model.tensors(copy=True)
    if space.is_box:  # a log-std away from its initial 0, so that it takes part
        weights["pi.logstd"] = np.array([-0.4, 0.3], np.float32)
        model.set_tensors(weights)
    vt.load_weights(net, weights)
    obs = make_obs(model.fields, n, seed)
    actions = actions_for(space, n, rng)
    w = rng.standard_normal(n)  # per-sample weights: advantages
    dvalues = rng.standard_normal(n).astype(np.float32)

    # outputs: C's network against the module's
    z, values = model.forward(obs)
    z_t, v_t = net(torch.from_numpy(obs))
    assert rel_err(z, z_t.detach().numpy()) <= OUT_TOL
    assert rel_err(values, v_t.detach().numpy()) <= OUT_TOL
    assert z.shape == (n, space.outputs)

    # log-probs and entropies of the module's distribution against the formulas on C's outputs
    logstd = weights.get("pi.logstd")
    want_logp, want_ent = ref_logp_entropy(space, z, logstd, actions)
    dist = net.dist(z_t)
    logp_t, ent_t = dist.log_prob(torch.from_numpy(actions)), dist.entropy()
    assert logp_t.shape == ent_t.shape == (n,)
    assert rel_err(logp_t.detach().numpy(), want_logp) <= OUT_TOL
    assert rel_err(ent_t.detach().numpy(), want_ent) <= OUT_TOL

    # gradients: PyTorch's autograd through the whole loss ...
    z_t.retain_grad()
    loss = (-torch.from_numpy(w).float() * C_LOGP * logp_t).sum() - C_ENT * ent_t.sum() + \
        (v_t * torch.from_numpy(dvalues)).sum()
    loss.backward()
    t_grads = {k: p.grad.detach().numpy() for k, p in net.named_parameters()}
    # ... against C's backward given the loss's d/doutputs from the formulas
    dz, dlogstd = ref_dlogits(space, z, logstd, actions, w)
    assert rel_err(z_t.grad.numpy(), dz) <= GRAD_TOL  # the formulas are autograd's
    model.zero_grad()
    model.backward(dz.astype(np.float32), dvalues)
    c_grads = model.grads(copy=True)
    bad = []
    for name, g in c_grads.items():
        ours = "logstd" if name == "pi.logstd" else name
        if name == "pi.logstd":  # not the network's: the distribution's own parameter
            e = rel_err(t_grads[ours], dlogstd)
        else:
            e = rel_err(g, t_grads[ours])
        if not e <= GRAD_TOL:
            bad.append(f"{name}: {e:.3g}")
        assert np.abs(t_grads[ours]).max() > 0, f"{name}: a zero gradient agrees with anything"
    assert not bad, f"{space} {spec}: " + ", ".join(bad)


@pytest.mark.parametrize("space", [BOX2, MULTI32], ids=str)
def test_action_heads_sample_and_act_in_their_space(space):
    net = vt.build("mlp(8)", [((3,), "f32")], action=space, seed=2)
    if space.is_box:
        vt.load_weights(net, dict(vt.numpy_weights(net), **{"pi.logstd": np.zeros(2, np.float32)}))
    obs = torch.from_numpy(make_obs([((3,), "f32")], 4000, 1))
    torch.manual_seed(0)
    a = net.act(obs)
    assert a.shape == (4000, space.dims)
    z = net(obs)[0].detach()
    if space.is_box:
        # N(mean, 1): draws unclipped, mean and spread as the Gaussian's
        assert a.dtype == torch.float32 and (a.abs() > torch.from_numpy(space.high)).any()
        assert abs(float((a - z).mean())) < 0.05 and abs(float((a - z).std()) - 1) < 0.05
        greedy = net.act(obs, greedy=True)
        assert torch.equal(greedy, torch.max(torch.min(z, torch.from_numpy(space.high)),
                                             torch.from_numpy(space.low)))
    else:
        assert a.dtype == torch.int64
        for d, k in enumerate(space.n):
            assert set(a[:, d].tolist()) == set(range(k))
        greedy = net.act(obs, greedy=True)
        assert torch.equal(greedy[:, 0], z[:, :3].argmax(1))
        assert torch.equal(greedy[:, 1], z[:, 3:].argmax(1))


def test_obs_normalisation_from_the_weights():
    """Weights carrying norm.obs.mean/var/state normalise the f32 values as
    clip((x - mean) / sqrt(var + 1e-8), -10, 10) and leave integer-encoded values
    as they are; weights without them turn it off again."""
    fields = [((2,), "u8"), ((3,), "f32")]
    net = vt.build("mlp(8)", fields, action=BOX2, seed=3)
    plain = vt.numpy_weights(net)
    mean = np.array([0, 0, 1.0, -2.0, 0.5], np.float32)
    var = np.array([1, 1, 4.0, 0.25, 1e-12], np.float32)
    stats = dict(plain, **{"norm.obs.mean": mean, "norm.obs.var": var,
                           "norm.state": np.array([10, 10, 0, 1], np.float32)})
    obs = np.array([[200, 3, 5.0, -2.5, 0.5], [0, 255, -1.0, 100.0, 0.50001]], np.float32)
    want = obs.astype(np.float64).copy()
    want[:, 2:] = np.clip((want[:, 2:] - mean[2:]) / np.sqrt(var[2:].astype(np.float64) + 1e-8),
                          -10, 10)
    vt.load_weights(net, stats)
    assert net.norm and list(net.state_dict())[-3:] == list(vt.NORM_TENSORS)
    got = net.normalize(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert got[1, 3] == 10.0 and got[0, 0] == 200.0  # clipped; a u8 value untouched
    with torch.no_grad():
        normed = net(torch.from_numpy(obs))[0]
        vt.load_weights(net, plain)
        assert not net.norm
        raw = net(torch.from_numpy(obs))[0]
        direct = net(torch.from_numpy(want.astype(np.float32)))[0]
    assert torch.allclose(normed, direct, atol=1e-6) and not torch.allclose(normed, raw)
