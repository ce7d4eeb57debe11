"""A Python env's 2-bit observations: a uint8 Box of values 0..3 (a Game Boy
screen's four shades) becomes a U2 field, which the C actor packs four
values to a byte on the wire; the learner reads the field as u2 and the
values back as they were. A uint8 Box of a wider range stays U8."""
import numpy as np

import volley
from actor_envs import Dict
from procs import free_port
from test_learner import mlp_weights
from volley.actor import U2, U8
from volley.envs.cartpole import Box, Discrete

SHADES = '''import numpy as np
from volley.envs.cartpole import Box, Discrete


class Shades:
    """A 6x8 screen of four shades, pixel (r, c) = (r + c + t) % 4 at step t."""

    def __init__(self):
        self.observation_space = Box(0, 3, shape=(6, 8), dtype=np.uint8)
        self.action_space = Discrete(2)

    def _obs(self):
        r, c = np.indices((6, 8))
        return ((r + c + self.t) % 4).astype(np.uint8)

    def reset(self, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, False, self.t == 10, {}


def make_env():
    return Shades()
'''


def test_a_uint8_box_of_four_values_is_a_u2_field():
    spec = volley.spec_from_spaces(
        Dict({"screen": Box(0, 3, shape=(6, 8), dtype=np.uint8),
              "image": Box(0, 255, shape=(2,), dtype=np.uint8)}), Discrete(2))
    fields = {n: (e, s) for n, e, s, _, _ in spec.fields}
    assert fields == {"screen": (U2, (6, 8)), "image": (U8, (2,))}


def test_a_python_envs_u2_screen_travels_packed(procs, tmp_path):
    (tmp_path / "shades.py").write_text(SHADES)
    port = free_port()
    procs.broker(port)
    procs.python("actor", "-m", "volley", "actor", "--env", "shades:make_env", "--broker",
                 f"127.0.0.1:{port}", "--envs", 2, "--horizon", 16, cwd=tmp_path)
    with volley.Learner(f"127.0.0.1:{port}", capacity=8, timeout=30) as learner:
        spec = learner.spec
        assert spec["fields"] == [((6, 8), "u2")], spec
        assert spec["obs_dim"] == 48
        learner.publish(mlp_weights(D=48, A=2), 0)
        b = None
        for _ in range(40):
            b = learner.take(2, timeout=1.0)
            if b is not None:
                break
        assert b is not None, "no batch came\n" + procs.dump()
        screens = b.obs.reshape(2, -1, 6, 8)
        r, c = np.indices((6, 8))
        for seg in screens:
            for row in seg:  # each row a screen of the Shades pattern at some step t
                t = int(row[0, 0])
                np.testing.assert_array_equal(row, (r + c + t) % 4)
