"""volley.torch's recurrent net (a spec ending in lstm(H)) against the C engine
(volley.Model.forward_seq, include/volley/model.h's vl_model_forward_seq):
the same tensors, and with the same weights the same outputs, values and final
state through whole segments (B sequences of T steps, from a given state, the
state zeroed where an episode began), and the same gradient of a loss through
the whole segment for every tensor. Judged as test_torch_agree.py judges
(rel_err: elementwise, floored at the tensor's scale; 1e-5 outputs, 1e-4
gradients), each side also against a float64 PyTorch run."""
import copy

import numpy as np
import pytest

from conftest import need

import volley

torch = need("torch")
import volley.torch as vt  # noqa: E402
from test_torch_agree import GRAD_TOL, OUT_TOL, rel_err  # noqa: E402

B, T = 4, 32
FIELDS = [((5,), "f32")]
SPECS = ["linear(16) tanh lstm(8)", "lstm(8)"]
BOX1 = volley.ActionSpace.box([-1.0], [1.0])


def segment(model, seed):
    """obs [B, T, D], state0 [B, 2H] away from zero, and resets: sequence 0 none,
    1 at step 0 (state0 unused), 2 in the middle, 3 at two steps."""
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((B, T, model.obs_dim)).astype(np.float32)
    state0 = (0.8 * rng.standard_normal((B, model.state_size))).astype(np.float32)
    reset = np.zeros((B, T), np.uint8)
    reset[1, 0] = reset[2, 13] = reset[3, 5] = reset[3, 21] = 1
    return obs, state0, reset


def torch_seq(net, obs, state0, reset, dout, dvalues, dtype):
    """(outputs, values, state1, {C name: grad}) of net in dtype, the gradients of
    sum(outputs * dout) + sum(values * dvalues), through every step of the
    recurrence (a box's pi.logstd, not the net's, has none)."""
    net = copy.deepcopy(net).to(dtype)
    out, values, state1 = net.forward_seq(torch.from_numpy(obs).to(dtype),
                                          torch.from_numpy(state0).to(dtype),
                                          torch.from_numpy(reset))
    loss = (out * torch.from_numpy(dout).to(dtype)).sum() + \
        (values * torch.from_numpy(dvalues).to(dtype)).sum()
    loss.backward()
    names = dict((ours, theirs) for ours, theirs in vt.C_NAMES)
    grads = {names.get(k, k): p.grad.detach().numpy() for k, p in net.named_parameters()
             if p.grad is not None}
    return out.detach().numpy(), values.detach().numpy(), state1.detach().numpy(), grads


def check_seq(spec, action=None, num_actions=3, seed=3):
    model = volley.Model(spec, FIELDS, num_actions, seed=seed, action=action)
    net = vt.build(spec, FIELDS, num_actions, seed=None, action=action)  # torch's init...
    assert [(k, tuple(v.shape)) for k, v in net.state_dict().items()] == \
        list(model.shapes.items())
    weights = model.tensors(copy=True)
    # biases away from their initial 0 and larger recurrent weights, so that every
    # tensor and the state carried from step to step take part
    rng = np.random.default_rng(seed)
    for k in weights:
        if k.endswith("bias") or k.startswith("lstm.") or k == "pi.logstd":
            weights[k] = (weights[k] + 0.3 * rng.standard_normal(weights[k].shape)) \
                .astype(np.float32)
    model.set_tensors(weights)
    vt.load_weights(net, weights)  # ... replaced by C's, by name
    obs, state0, reset = segment(model, seed)
    A = model.num_actions
    dout = rng.standard_normal((B, T, A)).astype(np.float32)
    dvalues = rng.standard_normal((B, T)).astype(np.float32)

    out, values, state1 = model.forward_seq(obs, state0, reset)
    model.zero_grad()
    model.backward(dout.reshape(B * T, A), dvalues.reshape(B * T))
    grads = model.grads(copy=True)
    t32 = torch_seq(net, obs, state0, reset, dout, dvalues, torch.float32)
    t64 = torch_seq(net, obs, state0, reset, dout, dvalues, torch.float64)

    bad = []
    for what, c, t, r, tol in (("outputs", out, t32[0], t64[0], OUT_TOL),
                               ("values", values, t32[1], t64[1], OUT_TOL),
                               ("state1", state1, t32[2], t64[2], OUT_TOL)):
        if not rel_err(c, t) <= tol:
            bad.append(f"{what}: {rel_err(c, t):.3g} (vs float64: C {rel_err(c, r):.3g}, "
                       f"torch {rel_err(t, r):.3g})")
    net_grads = {k: g for k, g in grads.items() if k != "pi.logstd"}
    assert list(net_grads) == list(t32[3]), (list(net_grads), list(t32[3]))
    for k, g in net_grads.items():
        e = rel_err(g, t32[3][k])
        if not e <= GRAD_TOL:
            bad.append(f"grad {k}: {e:.3g} (vs float64: C {rel_err(g, t64[3][k]):.3g}, "
                       f"torch {rel_err(t32[3][k], t64[3][k]):.3g})")
        assert np.abs(g).max() > 0, f"{k}: a zero gradient agrees with anything"
    assert not bad, f"{spec}: " + "; ".join(bad)
    print(f"{spec}: outputs {max(rel_err(out, t32[0]), rel_err(values, t32[1])):.2g}, "
          f"state {rel_err(state1, t32[2]):.2g}, gradients "
          f"{max(rel_err(g, t32[3][k]) for k, g in net_grads.items()):.2g}")
    return model, net, (obs, state0, reset)


