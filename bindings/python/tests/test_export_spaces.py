"""volley.policy_forward of a box policy (`volley up --env pendulum`): the
Gaussian's means the C policy's head gives (as volley eval's Kept.logits
reads them), not a softmax over them; of a multi-discrete one (`volley up
--env reach`, multi_discrete(3,3)): each dimension's log-probabilities over its
own choices, the log-softmax of its part of the C head's outputs, not one
softmax over all six."""
import subprocess

import numpy as np
import pytest

import volley
from procs import VOLLEY
from volley.evaluate import Kept


def test_box_policy_forward_gives_the_means(tmp_path):
    r = subprocess.run([VOLLEY, "up", "--env", "pendulum", "--runs", str(tmp_path / "runs"), "--name",
                        "t", "--until", "steps", "--max-steps", "8000"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    ckpt = tmp_path / "runs" / "t" / "checkpoints" / "default.ckpt"
    obs = np.random.default_rng(0).uniform(-1, 1, size=(50, 3)).astype(np.float32)
    means, values = volley.policy_forward(ckpt, obs, 1)
    kept = Kept(ckpt)
    try:
        want = kept.logits(obs)
    finally:
        kept.close()
    assert means.shape == (50, 1) and values.shape == (50,)
    np.testing.assert_allclose(means, want, rtol=1e-6, atol=1e-6)
    assert np.ptp(means) > 0  # a softmax over one output would be 0 everywhere


def _log_softmax(z):
    z = z.astype(np.float64) - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def test_multi_discrete_policy_forward_gives_each_dimensions_log_probs(tmp_path):
    r = subprocess.run([VOLLEY, "up", "--env", "reach", "--deterministic", "--runs",
                        str(tmp_path / "runs"), "--name", "r", "--until", "steps", "--max-steps",
                        "20000"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    ckpt = tmp_path / "runs" / "r" / "checkpoints" / "default.ckpt"
    obs = np.random.default_rng(0).uniform(0, 1, size=(50, 4)).astype(np.float32)
    logp, values = volley.policy_forward(ckpt, obs, 6)
    kept = Kept(ckpt)
    try:
        assert str(kept.action) == "multi_discrete(3,3)"
        head = kept.logits(obs)
    finally:
        kept.close()
    assert logp.shape == (50, 6) and values.shape == (50,) and np.all(np.isfinite(values))
    for part in (slice(0, 3), slice(3, 6)):
        np.testing.assert_allclose(logp[:, part], _log_softmax(head[:, part]), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(np.exp(logp[:, part]).sum(axis=1), 1, rtol=1e-5)
    assert np.ptp(logp[:, 0:3] - logp[:, 3:6]) > 1e-3  # two dimensions, not one copied
    with pytest.raises(volley.VolleyError, match="6 actions"):
        volley.policy_forward(ckpt, obs, 3)
