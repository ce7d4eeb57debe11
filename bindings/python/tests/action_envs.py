"""Gymnasium-style envs with Box and MultiDiscrete action spaces for the actor
tests (no Gymnasium: spaces are objects with the attributes volley reads). Each
env refuses an action of another type, shape or range than Gymnasium would hand
it, so an actor that passes a wrong one stops with the env's traceback."""
import numpy as np

from volley.envs.cartpole import Box


class MultiDiscrete:
    """The subset of gymnasium.spaces.MultiDiscrete volley reads."""

    def __init__(self, nvec):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.shape = self.nvec.shape
        self.dtype = np.dtype(np.int64)


class MoveToTarget:
    """One dimension: obs [pos, target], both in [-1, 1]; the action is a
    velocity in [-1, 1] (pos moves by 0.25 of it, kept within [-1, 1]); the
    reward is -|pos - target| after the move; episodes last 20 steps (a time
    limit: truncated). The policy volley starts from (random_return) loses
    about 14 an episode, one heading straight for the target about 1."""

    LENGTH, SPEED = 20, 0.25

    def __init__(self):
        self.observation_space = Box(-1.0, 1.0, shape=(2,))
        self.action_space = Box(-1.0, 1.0, shape=(1,))
        self.rng = np.random.default_rng(0)
        self.pos = self.target = 0.0
        self.t = 0

    def _obs(self):
        return np.array([self.pos, self.target], np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.pos, self.target = self.rng.uniform(-1, 1, 2)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        if not (isinstance(action, np.ndarray) and action.dtype == np.float32
                and action.shape == (1,)):
            raise TypeError(f"MoveToTarget: action {action!r}: expected a float32 array of "
                            "shape (1,)")
        if not -1.0 <= action[0] <= 1.0:
            raise ValueError(f"MoveToTarget: action {action[0]} outside the Box [-1, 1]")
        self.pos = float(np.clip(self.pos + self.SPEED * action[0], -1, 1))
        self.t += 1
        return self._obs(), -abs(self.pos - self.target), False, self.t >= self.LENGTH, {}


def make_move_to_target():
    return MoveToTarget()


def random_return(episodes=400, seed=1):
    """The mean return of the policy volley starts from, on MoveToTarget: its
    Gaussian of mean about 0 and std 1, clipped to the bounds."""
    env, rng, total = MoveToTarget(), np.random.default_rng(seed), 0.0
    for k in range(episodes):
        env.reset(seed=k + 10**6)
        done = False
        while not done:
            a = np.clip(rng.standard_normal(1), -1, 1).astype(np.float32)
            _, r, te, tr, _ = env.step(a)
            total += r
            done = te or tr
    return total / episodes


class Buttons:
    """Two buttons pressed at once: MultiDiscrete([3, 2]); obs a step counter in
    [0, 1]; reward 1 when both buttons are 0; 16 steps an episode. Records every
    action it is given (seen) and refuses any that a Gymnasium MultiDiscrete env
    would not get (an int64 array of shape (2,) within [0, nvec))."""

    def __init__(self):
        self.observation_space = Box(0.0, 1.0, shape=(1,))
        self.action_space = MultiDiscrete([3, 2])
        self.t = 0
        self.seen = []

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        nvec = self.action_space.nvec
        if not (isinstance(action, np.ndarray) and action.dtype == np.int64
                and action.shape == nvec.shape):
            raise TypeError(f"Buttons: action {action!r}: expected an int64 array of shape (2,)")
        if not ((action >= 0) & (action < nvec)).all():
            raise ValueError(f"Buttons: action {action} outside MultiDiscrete({list(nvec)})")
        self.seen.append(action.copy())
        self.t += 1
        return (np.array([self.t / 16], np.float32), float(not action.any()), False,
                self.t >= 16, {})


def make_buttons():
    return Buttons()
