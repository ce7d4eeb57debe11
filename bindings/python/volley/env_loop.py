"""volley.env_loop: Gymnasium-style envs stepped as an actor records them.

Each step gives, for N envs: the next observations [N, D] (where an episode
ended, the next episode's first one), rewards, terminated, truncated and the
final observations [N, D] of the episodes that ended (what a truncated one
bootstraps from). A list of single envs is stepped one by one; a vector env
in whichever autoreset mode it declares (Gymnasium's NEXT_STEP, SAME_STEP,
DISABLED, or pre-1.0's info["final_observation"]). No step is ever one of
NEXT_STEP's reset steps: the ended envs are reset at once, each alone.

Gymnasium is imported only to read its version and, for a vector env of
Gymnasium's own whose reset cannot reset envs alone (CartPole-v1's
CartPoleVectorEnv, what gymnasium.make_vec gives by default), to make the
same env id again as a SyncVectorEnv.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from .actor import Spec

__all__ = ["is_vector"]

# A step of N envs: (next obs [N, D], rewards, terminated, truncated, final obs [N, D]).
_StepArrays = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

# Gymnasium's vector envs that reset only the envs options["reset_mask"] names (1.1 and later)
_MASKED_RESETS = ("SyncVectorEnv", "AsyncVectorEnv")


def is_vector(env: Any) -> bool:
    """True when env is a vector env (num_envs and single_observation_space)."""
    return hasattr(env, "num_envs") and hasattr(env, "single_observation_space")


class _EnvList:
    """N single envs stepped one by one; reset on done, final obs = step's obs."""

    def __init__(self, envs: List[Any], spec: "Spec", seeds: Sequence[int]) -> None:
        self.envs, self.spec = envs, spec
        self.obs = np.stack([spec.flatten(e.reset(seed=s)[0]) for e, s in zip(envs, seeds)])

    def step(self, actions: np.ndarray) -> _StepArrays:
        """Steps env i with float actions[i] [dims] as the space's env takes it."""
        N, spec = len(self.envs), self.spec
        nxt = np.empty_like(self.obs)
        final = np.zeros_like(self.obs)
        rew = np.empty(N, np.float64)
        term = np.zeros(N, bool)
        trunc = np.zeros(N, bool)
        for i, env in enumerate(self.envs):
            o, r, te, tr, _ = env.step(spec.action.to_env_one(actions[i]))
            rew[i], term[i], trunc[i] = r, bool(te), bool(tr)
            if te or tr:
                final[i] = spec.flatten(o)
                o, _ = env.reset()
            nxt[i] = spec.flatten(o)
        self.obs = nxt
        return nxt, rew, term, trunc, final

    def close(self) -> None:
        """The envs are the caller's: nothing to close."""


def _autoreset_mode(venv: Any) -> Optional[str]:
    mode = (getattr(venv, "metadata", None) or {}).get("autoreset_mode")
    if mode is None:
        return None
    text = str(getattr(mode, "value", mode)) + str(getattr(mode, "name", ""))
    return text.lower().replace("_", "").replace("autoresetmode.", "")


def _mode_name(mode: str) -> str:
    return "NEXT_STEP" if "next" in mode else "DISABLED" if "disab" in mode else mode


def _has_reset_mask() -> bool:
    """Whether the installed Gymnasium's vector envs reset only the envs
    options["reset_mask"] names (Gymnasium 1.1 and later)."""
    try:
        import gymnasium
    except ImportError:
        return False
    major, minor = (int(x) if x.isdigit() else 0 for x in gymnasium.__version__.split(".")[:2])
    return (major, minor) >= (1, 1)


def _known_to_reset_alone(venv: Any) -> bool:
    """True for one env, and for Gymnasium's SyncVectorEnv and AsyncVectorEnv
    (wrapped or not): their reset(options={"reset_mask": m}) resets only the
    envs m names."""
    base = type(getattr(venv, "unwrapped", venv))
    return int(venv.num_envs) == 1 or (base.__module__.startswith("gymnasium.vector") and
                                       base.__name__ in _MASKED_RESETS)


def _tried_to_reset_alone(venv: Any, spec: "Spec", obs: np.ndarray) -> bool:
    """Whether venv.reset(options={"reset_mask": m}), tried on env 0 alone
    right after the reset that gave obs, left the other envs' observations
    as they were. The caller resets again."""
    mask = np.zeros(int(venv.num_envs), bool)
    mask[0] = True
    try:
        again = spec.flatten_batch(venv.reset(options={"reset_mask": mask})[0])
    except Exception:  # an env that takes no reset_mask: it cannot reset envs alone
        return False
    return bool(np.array_equal(again[1:], obs[1:]))


def _made_again(venv: Any) -> Optional[Any]:
    """The env id venv was made from (gymnasium.make_vec, with the same
    keyword arguments) made again as a SyncVectorEnv in SAME_STEP autoreset,
    whose ended envs reset alone; None when venv is wrapped, was not made
    by make_vec from a registered id of a single-env entry point, or the id
    does not make again."""
    spec: Any = getattr(venv, "spec", None)
    n = int(venv.num_envs)
    if venv is not getattr(venv, "unwrapped", None) or getattr(spec, "entry_point", None) is None:
        return None
    kwargs: Dict[str, Any] = dict(getattr(spec, "kwargs", None) or {})
    if kwargs.pop("vectorization_mode", "vector_entry_point") != "vector_entry_point":
        return None
    for k in ("num_envs", "vector_kwargs", "wrappers"):
        kwargs.pop(k, None)
    try:
        import gymnasium
        make_vec: Any = gymnasium.make_vec
        return make_vec(
            spec.id, num_envs=n, vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}, **kwargs)
    except Exception:
        return None


