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


class Counter:
    """obs = [env, episode, t, ended]; env k's episodes last 3 + k steps,
    even episodes terminated, odd ones truncated. Deterministic, so that the
    steps an actor records can be checked exactly."""

    def __init__(self, k):
        self.k, self.ep, self.t = k, -1, 0
        self.observation_space = Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = Discrete(2)

    def _obs(self, ended=0):
        return np.array([self.k, self.ep, self.t, ended], np.float32)

    def reset(self, seed=None, options=None):
        self.ep, self.t = self.ep + 1, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        end = self.t == 3 + self.k
        return self._obs(int(end)), 1.0, end and self.ep % 2 == 0, end and self.ep % 2 == 1, {}


class _Vec:
    def __init__(self, n):
        self.envs = [Counter(k) for k in range(n)]
        self.num_envs = n
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space

    def reset(self, seed=None, options=None):
        return np.stack([e.reset()[0] for e in self.envs]), {}

    def _step(self, actions, key):
        out = [e.step(a) for e, a in zip(self.envs, actions)]
        obs = np.stack([o[0] for o in out])
        te = np.array([o[2] for o in out])
        tr = np.array([o[3] for o in out])
        info = {}
        if (te | tr).any() and key:
            final = np.empty(self.num_envs, dtype=object)
            for i in np.flatnonzero(te | tr):
                final[i] = obs[i].copy()
                obs[i] = self.envs[i].reset()[0]
            info = {key: final, "_" + key: te | tr}
        return obs, np.ones(self.num_envs), te, tr, info


class OldVec(_Vec):
    """Gymnasium before 1.0: info["final_observation"], no autoreset_mode."""
    metadata = {}

    def step(self, actions):
        return self._step(actions, "final_observation")


class Mode:
    """Stands for gymnasium.vector.AutoresetMode's members."""

    def __init__(self, name, value):
        self.name, self.value = name, value


class SameStepVec(_Vec):
    metadata = {"autoreset_mode": Mode("SAME_STEP", "SameStep")}

    def step(self, actions):
        return self._step(actions, "final_obs")


class NextStepVec(_Vec):
    """Says NEXT_STEP, returns each ended episode's final observation, and
    resets every env whatever options["reset_mask"] says."""
    metadata = {"autoreset_mode": Mode("NEXT_STEP", "NextStep")}

    def step(self, actions):
        return self._step(actions, None)


class SilentVec(_Vec):
    """Resets itself but says neither how nor where the final obs went."""
    metadata = {}

    def step(self, actions):
        obs, r, te, tr, _ = self._step(actions, "x")
        return obs, r, te, tr, {}
