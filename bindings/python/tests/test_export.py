"""`volley export` to safetensors, read back: NumPy gets exactly the
checkpoint's weights, the PyTorch module gives the C policy's log-probs and
values, the spec travels in the header and beside it, and every corrupt file
is refused with a SafetensorsError naming the fault."""
import ctypes
import importlib.util
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from procs import REPO, VOLLEY

import volley
from volley import _lib

HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (python3-torch)")

_lib.lib.vl_kept_tensor.restype = ctypes.c_int
_lib.lib.vl_kept_tensor.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]


def _run(*args, cwd):
    return subprocess.run([VOLLEY, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=240)


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A run trained by `volley up` (a few updates: the weights need not be
    good, only real) and its export: (run dir, checkpoint, safetensors)."""
    d = tmp_path_factory.mktemp("export")
    r = _run("up", "--runs", d / "runs", "--name", "t", "--until", "steps", "--max-steps", 40000,
             cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr
    run = d / "runs" / "t"
    ckpt = run / "checkpoints" / "default.ckpt"
    assert ckpt.is_file(), os.listdir(run)
    out = d / "policy.safetensors"
    r = _run("export", run, "--to", out, cwd=d)
    assert r.returncode == 0, r.stderr
    return run, ckpt, out


def _c_tensor(ckpt, name, shape):
    out = np.empty(shape, dtype=np.float32)
    why = _lib.why_buffer()
    rc = _lib.lib.vl_kept_tensor(str(ckpt).encode(), name.encode(), out.ctypes.data, out.size,
                                 why, len(why))
    assert rc == 0, why.value
    return out


def test_numpy_gets_exactly_the_checkpoints_weights(kept):
    _, ckpt, out = kept
    tensors = volley.load_safetensors(out)
    names = [f"{n}.{i}.{k}" for n in ("pi", "v") for i in range(3) for k in ("weight", "bias")]
    names += ["norm.obs.mean", "norm.obs.var", "norm.state"]  # an mlp normalises by default
    assert sorted(tensors) == sorted(names)
    assert tensors["norm.obs.mean"].shape == (4,) and tensors["norm.obs.var"].shape == (4,)
    assert tensors["pi.0.weight"].shape == (64, 4) and tensors["v.2.weight"].shape == (1, 64)
    for name, a in tensors.items():
        assert a.dtype == np.float32
        assert np.array_equal(a, _c_tensor(ckpt, name, a.shape)), name  # bit for bit


def test_spec_in_the_header_and_beside_it(kept):
    _, _, out = kept
    spec = volley.load_export_spec(out)
    assert spec == json.loads(out.with_suffix(".json").read_text())
    arch = spec["architecture"]
    assert (arch["type"], arch["model"], arch["obs_dim"], arch["hidden"],
            arch["num_actions"]) == ("mlp", "linear(64) tanh linear(64) tanh", 4, 64, 2)
    assert len(arch["tensors"]) == 15 and spec["policy"] == "default" and spec["version"] > 0
    tensors = volley.load_safetensors(out)
    assert arch["shapes"] == {k: list(v.shape) for k, v in tensors.items()}
    assert arch["shapes"]["pi.0.weight"] == [64, 4] and arch["shapes"]["v.2.bias"] == [1]
    assert spec["env"]["name"] == "cartpole"  # from the run's config.ini
    assert spec["env"]["observation_fields"] == [
        {"encoding": "f32", "shape": [4], **{k: v for k, v in
                                             spec["env"]["observation_fields"][0].items()
                                             if k in ("low", "high")}}]


def _observations(n=300, seed=0):
    rng = np.random.default_rng(seed)
    scale = np.array([2.4, 3.0, 0.21, 3.5], dtype=np.float32)  # CartPole's range, and beyond
    return (rng.uniform(-1.5, 1.5, size=(n, 4)) * scale).astype(np.float32)


@needs_torch
def test_torch_log_probs_equal_the_c_policy(kept):
    import torch
    _, ckpt, out = kept
    module = volley.load_torch_policy(out)
    assert isinstance(module, torch.nn.Module)
    obs = _observations()
    c_logp, c_values = volley.policy_forward(ckpt, obs, 2)
    with torch.no_grad():
        t_logp = module.log_probs(obs).numpy()
        t_values = module(obs)[1].numpy()
    assert t_logp.shape == c_logp.shape == (300, 2)
    np.testing.assert_allclose(t_logp, c_logp, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(t_values, c_values, rtol=1e-5, atol=1e-4)
    assert np.allclose(np.exp(c_logp).sum(1), 1, atol=1e-5)
    assert np.ptp(c_logp[:, 0]) > 0.01  # the observations are not all alike to the policy


@needs_torch
def test_torch_policy_names_are_volleys(kept):
    _, _, out = kept
    module = volley.TorchPolicy(4, 2, 64)
    weights = {k for k in volley.load_safetensors(out) if not k.startswith("norm.")}
    assert set(module.state_dict()) == weights  # norm.*: the statistics load_torch_policy uses
    acts = volley.load_torch_policy(out).act(_observations(10), greedy=True)
    assert acts.shape == (10,) and set(acts.tolist()) <= {0, 1}


def test_import_volley_does_not_import_torch():
    code = "import sys, volley; print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def _write(path, header, data=b"", raw_len=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(text) if raw_len is None else raw_len
    path.write_bytes(struct.pack("<Q", n) + text + data)
    return path


GOOD = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [1, 1], "data_offsets": [8, 12]}}


def _with(name, **kw):
    h = json.loads(json.dumps(GOOD))
    h[name].update(kw)
    return h


@pytest.mark.parametrize("case,header,data,raw_len,why", [
    ("short", None, b"", None, "too short"),
    ("huge length", GOOD, bytes(12), 1 << 40, "does not fit"),
    ("not json", b"{not json", b"", None, "not JSON"),
    ("not an object", [1, 2], b"", None, "not a JSON object"),
    ("bad dtype", _with("a", dtype="Q9"), bytes(12), None, "dtype 'Q9'"),
    ("offsets past the data", _with("b", data_offsets=[8, 16]), bytes(12), None, "outside"),
    ("size not the shape's", _with("a", shape=[3]), bytes(12), None, "not 12"),
    ("gap", _with("b", data_offsets=[12, 16]), bytes(16), None, "gap"),
    ("overlap", _with("b", shape=[1], data_offsets=[4, 8]), bytes(12), None, "overlap"),
    ("trailing bytes", GOOD, bytes(20), None, "after the last tensor"),
    ("negative shape", _with("a", shape=[-2]), bytes(12), None, "shape"),
    ("metadata not strings", dict(GOOD, __metadata__={"x": 1}), bytes(12), None, "__metadata__"),
])
def test_corrupt_files_are_refused(tmp_path, case, header, data, raw_len, why):
    path = tmp_path / "x.safetensors"
    if header is None:
        path.write_bytes(b"\x01\x02")
    else:
        _write(path, header, data, raw_len)
    with pytest.raises(volley.SafetensorsError, match=why):
        volley.load_safetensors(path)


def test_a_valid_handmade_file_loads(tmp_path):
    data = struct.pack("<3f", 1.5, -2.0, 3.25)
    t = volley.load_safetensors(_write(tmp_path / "ok.safetensors", GOOD, data))
    assert t["a"].tolist() == [1.5, -2.0] and t["b"].tolist() == [[3.25]]


def test_a_rank4_tensor_loads_with_its_shape(tmp_path):
    conv = np.arange(32 * 4 * 8 * 8, dtype="<f4").reshape(32, 4, 8, 8)
    header = {"conv.0.0.weight": {"dtype": "F32", "shape": [32, 4, 8, 8],
                                  "data_offsets": [0, conv.nbytes]},
              "cube": {"dtype": "F32", "shape": [2, 3, 1], "data_offsets": [conv.nbytes,
                                                                           conv.nbytes + 24]}}
    cube = np.arange(6, dtype="<f4").reshape(2, 3, 1)
    t = volley.load_safetensors(_write(tmp_path / "cnn.safetensors", header,
                                       conv.tobytes() + cube.tobytes()))
    assert t["conv.0.0.weight"].shape == (32, 4, 8, 8) and t["cube"].shape == (2, 3, 1)
    assert np.array_equal(t["conv.0.0.weight"], conv) and np.array_equal(t["cube"], cube)


def test_a_truncated_export_is_refused(kept, tmp_path):
    _, _, out = kept
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(out.read_bytes()[:-4])
    with pytest.raises(volley.SafetensorsError, match="outside|after"):
        volley.load_safetensors(cut)


def test_c_forward_refuses_a_mismatch(kept):
    _, ckpt, _ = kept
    with pytest.raises(volley.VolleyError, match="takes 4 observations and 2 actions"):
        volley.policy_forward(ckpt, np.zeros((1, 5), np.float32), 2)
