"""A memory task with Gymnasium's API (no Gymnasium) for the recurrent actor tests.

Cue: obs (cue, query) is (+1 or -1, 0) at the first step, (0, 0) for BLANK
steps, then (0, 1) at the last: the action taken on it is the answer (0 for
the cue -1, 1 for +1), reward +1 when right, -1 when wrong, 0 at every other
step. The observation the answer is given on is the same for both cues, so a
memoryless policy scores chance (mean 0); one that keeps the cue scores 1."""
import numpy as np

from volley.envs.cartpole import Box, Discrete

BLANK = 6


class Cue:
    def __init__(self, blank=BLANK):
        self.blank = blank
        self.observation_space = Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = Discrete(2)
        self.rng = np.random.default_rng()
        self.cue, self.t = 1, 0

    def _obs(self):
        if self.t == 0:
            return np.array([self.cue, 0], np.float32)
        return np.array([0, 1 if self.t == self.blank + 1 else 0], np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.cue, self.t = (1 if self.rng.random() < 0.5 else -1), 0
        return self._obs(), {}

    def step(self, action):
        if self.t <= self.blank:
            self.t += 1
            return self._obs(), 0.0, False, False, {}
        right = int(action) == (1 if self.cue > 0 else 0)
        return self._obs(), 1.0 if right else -1.0, True, False, {}


def make_cue():
    return Cue()


class Recall:
    """The built-in `memory` env's twin (envs/vl_memory.h): obs 4 floats, the
    cue one-hot in [0, 2) on the first observation, [2] 1 on the DELAY blank
    ones, [3] 1 on the query; the action on the query names the cue (+1) or
    not (-1) and ends the episode; every other step pays 0."""

    DELAY = 10

    def __init__(self):
        self.observation_space = Box(0.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = Discrete(2)
        self.rng = np.random.default_rng()
        self.cue, self.t = 0, 0

    def _obs(self):
        obs = np.zeros(4, np.float32)
        if self.t == 0:
            obs[self.cue] = 1
        else:
            obs[2 if self.t <= self.DELAY else 3] = 1
        return obs

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.cue, self.t = int(self.rng.integers(2)), 0
        return self._obs(), {}

    def step(self, action):
        if self.t <= self.DELAY:
            self.t += 1
            return self._obs(), 0.0, False, False, {}
        return np.zeros(4, np.float32), 1.0 if int(action) == self.cue else -1.0, True, False, {}


def make_recall():
    return Recall()
