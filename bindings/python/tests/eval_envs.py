"""A tiny Gymnasium-style env for `volley eval --env MOD:FN` (no Gymnasium):
the observation is a sign s in {-1, +1}; action 1 on +1 and 0 on -1 earn 1,
the other action 0; 8 steps an episode (then truncated). A random policy
scores 4, a trained one 8."""
import numpy as np

from volley.envs.cartpole import Box, Discrete

STEPS = 8


class Guess:
    def __init__(self):
        self.observation_space = Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = Discrete(2)
        self.rng = np.random.default_rng(0)
        self.s, self.t = 1.0, 0

    def _draw(self):
        self.s = 1.0 if self.rng.random() < 0.5 else -1.0
        return np.array([self.s], np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action):
        reward = 1.0 if (action == 1) == (self.s > 0) else 0.0
        self.t += 1
        return self._draw(), reward, False, self.t == STEPS, {}


def make_guess():
    return Guess()
