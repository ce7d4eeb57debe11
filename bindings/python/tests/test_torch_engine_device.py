"""The torch engine's device path on the CPU: observations that cross as
their stored rows (OBS_ROWS, one byte a value for u8/u2/u1 fields) become on
the "device" exactly the floats C gathers as OBS (vl_obs_from_rows), for
mixed fields; the engine takes rows exactly when normalisation is off and a
field is not f32; u2 values packed four a byte unpack by shifts and masks as
a plain loop reads them."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley import engine as E  # noqa: E402
from volley.torch_engine import TorchEngine, obs_from_rows, row_layout, unpack_u2  # noqa: E402

pytestmark = pytest.mark.skipif(not E._lib.has("vl_engine_new"),
                                reason="libvolley without include/volley/engine.h's engines")

FIELDS = [((2, 6, 6), "u8"), ((3,), "f32"), ((5,), "u2"), ((7,), "u1"), ((2,), "f32")]


def batch_of(cfg, n, seed=1):
    r = np.random.default_rng(seed)
    T = cfg.horizon
    cols = []
    for shape, enc in cfg.fields:
        k = int(np.prod(shape))
        top = {"u8": 256, "u2": 4, "u1": 2}.get(enc)
        cols.append(r.integers(0, top, size=(n, T + 1, k)).astype(np.float32) if top else
                    r.normal(size=(n, T + 1, k)).astype(np.float32))
    arrays = dict(obs=np.concatenate(cols, axis=2),
                  actions=r.integers(0, 2, size=(n, T, 1)).astype(np.float32),
                  rewards=np.zeros((n, T), np.float32), dones=np.zeros((n, T), np.float32),
                  logp=np.full((n, T), -0.69, np.float32))
    return E.make_batch(cfg, n, arrays), arrays["obs"]


def test_rows_become_cs_floats_on_the_device():
    cfg = E.config_default(FIELDS, 2, horizon=4, model="mlp")
    b, obs = batch_of(cfg, 3)
    c_obs = b.gather(E.OBS).reshape(3, 5, cfg.obs_dim)
    assert np.array_equal(c_obs, obs)
    rows = b.gather(E.OBS_ROWS, np.uint8).reshape(3, 5, cfg.row_bytes)
    assert rows.nbytes < c_obs.nbytes / 2  # the image crosses as bytes
    assert sum(4 * c if e == "f32" else (c + 3) & ~3 for e, c, _ in row_layout(FIELDS)) == \
        cfg.row_bytes
    got = obs_from_rows(torch.from_numpy(rows), row_layout(FIELDS))
    assert got.dtype == torch.float32 and np.array_equal(got.numpy(), c_obs)


def test_the_engine_gathers_rows_only_without_normalisation():
    cfg = E.config_default(FIELDS, 2, horizon=4, model="mlp")
    b, obs = batch_of(cfg, 3)
    eng = TorchEngine(cfg, device="cpu")
    assert eng.rows
    assert np.array_equal(eng.load_batch(b)["obs"].numpy(), obs)
    normed = TorchEngine(cfg.replace(norm_obs=True), device="cpu")
    assert not normed.rows
    assert not TorchEngine(E.config_default([((4,), "f32")], 2, horizon=4), device="cpu").rows


def test_u2_unpacks_as_a_plain_loop_reads_it():
    r = np.random.default_rng(0)
    values = r.integers(0, 4, size=(3, 4, 37)).astype(np.uint8)
    packed = np.zeros((3, 4, (37 + 3) // 4), np.uint8)
    for i in range(37):  # the wire's order: value i in bits 2 (i % 4) of byte i // 4
        packed[..., i // 4] |= values[..., i] << (2 * (i % 4))
    got = unpack_u2(torch.from_numpy(packed), 37)
    assert np.array_equal(got.numpy(), values)
