"""A Game-Boy-shaped env for measuring the pixel path: 1x72x80 screens of
four shades, 7 buttons, 512-step episodes, stepped as NumPy arrays at
almost no cost, so that what a run measures is volley's path (actors,
broker, learner), not the game.

Each env shows one of BANK screens drawn at random once (seeded); a button
moves it to another screen, and the button that matches the screen's cue
(its index modulo 7) earns a reward of 1, so a policy can learn from the
pixels. Episodes end by time limit only (truncated at 512 steps).

    make_env()      a ScreensVectorEnv of 16 envs, shades 0..3 (travels as
                    u2, four values a byte): `--env volley.envs.screens:make_env`
    make_env_u8()   the same with shades 0, 85, 170, 255 in a Box(0, 255):
                    travels as u8, a byte a value
"""
from typing import Any, Dict, Optional, Tuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .cartpole import Box, Discrete

__all__ = ["ScreensVectorEnv", "make_env", "make_env_u8", "SHAPE", "BUTTONS", "EPISODE"]

SHAPE = (1, 72, 80)
BUTTONS = 7
EPISODE = 512
BANK = 64


class ScreensVectorEnv:
    """n screen envs stepped as arrays; SAME_STEP autoreset (the ended
    episode's last observation in info["final_obs"], masked by
    info["_final_obs"]). scale 1: shades 0..3; 85: 0, 85, 170, 255."""

    metadata: Dict[str, Any] = {"autoreset_mode": "SameStep"}

    def __init__(self, num_envs: int = 16, scale: int = 1, seed: int = 0) -> None:
        self.num_envs = int(num_envs)
        self.single_observation_space = Box(0, 3 * scale, SHAPE, dtype=np.uint8)
        self.single_action_space = Discrete(BUTTONS)
        bank = np.random.default_rng(seed).integers(0, 4, (BANK,) + SHAPE, dtype=np.uint8)
        self.bank = bank * np.uint8(scale)
        self.np_random = np.random.default_rng()
        self.screen = np.zeros(self.num_envs, np.int64)
        self.steps = np.zeros(self.num_envs, np.int64)

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[NDArray[np.uint8], Dict[str, Any]]:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.screen = self.np_random.integers(0, BANK, self.num_envs)
        self.steps[:] = 0
        return self.bank[self.screen], {}

    def step(self, actions: ArrayLike) -> Tuple[NDArray[np.uint8], NDArray[np.float32],
                                                NDArray[np.bool_], NDArray[np.bool_],
                                                Dict[str, Any]]:
        a = np.asarray(actions, np.int64).reshape(self.num_envs)
        reward = (a == self.screen % BUTTONS).astype(np.float32)
        self.screen = (self.screen * 5 + a + 1) % BANK
        self.steps += 1
        truncated = self.steps >= EPISODE
        terminated = np.zeros(self.num_envs, bool)
        obs = self.bank[self.screen]
        info: Dict[str, Any] = {}
        if truncated.any():
            final = np.empty(self.num_envs, dtype=object)
            for i in np.flatnonzero(truncated):
                final[i] = obs[i].copy()
            k = int(truncated.sum())
            self.screen[truncated] = self.np_random.integers(0, BANK, k)
            self.steps[truncated] = 0
            obs[truncated] = self.bank[self.screen[truncated]]
            info = {"final_obs": final, "_final_obs": truncated}
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        pass


def make_env() -> ScreensVectorEnv:
    """16 screen envs of shades 0..3 (u2 on the wire)."""
    return ScreensVectorEnv(16)


def make_env_u8() -> ScreensVectorEnv:
    """16 screen envs of shades 0, 85, 170, 255 in Box(0, 255) (u8 on the wire)."""
    return ScreensVectorEnv(16, scale=85)
