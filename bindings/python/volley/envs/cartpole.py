"""CartPole-v1 in NumPy, exactly as Gymnasium defines it (classic_control/
cartpole.py under TimeLimit(500)), with Gymnasium's API and no Gymnasium:
Euler integration in float64, observations returned as float32, reward 1 on
every step (the terminating one included), truncation at 500 steps.
envs/vl_cartpole.c is the same environment in C.

    make_env()                one CartPoleEnv (for `python3 -m volley actor --env
                              volley.envs.cartpole:make_env`)
    CartPoleVectorEnv(n)      n of them stepped as arrays, a vector env with
                              Gymnasium 1.0's SAME_STEP autoreset
"""
import math
from typing import Any, Dict, Optional, Sequence, SupportsInt, Tuple

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds between state updates
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4
MAX_STEPS = 500


class Box:
    """The subset of gymnasium.spaces.Box volley reads."""

    def __init__(self, low: ArrayLike, high: ArrayLike, shape: Optional[Sequence[int]] = None,
                 dtype: DTypeLike = np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape) if shape is not None else np.shape(low)
        self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self.shape).copy()
        self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self.shape).copy()


class Discrete:
    """The subset of gymnasium.spaces.Discrete volley reads."""

    def __init__(self, n: int, start: int = 0) -> None:
        self.n = int(n)
        self.start = int(start)


def _obs_space() -> Box:
    high = np.array([X_LIMIT * 2, np.finfo(np.float32).max, THETA_LIMIT * 2,
                     np.finfo(np.float32).max], dtype=np.float32)
    return Box(-high, high, dtype=np.float32)


def _step_arrays(state: NDArray[np.float64], force: NDArray[np.float64]) -> None:
    """One Euler step of states [..., 4] (float64) in place, term for term as
    Gymnasium writes it."""
    x, x_dot, theta, theta_dot = state[..., 0], state[..., 1], state[..., 2], state[..., 3]
    costheta = np.cos(theta)
    sintheta = np.sin(theta)
    temp = (force + POLEMASS_LENGTH * np.square(theta_dot) * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * np.square(costheta) / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    new = np.stack([x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot,
                    theta_dot + TAU * thetaacc], axis=-1)
    state[...] = new


class CartPoleEnv:
    """CartPole-v1 with its 500-step time limit."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = _obs_space()
        self.action_space = Discrete(2)
        self.np_random = np.random.default_rng()
        self.state = np.zeros(4)
        self.steps = 0

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[NDArray[np.float32], Dict[str, Any]]:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
        self.steps = 0
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action: SupportsInt
             ) -> Tuple[NDArray[np.float32], float, bool, bool, Dict[str, Any]]:
        # Gymnasium's step, expression for expression (math.cos/sin on float64 scalars).
        x, x_dot, theta, theta_dot = self.state
        force = FORCE_MAG if int(action) == 1 else -FORCE_MAG
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        temp = (force + POLEMASS_LENGTH * np.square(theta_dot) * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASSPOLE * np.square(costheta) / TOTAL_MASS))
        xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        self.state = np.array((x, x_dot, theta, theta_dot), dtype=np.float64)
        terminated = bool(x < -X_LIMIT or x > X_LIMIT or theta < -THETA_LIMIT
                          or theta > THETA_LIMIT)
        self.steps += 1
        truncated = self.steps >= MAX_STEPS
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated, {}

    def close(self) -> None:
        pass


def make_env() -> CartPoleEnv:
    """One CartPole-v1 (what `python3 -m volley actor --env` calls)."""
    return CartPoleEnv()


class CartPoleVectorEnv:
    """n CartPoles stepped as [n, 4] arrays. Autoreset as Gymnasium 1.0's
    SAME_STEP: where an episode ended, step() returns the next episode's
    first observation and puts the ended one's last in info["final_obs"]
    (masked by info["_final_obs"])."""

    metadata: Dict[str, Any] = {"autoreset_mode": "SameStep"}

    def __init__(self, num_envs: int) -> None:
        self.num_envs = int(num_envs)
        self.single_observation_space = _obs_space()
        self.single_action_space = Discrete(2)
        self.np_random = np.random.default_rng()
        self.state = np.zeros((self.num_envs, 4))
        self.steps = np.zeros(self.num_envs, dtype=np.int64)

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[NDArray[np.float32], Dict[str, Any]]:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(self.num_envs, 4))
        self.steps[:] = 0
        return self.state.astype(np.float32), {}

    def step(self, actions: ArrayLike) -> Tuple[NDArray[np.float32], NDArray[np.float64],
                                                NDArray[np.bool_], NDArray[np.bool_],
                                                Dict[str, Any]]:
        force = np.where(np.asarray(actions) == 1, FORCE_MAG, -FORCE_MAG)
        _step_arrays(self.state, force)
        x, theta = self.state[:, 0], self.state[:, 2]
        terminated = (x < -X_LIMIT) | (x > X_LIMIT) | (theta < -THETA_LIMIT) | (theta > THETA_LIMIT)
        self.steps += 1
        truncated = self.steps >= MAX_STEPS
        obs = self.state.astype(np.float32)
        info: Dict[str, Any] = {}
        done = terminated | truncated
        if done.any():
            final = np.empty(self.num_envs, dtype=object)
            for i in np.flatnonzero(done):
                final[i] = obs[i].copy()
            k = int(done.sum())
            self.state[done] = self.np_random.uniform(low=-0.05, high=0.05, size=(k, 4))
            self.steps[done] = 0
            obs[done] = self.state[done].astype(np.float32)
            info = {"final_obs": final, "_final_obs": done}
        return obs, np.ones(self.num_envs), terminated, truncated, info

    def close(self) -> None:
        pass
