"""Small Gymnasium-style envs for the actor tests (no Gymnasium)."""
import numpy as np

from volley.envs.cartpole import Box, Discrete, CartPoleEnv


class MultiBinary:
    def __init__(self, n):
        self.n = n


class Dict:
    def __init__(self, spaces):
        self.spaces = dict(spaces)


def dict_spaces():
    """A Dict of a uint8 image, 5 flags and a bounded float pair; 3 actions."""
    obs = Dict({"image": Box(0, 255, shape=(2, 3), dtype=np.uint8),
                "flags": MultiBinary(5),
                "pos": Box(-1.0, 1.0, shape=(2,), dtype=np.float32)})
    return obs, Discrete(3)


class Raises(CartPoleEnv):
    """CartPole that raises on its 300th step (counted over episodes)."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def step(self, action):
        self.total += 1
        if self.total == 300:
            raise RuntimeError("the emulator crashed (a test env)")
        return super().step(action)


def make_raises():
    return Raises()
