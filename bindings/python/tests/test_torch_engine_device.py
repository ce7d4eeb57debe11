"""The torch engine's device path on the CPU: observations that cross as the
wire packs them (OBS_PACKED: u8 a byte a value, u2 four values a byte, u1
eight) become on the "device" exactly the floats C gathers as OBS
(vl_obs_from_rows), for mixed fields, in fewer bytes than the stored rows;
the engine takes packed observations exactly when normalisation is off and
a field is not f32; u2 values packed four a byte unpack by shifts and masks
as a plain loop reads them."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from volley import engine as E  # noqa: E402
from volley.torch.engine import TorchEngine, obs_from_packed, packed_layout, unpack_u2  # noqa: E402

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


def test_packed_observations_become_cs_floats_on_the_device():
    cfg = E.config_default(FIELDS, 2, horizon=4, model="mlp")
    b, obs = batch_of(cfg, 3)
    c_obs = b.gather(E.OBS).reshape(3, 5, cfg.obs_dim)
    assert np.array_equal(c_obs, obs)
    packed = b.gather(E.OBS_PACKED, np.uint8)
    wire = 72 + 4 * 3 + 2 + 1 + 4 * 2  # u8 2x6x6, f32 3, u2 5 (2 bytes), u1 7 (1 byte), f32 2
    assert packed.size == 3 * 5 * wire and packed.size < b.nbytes(E.OBS_ROWS)
    got = obs_from_packed(torch.from_numpy(packed.reshape(3, 5, wire)), packed_layout(FIELDS))
    assert got.dtype == torch.float32 and np.array_equal(got.numpy(), c_obs)


def test_a_2bit_screen_crosses_in_a_quarter_of_its_rows():
    cfg = E.config_default([((1, 16, 16), "u2")], 3, horizon=4)
    b, obs = batch_of(cfg, 2)
    packed = b.gather(E.OBS_PACKED, np.uint8)
    assert packed.size * 4 == b.nbytes(E.OBS_ROWS) == 2 * 5 * 256
    got = obs_from_packed(torch.from_numpy(packed.reshape(2, 5, 64)), packed_layout(cfg.fields))
    assert np.array_equal(got.numpy(), obs)


def test_the_engine_gathers_packed_only_without_normalisation():
    cfg = E.config_default(FIELDS, 2, horizon=4, model="mlp")
    b, obs = batch_of(cfg, 3)
    eng = TorchEngine(cfg.replace(norm_obs=False), device="cpu")
    assert eng.packed
    assert np.array_equal(eng.load_batch(b)["obs"].numpy(), obs)
    assert cfg.norm_obs  # an mlp on discrete actions normalises by default
    normed = TorchEngine(cfg, device="cpu")
    assert not normed.packed
    assert not TorchEngine(E.config_default([((4,), "f32")], 2, horizon=4), device="cpu").packed


def test_u2_unpacks_as_a_plain_loop_reads_it():
    r = np.random.default_rng(0)
    values = r.integers(0, 4, size=(3, 4, 37)).astype(np.uint8)
    packed = np.zeros((3, 4, (37 + 3) // 4), np.uint8)
    for i in range(37):  # the wire's order: value i in bits 2 (i % 4) of byte i // 4
        packed[..., i // 4] |= values[..., i] << (2 * (i % 4))
    got = unpack_u2(torch.from_numpy(packed), 37)
    assert np.array_equal(got.numpy(), values)


def test_final_observations_cross_packed_and_only_where_truncated():
    cfg = E.config_default(FIELDS, 2, horizon=6, model="mlp").replace(norm_obs=0)
    n, T = 4, cfg.horizon
    b0, obs = batch_of(cfg, n, seed=5)
    b0.close()
    r = np.random.default_rng(9)
    cut = np.zeros((n, T), np.uint8)
    cut[0, 2] = cut[0, 5] = cut[2, 0] = cut[3, 5] = 1
    final = np.where(cut[..., None] == 1, obs[:, 1:] + 0, 0).astype(np.float32)
    final[cut == 1] = obs[r.integers(0, n, int(cut.sum())), 0]  # other values than the next row
    arrays = dict(obs=obs, actions=np.zeros((n, T, 1), np.float32),
                  rewards=np.zeros((n, T), np.float32), dones=cut.astype(np.float32),
                  logp=np.full((n, T), -0.69, np.float32), truncated=cut, final_obs=final)
    b = E.make_batch(cfg, n, arrays)
    wire = b.nbytes(E.OBS_PACKED) // (n * (T + 1))
    assert b.nbytes(E.FINAL_PACKED) == int(cut.sum()) * wire  # no rows for the other steps
    packed = torch.from_numpy(b.gather(E.FINAL_PACKED, np.uint8).reshape(-1, wire))
    rows = obs_from_packed(packed, packed_layout(cfg.fields)).numpy()
    assert np.array_equal(rows, b.gather(E.FINAL_OBS).reshape(n, T, -1)[cut == 1])
    assert np.array_equal(rows, final[cut == 1])
    eng = TorchEngine(cfg, device="cpu")
    assert eng.packed
    got = eng.load_batch(b)["final"]
    assert got.shape == (int(cut.sum()), rows.shape[1]) and np.array_equal(got.numpy(), rows)
    b.close()
