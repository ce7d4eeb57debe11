"""volley.PrioritizedSampler: store/vl_sampler.c's sum-tree over NumPy arrays."""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np
from numpy.typing import ArrayLike
from typing import Any, Tuple, Union

from . import _lib

_CAPACITY_MAX = 2**30


def _slots(self: Any, slots: Any) -> np.ndarray:
    """slots as a 1-D int64 array, every one in [0, capacity): IndexError otherwise."""
    s = np.asarray(slots)
    if s.dtype.kind not in "iu" and not (s.size == 0 and s.dtype.kind == "f"):
        raise TypeError(f"slots: expected integers, got dtype {s.dtype}")
    s = s.reshape(-1).astype(np.int64, copy=False)
    bad = (s < 0) | (s >= self.capacity)
    if bad.any():
        raise IndexError(f"slots: {int(s[bad][0])} is out of range [0, {self.capacity})")
    return s


class PrioritizedSampler:
    """Draws slots in proportion to their priorities (prioritized experience replay).

    capacity slots (1 .. 2^30), all at priority 0 (never drawn) to start; seed
    drives the draws. P(i) = p_i / total; importance weights
    w_i = (count * P(i))^-beta divided by the largest among a draw's. The C
    sampler is single-threaded: this object serialises calls with a lock, so
    it may be shared between threads. Each C call releases the GIL.
    """

    def __init__(self, capacity: int, seed: int = 1) -> None:
        capacity = int(capacity)
        if not 1 <= capacity <= _CAPACITY_MAX:
            raise ValueError(f"capacity: expected 1 .. 2^30, got {capacity}")
        self._ptr = None
        self._lock = threading.Lock()
        self.capacity = capacity
        ptr = _lib.lib.vl_sampler_new(capacity, int(seed) & (2**64 - 1))
        if not ptr:
            raise MemoryError(f"vl_sampler_new({capacity}): no memory")
        self._ptr = ptr

    def __del__(self) -> None:
        if getattr(self, "_ptr", None):
            _lib.lib.vl_sampler_destroy(ctypes.byref(ctypes.c_void_p(self._ptr)))
            self._ptr = None

    def set(self, slots: ArrayLike, priorities: ArrayLike) -> None:
        """Sets the priorities of slots (an int or an array of them); priorities
        is one number or one per slot, each >= 0 and finite (0 takes the slot
        out of sampling). O(log capacity) a slot, one C call each."""
        s = _slots(self, slots)
        p = np.broadcast_to(np.asarray(priorities, dtype=np.float64), s.shape)
        bad = ~np.isfinite(p) | (p < 0)
        if bad.any():
            raise ValueError(f"priorities: expected >= 0 and finite, got {float(p[bad][0])} "
                             f"for slot {int(s[bad][0])}")
        fn, ptr = _lib.lib.vl_sampler_set, self._ptr
        with self._lock:
            for slot, prio in zip(s.tolist(), p.tolist()):
                fn(ptr, slot, prio)

    def get(self, slots: ArrayLike) -> Union[float, np.ndarray]:
        """The priority of a slot (a float), or of each of an array of slots."""
        scalar = np.ndim(slots) == 0
        s = _slots(self, slots)
        fn, ptr = _lib.lib.vl_sampler_get, self._ptr
        with self._lock:
            got = np.array([fn(ptr, slot) for slot in s.tolist()], dtype=np.float64)
        return float(got[0]) if scalar else got.reshape(np.shape(slots))

    @property
    def total(self) -> float:
        """The sum of all priorities."""
        with self._lock:
            return _lib.lib.vl_sampler_total(self._ptr)

    @property
    def count(self) -> int:
        """How many slots have priority > 0."""
        with self._lock:
            return _lib.lib.vl_sampler_count(self._ptr)

    def sample(self, n: int, beta: float = 1.0) -> Tuple[np.ndarray, np.ndarray]:
        """Draws n slots with replacement in proportion to priority (stratified:
        one draw in each of n equal slices of the total). Returns (slots uint32
        [n], weights float32 [n]); the largest weight is exactly 1, beta = 0
        gives all 1. ValueError when no slot has priority."""
        n = int(n)
        if not 0 <= n < 2**32:
            raise ValueError(f"n: expected 0 .. 2^32-1, got {n}")
        if not math.isfinite(beta) or beta < 0:
            raise ValueError(f"beta: expected >= 0 and finite, got {beta}")
        slots = np.empty(n, np.uint32)
        weights = np.empty(n, np.float32)
        if n == 0:
            return slots, weights
        with self._lock:
            got = _lib.lib.vl_sampler_sample(self._ptr, n, beta, slots.ctypes.data,
                                             weights.ctypes.data)
        if got != n:
            raise ValueError("sample: no slot has priority > 0")
        return slots, weights

    @staticmethod
    def priority(adv: ArrayLike, alpha: float) -> Union[float, np.ndarray]:
        """(sum_t |adv_t|)^alpha of one segment's advantages (1-D), or of each
        row of a 2-D [n, T] array (an array of n); at least 1e-6 when alpha > 0,
        1 when alpha = 0 (vl_sampler_priority)."""
        a = np.ascontiguousarray(adv, dtype=np.float32)
        if a.ndim not in (1, 2):
            raise ValueError(f"adv: expected [T] or [n, T], got shape {a.shape}")
        fn, T = _lib.lib.vl_sampler_priority, a.shape[-1]
        if a.ndim == 1:
            return fn(a.ctypes.data, T, alpha)
        base, stride = a.ctypes.data, a.strides[0]
        return np.array([fn(base + i * stride, T, alpha) for i in range(a.shape[0])])

    @staticmethod
    def beta(beta0: float, step: int, steps: int) -> float:
        """beta annealed linearly from beta0 at step 0 to 1 at step steps, 1 after."""
        return _lib.lib.vl_sampler_beta(beta0, int(step), int(steps))

    def __repr__(self) -> str:
        return f"<volley.PrioritizedSampler capacity={self.capacity} count={self.count}>"
