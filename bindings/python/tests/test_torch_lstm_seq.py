"""volley.torch's recurrent net run through the LSTM's sequence kernel
(forward_seq(seq_kernel=True): one packed nn.LSTM call over the pieces of
each sequence between its resets) against the reference that runs one
nn.LSTM call per run of steps between the steps where any sequence resets
(seq_kernel=False): the same outputs, values, final state and gradient of
every parameter and of the state, for resets nowhere, at step 0, several
to a sequence, at every step and at the last step, and through a burn-in
as volley.torch.engine runs one. Float32 on the CPU, judged as
test_torch_agree.py judges (rel_err, 1e-5); on a GPU too where there is one."""
import numpy as np
import pytest

from conftest import need

torch = need("torch")
import volley.torch as vt  # noqa: E402
from volley.torch.model import _pack_pieces  # noqa: E402
from test_torch_agree import rel_err  # noqa: E402

B, T = 6, 24
FIELDS = [((5,), "f32")]
SPEC = "linear(16) tanh lstm(8)"
TOL = 1e-5


def resets(kind):
    """reset [B, T] bools of a named pattern."""
    r = np.zeros((B, T), bool)
    if kind == "first":  # sequence 0 starts an episode, its stored state unused
        r[0, 0] = True
    elif kind == "several":  # sequences with 0, 1, 2 and 3 resets, two side by side
        r[1, 0] = r[1, 9] = True
        r[2, 5] = r[2, 6] = r[2, 17] = True
        r[3, 12] = True
        r[5, 1] = r[5, T - 2] = r[5, T - 1] = True
    elif kind == "every":
        r[:] = True
    elif kind == "last":
        r[:, T - 1] = True
    elif kind == "random":
        r = np.random.default_rng(7).random((B, T)) < 0.15
    return r


def inputs(seed=1):
    """obs [B, T, D] and a state [B, 2H] away from zero."""
    rng = np.random.default_rng(seed)
    obs = torch.from_numpy(rng.standard_normal((B, T, 5)).astype(np.float32))
    state = torch.from_numpy((0.8 * rng.standard_normal((B, 16))).astype(np.float32))
    return obs, state


def run(net, obs, state, reset, kernel, burn_in=0):
    """[outputs, values, state1, d state0, each parameter's gradient] of a
    loss over every output (after burn_in steps rebuilt without gradient, as
    volley.torch.engine's _sequence_loss does), by one path."""
    net.zero_grad()
    state = state.clone().requires_grad_(True)
    r = torch.from_numpy(reset).to(obs.device)
    s = state
    if burn_in:
        with torch.no_grad():
            s = net.forward_seq(obs[:, :burn_in], state, r[:, :burn_in], seq_kernel=kernel)[2]
        s = s.clone().requires_grad_(True)
        state = s
    out, values, state1 = net.forward_seq(obs[:, burn_in:], s, r[:, burn_in:], seq_kernel=kernel)
    w = torch.linspace(-1, 1, out.numel(), device=obs.device).reshape(out.shape)
    loss = (out * w).sum() + (values * values).sum() + (state1 * state1).sum()
    loss.backward()
    got = [out, values, state1, state.grad] + [p.grad for p in net.parameters()]
    return [t.detach().cpu().numpy() for t in got]


def check(net, obs, state, reset, burn_in=0, tol=TOL):
    want = run(net, obs, state, reset, False, burn_in)
    got = run(net, obs, state, reset, True, burn_in)
    names = ["outputs", "values", "state1", "grad state0"] + \
        [f"grad {k}" for k, _ in net.named_parameters()]
    for name, g, w in zip(names, got, want):
        err = rel_err(g, w)
        assert err < tol, f"{name}: rel err {err:.3g} (resets {np.argwhere(reset).tolist()})"


@pytest.fixture(scope="module")
def net():
    return vt.build(SPEC, FIELDS, 3, seed=5)


@pytest.mark.parametrize("kind", ["none", "first", "several", "every", "last", "random"])
def test_seq_kernel_matches_loop(net, kind):
    obs, state = inputs()
    check(net, obs, state, resets(kind))


@pytest.mark.parametrize("kind", ["several", "every", "random"])
@pytest.mark.parametrize("burn_in", [1, 5, 9])
def test_seq_kernel_matches_loop_after_burn_in(net, kind, burn_in):
    obs, state = inputs(2)
    check(net, obs, state, resets(kind), burn_in)


def test_seq_kernel_one_step_and_no_state(net):
    """One step (act's shape), and the zero state when none is given."""
    obs, state = inputs(3)
    r = resets("several")
    for k in (False, True):
        assert torch.equal(net.forward_seq(obs[:, :1], state, r[:, :1], seq_kernel=k)[2],
                           net.forward_seq(obs[:, :1], state, r[:, :1], seq_kernel=not k)[2])
    with torch.no_grad():
        want = net.forward_seq(obs, None, r, seq_kernel=False)
        got = net.forward_seq(obs, None, r, seq_kernel=True)
    for g, w in zip(got, want):
        assert rel_err(g.numpy(), w.numpy()) < TOL


def test_pack_pieces_layout():
    """Pieces longest first, time-major; src and pos inverse permutations."""
    r = np.zeros((2, 5), bool)
    r[0, 2] = r[1, 0] = r[1, 4] = True  # pieces: 0[0:2] 0[2:5] 1[0:4] 1[4:5]
    p = _pack_pieces(r)
    n = r.size
    src, pos, rows, last = np.split(p.at, [n, 2 * n, 2 * n + p.pieces])
    assert p.pieces == 4
    assert p.batch_sizes.tolist() == [4, 3, 2, 1]
    assert rows.tolist() == [1, 0, 0, 1]  # lengths 4, 3, 2, 1
    assert p.carry.tolist() == [0, 0, 1, 0]  # sequence 0's first piece alone from its state
    assert last.tolist() == [1, 3]
    assert src[:4].tolist() == [5, 2, 0, 9]  # step 0 of each piece, longest first
    assert sorted(src.tolist()) == list(range(n))
    assert np.array_equal(src[pos], np.arange(n))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("kind", ["several", "every", "random"])
def test_seq_kernel_on_cuda(kind):
    """cuDNN's packed kernel against the reference on the same device (TF32
    off, both paths cuDNN's)."""
    net = vt.build(SPEC, FIELDS, 3, seed=5).cuda()
    obs, state = inputs()
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        check(net, obs.cuda(), state.cuda(), resets(kind), 5, tol=1e-4)
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
