"""volley.vtrace: IMPALA's V-trace over NumPy arrays, by store/vtrace.c's
vl_vtrace / vl_vtrace_boot (the arithmetic is described in include/volley/vtrace.h)."""
from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np
from numpy.typing import ArrayLike
from numpy.typing import NDArray
from typing import List, Optional, Sequence, Tuple

from . import _lib

_INT_MAX = 2**31 - 1
# The last results returned (two pairs at most), reused once nothing else holds them.
_spare: List[Tuple[NDArray[np.float32], NDArray[np.float32]]] = []
_spare_lock = threading.Lock()  # finding a free pair and taking it is one step for threads


def _free(pair: Tuple[np.ndarray, np.ndarray], shape: Tuple[int, int]) -> bool:
    """True when pair has this shape and only the cache refers to its arrays (no name, view,
    or list of the caller's holds them)."""
    return pair[0].shape == shape and sys.getrefcount(pair[0]) == 2 and \
        sys.getrefcount(pair[1]) == 2  # the cache's tuple and getrefcount's argument


def _results(n: int, T: int) -> Tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Two float32 [n, T] arrays for the results: an earlier call's when the caller has let
    go of both, else new ones. Fresh 2 MB arrays cost their page faults at every call, and a
    learner calls vtrace on one shape every update: `vs, adv = vtrace(...)` in a loop still
    holds the last results during the call, so two pairs take turns. Threads take pairs
    under a lock: a pair checked free is taken before any other thread can check it. Taken
    means held: what is returned is a new tuple of the two arrays, made under the lock, so
    that they are not free (only the cache's) between the lock and the caller's names."""
    with _spare_lock:
        for i in range(len(_spare) - 1, -1, -1):  # the newest first: its memory is the warmest
            pair = _spare[i]
            if _free(pair, (n, T)):
                del _spare[i]  # by position: == on arrays would compare their elements
                _spare.append(pair)
                return (pair[0], pair[1])
        pair = (np.empty((n, T), np.float32), np.empty((n, T), np.float32))
        _spare.append(pair)
        del _spare[:-2]
        return (pair[0], pair[1])


def _as_f32(name: str, a: ArrayLike) -> NDArray[np.float32]:
    """a as a float32 C-contiguous array: a itself when it already is one."""
    try:
        return np.ascontiguousarray(a, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: expected an array of floats, got {type(a).__name__} ({e})")


def _check_shape(name: str, a: np.ndarray, shape: Tuple[int, ...], why: str) -> None:
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} {why}, got {a.shape}")


def _check_out(name: str, a: object, shape: Tuple[int, ...],
               inputs: Sequence[Tuple[str, np.ndarray]]) -> None:
    if not isinstance(a, np.ndarray) or a.dtype != np.float32 or not a.flags.c_contiguous \
            or not a.flags.writeable:
        raise TypeError(f"out {name}: expected a writeable float32 C-contiguous array")
    _check_shape(f"out {name}", a, shape, "[n, T]")
    for other_name, other in inputs:
        if np.may_share_memory(a, other):
            raise ValueError(f"out {name}: overlaps {other_name}")


def vtrace(values: ArrayLike, rewards: ArrayLike, dones: ArrayLike, log_rhos: ArrayLike,
           gamma: float = 0.99, lam: float = 0.95, rho_bar: float = 1.0, c_bar: float = 1.0,
           pg_rho_bar: Optional[float] = None, boot: Optional[ArrayLike] = None, *,
           out: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> Tuple[np.ndarray, np.ndarray]:
    """V-trace targets and policy-gradient advantages for n segments of T steps.

    values [n, T+1] (the last column is the bootstrap V(x_T)); rewards, dones,
    log_rhos (log pi(a|x) - log mu(a|x)) and boot [n, T]; dones[t] = 1 when the
    episode ended after action t. boot, when given, is the truncation input:
    V(x_final) at each step where the episode was truncated by a time limit
    (dones = 1 there), and exactly 0 at every other step (not checked: it is
    the C kernel's contract). pg_rho_bar None means rho_bar. Clips may be
    math.inf. Returns (vs, pg_adv), float32 [n, T] each; out=(vs, pg_adv)
    writes into two float32 C-contiguous arrays of that shape instead.

    Arrays that are already float32 and C-contiguous are passed to C as they
    are (no copy); anything else is converted first. The C call releases the
    GIL.
    """
    v = _as_f32("values", values)
    if v.ndim != 2 or v.shape[1] < 1:
        raise ValueError(f"values: expected a 2-D array [n, T+1], got shape {v.shape}")
    n, T = v.shape[0], v.shape[1] - 1
    if n > _INT_MAX or T > _INT_MAX:
        raise ValueError(f"values: shape {v.shape} is over the C kernel's int range")
    why = f"([n, T] with values {v.shape})"
    arrays: List[Tuple[str, np.ndarray]] = [("values", v)]
    given: List[Tuple[str, ArrayLike]] = [("rewards", rewards), ("dones", dones),
                                          ("log_rhos", log_rhos)]
    if boot is not None:
        given.append(("boot", boot))
    for name, given_a in given:
        f = _as_f32(name, given_a)
        _check_shape(name, f, (n, T), why)
        arrays.append((name, f))
    if out is None:
        vs, pg_adv = _results(n, T)
    else:
        vs, pg_adv = out
        _check_out("vs", vs, (n, T), arrays)
        _check_out("pg_adv", pg_adv, (n, T), arrays + [("out vs", vs)])
    p = _lib.vtrace_params(gamma, lam, rho_bar, c_bar, rho_bar if pg_rho_bar is None
                           else pg_rho_bar)
    a = dict(arrays)
    if boot is None:
        _lib.lib.vl_vtrace(ctypes.byref(p), n, T, a["values"].ctypes.data,
                           a["rewards"].ctypes.data, a["dones"].ctypes.data,
                           a["log_rhos"].ctypes.data, vs.ctypes.data, pg_adv.ctypes.data)
    else:
        _lib.lib.vl_vtrace_boot(ctypes.byref(p), n, T, a["values"].ctypes.data,
                                a["rewards"].ctypes.data, a["dones"].ctypes.data,
                                a["boot"].ctypes.data, a["log_rhos"].ctypes.data,
                                vs.ctypes.data, pg_adv.ctypes.data)
    return vs, pg_adv


def vtrace_path(path: int = -1) -> int:
    """Makes vtrace use one code path for the whole process: 0 scalar, 1 SSE2,
    2 AVX2+FMA, -1 the best this CPU has. The paths agree to rounding, not bit
    for bit (a deterministic run picks 1). Returns the path chosen; raises
    ValueError when this build or CPU lacks it."""
    got = _lib.lib.vl_vtrace_path(int(path))
    if got < 0:
        raise ValueError(f"vtrace_path: path {path} is not available in this build or CPU")
    return got

