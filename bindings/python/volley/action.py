"""volley.ActionSpace: a policy's action space, include/volley/env.h's vl_env_action_t.

    ActionSpace.discrete(4)                     one choice among 4
    ActionSpace.multi_discrete([3, 2])          two choices, among 3 and among 2
    ActionSpace.box([-1, -2], [1, 2])           two real values within their bounds
    ActionSpace.from_gym(env.action_space)      Gymnasium's Discrete, MultiDiscrete, Box
                                                (read by attribute, never imported)

Actions cross to C as floats, `dims` a step, whatever the kind (a discrete
choice as a whole number); to_env turns a row of them into what a Gymnasium
env's step takes (an int, an int64 array, a float32 array clipped to the
bounds). The text form is the C side's vl_action_str ("discrete(2)",
"multi_discrete(3,2)", "box(2)[-1..1,-2..2]"); the dict form is what
`volley export` writes as "action_space".
"""
from __future__ import annotations

import ctypes
from ctypes import c_float, c_uint32
from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["ActionSpace", "DISCRETE", "MULTI_DISCRETE", "BOX"]

DISCRETE, MULTI_DISCRETE, BOX = 0, 1, 2  # include/volley/env.h: VL_ENV_DISCRETE ..
KINDS = ("discrete", "multi_discrete", "box")
DIMS_MAX = 16  # VL_ENV_ACTION_DIMS_MAX
CHOICES_MAX = 1 << 20  # a bound on n[d] (the C side checks its own, lower, limit)


class CAction(ctypes.Structure):
    """include/volley/env.h: vl_env_action_t."""
    _fields_ = [("kind", c_uint32), ("dims", c_uint32), ("n", c_uint32 * DIMS_MAX),
                ("low", c_float * DIMS_MAX), ("high", c_float * DIMS_MAX)]


def _kind_name(space: Any) -> str:
    return type(space).__name__