@pytest.mark.parametrize("spec", SPECS)
def test_a_segment_agrees_with_the_c_engine(spec):
    check_seq(spec)


def test_a_box_policys_recurrent_net_agrees():
    model, net, _ = check_seq("linear(16) tanh lstm(8)", action=BOX1)
    assert list(model.shapes)[-1] == "pi.logstd"


def test_the_state_and_the_resets_matter():
    """The state carried in and the resets change the outputs (else the agreement
    above would hold for a net that ignored them), and a reset at step t is a fresh
    start: the steps after it are those of a sequence begun there from zero."""
    spec = SPECS[0]
    model, net, (obs, state0, reset) = check_seq(spec)
    with torch.no_grad():
        base = net.forward_seq(obs, state0, reset)[0].numpy()
        no_state = net.forward_seq(obs, None, reset)[0].numpy()
        no_reset = net.forward_seq(obs, state0, None)[0].numpy()
        fresh = net.forward_seq(obs[2:3, 13:], None, None)[0].numpy()
    assert np.abs(base[0] - no_state[0]).max() > 1e-3  # sequence 0 never resets
    assert np.allclose(base[1], no_state[1])  # sequence 1 resets at step 0
    assert np.abs(base[2] - no_reset[2])[13:].max() > 1e-3
    assert np.allclose(base[2, :13], no_reset[2, :13])
    np.testing.assert_allclose(base[2, 13:], fresh[0], rtol=1e-5, atol=1e-6)
    # the C engine likewise
    c_fresh = model.forward_seq(obs[2:3, 13:])[0]
    c_base = model.forward_seq(obs, state0, reset)[0]
    np.testing.assert_allclose(c_base[2, 13:], c_fresh[0], rtol=1e-5, atol=1e-6)


def test_one_step_forward_is_a_sequence_from_zero():
    model = volley.Model(SPECS[0], FIELDS, 3, seed=5)
    net = vt.build(SPECS[0], FIELDS, 3, seed=5)
    obs = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    logits, values = model.forward(obs)
    with torch.no_grad():
        t_logits, t_values = net(torch.from_numpy(obs))
    assert rel_err(logits, t_logits.numpy()) <= OUT_TOL
    assert rel_err(values, t_values.numpy()) <= OUT_TOL


def test_weights_cross_both_ways(tmp_path):
    net = vt.build(SPECS[0], FIELDS, 3, seed=None)  # PyTorch's init, not C's
    torch.save(net.state_dict(), tmp_path / "net.pt")
    model = volley.Model(SPECS[0], FIELDS, 3, seed=9)
    model.set_tensors(torch.load(tmp_path / "net.pt"))
    for k, v in vt.numpy_weights(net).items():
        assert np.array_equal(model.tensors()[k], v), k
    assert net.lstm.weight_hh_l0.data_ptr() == net.state_dict()["lstm.weight_hh"].data_ptr()
    back = vt.build(SPECS[0], FIELDS, 3, seed=None)
    vt.load_weights(back, model.tensors())
    back.load_state_dict(vt.state_dict_from(model.tensors()))
    for k, v in back.state_dict().items():
        assert np.array_equal(v.numpy(), model.tensors()[k]), k


def test_act_carries_a_state_per_env_and_resets_it():
    net = vt.build(SPECS[0], FIELDS, 3, seed=2)
    rng = np.random.default_rng(0)
    obs = torch.from_numpy(rng.standard_normal((3, 4, 5)).astype(np.float32))
    with torch.no_grad():
        want = net.forward_seq(obs)[0]  # each env's 4 steps as one sequence
        net.reset_state()
        got = []
        for t in range(4):
            net.act(obs[:, t], greedy=True)
            got.append(net._carried.clone())
        assert torch.allclose(got[-1], net.forward_seq(obs)[2], atol=1e-6)
        # env 1 starts an episode at step 4: its state is zero before it
        first = torch.tensor([False, True, False])
        a = net.act(obs[:, 0], greedy=True, first=first)
    assert torch.equal(a[1], want[1, 0].argmax())
    np.testing.assert_allclose(net._carried[1].numpy(), net.forward_seq(obs[1:2, :1])[2][0]
                               .detach().numpy(), rtol=1e-6, atol=1e-7)
