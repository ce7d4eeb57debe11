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