class _VectorEnv:
    """A Gymnasium vector env in any autoreset mode. Pre-1.0
    (info["final_observation"]) and 1.0's SAME_STEP (info["final_obs"]):
    the step that ends an episode returns the next one's first observation.
    NEXT_STEP (Gymnasium 1.x's default) and DISABLED: the step that ends an
    episode returns its final observation, and the ended envs are reset
    there and then (reset with options["reset_mask"]), so the step after an
    end, which NEXT_STEP would spend on the reset, is experience like any
    other. A NEXT_STEP or DISABLED vector env whose reset resets every env
    whatever the mask says cannot be stepped so: one gymnasium.make_vec made
    by its vector entry point (CartPoleVectorEnv) runs as the same id made
    again in "sync" mode (said once on stderr); any other is refused."""

    def __init__(self, venv: Any, spec: "Spec", seed: int) -> None:
        self.venv, self.spec, self.made = venv, spec, None
        mode = self._open(venv)
        self.obs = spec.flatten_batch(venv.reset(seed=int(seed))[0])
        if not self.reset_ended or _known_to_reset_alone(venv):
            return
        alone = _tried_to_reset_alone(venv, spec, self.obs)
        self.obs = spec.flatten_batch(venv.reset(seed=int(seed))[0])
        if alone:
            return
        again = _made_again(venv)
        if again is None:
            raise ValueError(
                f"vector env {type(venv).__name__} (autoreset {_mode_name(mode or '')}): "
                f"reset(options={{'reset_mask': ...}}) changed envs the mask left out, so volley "
                f"cannot reset the ended envs alone; make it with SAME_STEP autoreset or "
                f"gymnasium.make_vec(..., vectorization_mode='sync'), or pass env factories")
        print(f"volley: vector env {type(venv).__name__} of {spec.name} resets every env "
              f"on reset(options={{'reset_mask': ...}}); it runs as gymnasium.make_vec("
              f"{venv.spec.id!r}, num_envs={int(venv.num_envs)}, vectorization_mode='sync'), "
              f"whose ended envs reset alone", file=sys.stderr, flush=True)
        self.venv = self.made = again
        self._open(again)
        self.obs = spec.flatten_batch(again.reset(seed=int(seed))[0])

    def _open(self, venv: Any) -> Optional[str]:
        """Reads venv's autoreset mode: sets reset_ended and key; returns the mode."""
        mode = _autoreset_mode(venv)
        self.reset_ended = mode is not None and "samestep" not in mode
        if mode is not None and self.reset_ended and not _has_reset_mask():
            raise ValueError(
                f"vector env autoreset mode {_mode_name(mode)}: volley resets the ended envs "
                f"with reset(options={{'reset_mask': ...}}), which needs Gymnasium 1.1 or "
                f"later. Make it with autoreset_mode=AutoresetMode.SAME_STEP, or pass a list "
                f"of env factories")
        self.key = "final_obs" if mode is not None else "final_observation"
        return mode

    def close(self) -> None:
        """Closes the vector env made again here (the caller's stays the caller's)."""
        if self.made is not None:
            self.made.close()
            self.made = None

    def _infos_final(self, info: Dict[str, Any], done: np.ndarray, final: np.ndarray) -> None:
        """Copies the ended envs' final observations out of info into final."""
        key = self.key
        if key not in info and self.key == "final_observation" and "final_obs" in info:
            key = self.key = "final_obs"  # 1.0 SAME_STEP without metadata
        if key not in info:
            raise ValueError(
                "vector env ended an episode without info['final_observation'] (or "
                "'final_obs') and declares no metadata['autoreset_mode']: volley cannot "
                "tell its final observation; use SAME_STEP autoreset or env factories")
        mask = np.asarray(info.get("_" + key, done), bool)
        if not np.array_equal(mask & done, done):
            raise ValueError(f"vector env: info['_{key}'] does not cover every ended episode")
        for i in np.flatnonzero(done):
            final[i] = self.spec.flatten(info[key][i])

    def _reset_ended(self, obs: np.ndarray, done: np.ndarray, final: np.ndarray) -> np.ndarray:
        """The step's observations [N, D] with the ended envs' (their final
        ones, into final) replaced by a reset's first ones."""
        final[done] = obs[done]
        fresh = self.spec.flatten_batch(self.venv.reset(options={"reset_mask": done.copy()})[0])
        if not np.array_equal(fresh[~done], obs[~done]):
            raise ValueError("vector env: reset(options={'reset_mask': ...}) changed envs the "
                             "mask left out; use SAME_STEP autoreset or env factories")
        return fresh

    def step(self, actions: np.ndarray) -> _StepArrays:
        """Steps with float actions [N, dims] as the space's env takes them."""
        o, r, te_given, tr_given, info = self.venv.step(self.spec.action.to_env(actions))
        te, tr = np.asarray(te_given, bool), np.asarray(tr_given, bool)
        done = te | tr
        final = np.zeros_like(self.obs)
        obs = self.spec.flatten_batch(o)
        if done.any():
            if self.reset_ended:
                obs = self._reset_ended(obs, done, final)
            else:
                self._infos_final(info, done, final)
        self.obs = obs
        return self.obs, np.asarray(r, np.float64), te, tr, final