class ActionSpace:
    """kind (DISCRETE, MULTI_DISCRETE or BOX), dims values per action, n
    (choices per dimension, discrete kinds) or low/high (float32 bounds per
    dimension, a box), and start (the env's first choice per dimension, for
    a Gymnasium Discrete(n, start=s); volley's choices start at 0). Checked
    when made: ValueError naming what is wrong."""

    def __init__(self, kind: int, n: Optional[Sequence[int]] = None,
                 low: Optional[Sequence[float]] = None, high: Optional[Sequence[float]] = None,
                 start: Optional[Sequence[int]] = None) -> None:
        if kind not in (DISCRETE, MULTI_DISCRETE, BOX):
            raise ValueError(f"action space: kind {kind!r}: expected one of {KINDS}")
        self.kind = int(kind)
        if kind == BOX:
            try:
                lo64 = np.asarray(low, dtype=np.float64).reshape(-1)
                hi64 = np.asarray(high, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError) as e:
                raise ValueError(f"box: bounds {low!r}, {high!r}: expected numbers ({e})") \
                    from None
            self.n = np.zeros(0, np.int64)
            self.dims = len(lo64)
            if len(hi64) != self.dims:
                raise ValueError(f"box: {self.dims} low bounds and {len(hi64)} high bounds")
            self._check_dims()
            top = float(np.finfo(np.float32).max)
            for d in range(self.dims):
                lo, hi = lo64[d], hi64[d]
                if not (abs(lo) <= top and abs(hi) <= top):  # NaN fails too
                    raise ValueError(f"box dimension {d}: bounds [{lo}, {hi}]: volley needs "
                                     "finite float32 bounds (a Gaussian's samples are clipped "
                                     "to them)")
            self.low, self.high = lo64.astype(np.float32), hi64.astype(np.float32)
            for d in range(self.dims):
                lo, hi = self.low[d], self.high[d]
                if not lo < hi:
                    raise ValueError(f"box dimension {d}: low {lo} is not below high {hi}")
            self.start = np.zeros(self.dims, np.int64)
        else:
            try:
                self.n = np.asarray(n, dtype=np.int64).reshape(-1)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"action space: choices {n!r}: expected whole numbers") from None
            self.dims = len(self.n)
            if kind == DISCRETE and self.dims != 1:
                raise ValueError(f"discrete: {self.dims} dimensions; multi_discrete holds several")
            self._check_dims()
            for d, k in enumerate(self.n):
                if not 2 <= k <= CHOICES_MAX:
                    raise ValueError(f"action dimension {d}: {k} choices; volley needs "
                                     f"2 .. {CHOICES_MAX}")
            self.low = self.high = np.zeros(0, np.float32)
            st = np.zeros(self.dims, np.int64) if start is None else \
                np.broadcast_to(np.asarray(start, dtype=np.int64), (self.dims,)).copy()
            self.start = st

    def _check_dims(self) -> None:
        if not 1 <= self.dims <= DIMS_MAX:
            raise ValueError(f"action space: {self.dims} dimensions; volley takes 1 .. "
                             f"{DIMS_MAX}")

    # ---- makers

    @classmethod
    def discrete(cls, n: int, start: int = 0) -> "ActionSpace":
        """One choice among n."""
        return cls(DISCRETE, [int(n)], start=[int(start)])

    @classmethod
    def multi_discrete(cls, nvec: Sequence[int], start: Any = None) -> "ActionSpace":
        """len(nvec) independent choices, dimension d among nvec[d]."""
        return cls(MULTI_DISCRETE, nvec, start=start)

    @classmethod
    def box(cls, low: Any, high: Any) -> "ActionSpace":
        """Real values, dimension d within [low[d], high[d]]."""
        lo = np.asarray(low, dtype=np.float64).reshape(-1)
        hi = np.asarray(high, dtype=np.float64).reshape(-1)
        if lo.size == 1 and hi.size > 1:
            lo = np.broadcast_to(lo, hi.shape)
        if hi.size == 1 and lo.size > 1:
            hi = np.broadcast_to(hi, lo.shape)
        return cls(BOX, low=list(lo), high=list(hi))

    @classmethod
    def from_gym(cls, space: Any) -> "ActionSpace":
        """A Gymnasium-style space read by its attributes: Discrete (n, start),
        MultiDiscrete (nvec, start; one dimension), Box (low, high, shape; one
        dimension, finite bounds). ValueError naming the space otherwise."""
        kind = _kind_name(space)
        if isinstance(space, ActionSpace):
            return space
        if kind == "Discrete" or (hasattr(space, "n") and not hasattr(space, "nvec")
                                  and not hasattr(space, "low")):
            n = int(space.n)
            if n < 2:
                raise ValueError(f"action space (Discrete({n})): volley needs at least 2 actions")
            return cls.discrete(n, int(getattr(space, "start", 0)))
        if kind == "MultiDiscrete" or hasattr(space, "nvec"):
            nvec = np.asarray(space.nvec)
            if nvec.ndim != 1:
                raise ValueError(f"action space (MultiDiscrete of shape {list(nvec.shape)}): "
                                 "volley takes one dimension of choices")
            return cls.multi_discrete([int(k) for k in nvec], getattr(space, "start", None))
        if kind == "Box" or (hasattr(space, "low") and hasattr(space, "high")):
            shape = tuple(getattr(space, "shape", None) or np.shape(space.low))
            if len(shape) != 1:
                raise ValueError(f"action space (Box of shape {list(shape)}): volley takes "
                                 "a one-dimensional Box")
            low = np.broadcast_to(np.asarray(space.low, dtype=np.float64), shape)
            high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), shape)
            return cls.box(low, high)
        raise ValueError(f"action space ({kind}): volley takes Discrete, MultiDiscrete or a "
                         "one-dimensional Box")

    @classmethod
    def of(cls, value: Any) -> "ActionSpace":
        """value as an ActionSpace: one already, an int (discrete choices), a
        dict (as_dict's form), a C struct, or a Gymnasium-style space."""
        if isinstance(value, ActionSpace):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return cls.discrete(int(value))
        if isinstance(value, dict):
            return cls.from_dict(value)
        if isinstance(value, CAction):
            return cls.from_c(value)
        return cls.from_gym(value)

    @classmethod
    def from_dict(cls, d: dict) -> "ActionSpace":
        """The export's {"kind", "dims", "n" | "low"/"high"}; ValueError when it is
        not one."""
        try:
            kind = KINDS.index(d["kind"])
            if kind == BOX:
                out = cls(BOX, low=d["low"], high=d["high"])
            else:
                out = cls(kind, d["n"])
            if "dims" in d and int(d["dims"]) != out.dims:
                raise ValueError(f"dims {d['dims']} but {out.dims} entries")
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"action space {d!r}: {e}") from None
        return out

    @classmethod
    def from_c(cls, c: CAction) -> "ActionSpace":
        """The space a vl_env_action_t holds (checked as any other)."""
        dims = int(c.dims)
        if not 1 <= dims <= DIMS_MAX:
            raise ValueError(f"action space from C: {dims} dimensions")
        if c.kind == BOX:
            return cls(BOX, low=list(c.low[:dims]), high=list(c.high[:dims]))
        return cls(int(c.kind), list(c.n[:dims]))

    # ---- views

    def to_c(self) -> CAction:
        """The vl_env_action_t of this space."""
        c = CAction()
        c.kind, c.dims = self.kind, self.dims
        for d in range(self.dims):
            if self.kind == BOX:
                c.low[d], c.high[d] = float(self.low[d]), float(self.high[d])
            else:
                c.n[d] = int(self.n[d])
        return c

    def as_dict(self) -> dict:
        """{"kind", "dims", "n"} or {"kind", "dims", "low", "high"}: the export's form."""
        out = {"kind": KINDS[self.kind], "dims": self.dims}
        if self.kind == BOX:
            out.update(low=[float(x) for x in self.low], high=[float(x) for x in self.high])
        else:
            out["n"] = [int(k) for k in self.n]
        return out

    @property
    def is_box(self) -> bool:
        return self.kind == BOX

    @property
    def outputs(self) -> int:
        """The head outputs a network needs: the sum of n (logits, dimension
        after dimension), or dims (a box's means)."""
        return self.dims if self.kind == BOX else int(self.n.sum())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ActionSpace):
            return NotImplemented
        return (self.kind == other.kind and self.dims == other.dims
                and np.array_equal(self.n, other.n) and np.array_equal(self.low, other.low)
                and np.array_equal(self.high, other.high))

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        if self.kind == BOX:
            bounds = ",".join(f"{lo:g}..{hi:g}" for lo, hi in zip(self.low, self.high))
            return f"box({self.dims})[{bounds}]"
        return f"{KINDS[self.kind]}({','.join(str(int(k)) for k in self.n)})"

    def __repr__(self) -> str:
        return f"ActionSpace({self})"

    # ---- actions

    def find_bad(self, actions: np.ndarray) -> Optional[tuple]:
        """The first value of actions [n, dims] that is not in the space, as
        (row, dimension, value): NaN or infinite, or for discrete kinds not a
        whole number in 0 .. n[d] - 1 (a box's samples may leave the bounds:
        they are clipped when the env is stepped). None when all fit."""
        a = np.asarray(actions, dtype=np.float64).reshape(-1, self.dims)
        bad = ~np.isfinite(a)
        if self.kind != BOX:
            with np.errstate(invalid="ignore"):
                bad |= (a != np.round(a)) | (a < 0) | (a >= self.n[None, :])
        if not bad.any():
            return None
        i, d = np.argwhere(bad)[0]
        return int(i), int(d), float(a[i, d])

    def clip(self, actions: np.ndarray) -> np.ndarray:
        """Box actions [.., dims] clipped to the bounds (float32); others as they are."""
        if self.kind != BOX:
            return actions
        return np.clip(np.asarray(actions, dtype=np.float32), self.low, self.high)

    def to_env(self, actions: np.ndarray) -> Any:
        """Float actions [n, dims] as a Gymnasium vector env takes them: int64
        [n] (Discrete, plus start), int64 [n, dims] (MultiDiscrete, plus
        start), float32 [n, dims] clipped to the bounds (Box)."""
        a = np.asarray(actions).reshape(-1, self.dims)
        if self.kind == BOX:
            return self.clip(a)
        out = np.rint(a).astype(np.int64) + self.start[None, :]
        return out[:, 0] if self.kind == DISCRETE else out

    def to_env_one(self, action: np.ndarray) -> Any:
        """One action [dims] as a single Gymnasium env takes it: an int
        (Discrete), an int64 array (MultiDiscrete), a float32 array clipped
        to the bounds (Box)."""
        a = self.to_env(np.asarray(action).reshape(1, self.dims))[0]
        return int(a) if self.kind == DISCRETE else a
