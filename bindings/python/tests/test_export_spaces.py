"""volley.policy_forward of a box policy (`volley up --env pendulum`): the
Gaussian's means the C policy's head gives (as volley eval's Kept.logits
reads them), not a softmax over them."""
import subprocess

import numpy as np

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
