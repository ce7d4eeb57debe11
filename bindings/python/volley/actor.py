"""volley.actor: actors for Python environments, over include/volley/actor.h.

    actor = volley.Actor(broker="127.0.0.1", spec=env, num_envs=16)
    obs = ...                                    # [16, obs_dim] (or a dict of fields)
    while True:
        actions = actor.act(obs)                 # volley's policy, in C
        next_obs, rewards, terminated, truncated, final_obs = step(actions)
        actor.observe(rewards, terminated, truncated, next_obs, final_obs=final_obs)
        obs = next_obs

The C engine does everything `volley actor` does: waits for the first
weights, applies newer ones between calls, beats to the broker with the
actor's spec, records each step, and every `horizon` steps cuts, packs,
compresses and pushes one segment per env, then paces (max_ahead). With
policy=callable (or policy_fn=) the forward pass is the caller's: it gets
the observation batch (float32 [N, D]) and the newest weights as a dict of
NumPy arrays (with .version) and returns (actions, logps).

run_actor() drives Gymnasium-style envs (a list of factories, or a vector
env) through an Actor; `python3 -m volley actor --env pkg.mod:make_env` is
its command line. Spaces are read by their attributes, without Gymnasium;
volley.env_loop steps the envs (Gymnasium's vector envs in each autoreset
mode).

Screens: a uint8 Box of (H, W), (H, W, C) or (C, H, W) is read as an image
and sent channels first, (C, H, W), as volley's networks take it; the
layout is detected (C <= 4 last: HWC; first: CHW; 2-D: one channel) or
declared (layout="HWC"), and said once when the actor starts. With
cert= and broker_key= the actor is a CURVE client, as `volley actor
--cert --broker-key`.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np
from numpy.typing import ArrayLike
from math import gcd
from typing import (Any, Callable, Dict, Iterable, List, Match, NamedTuple, NoReturn, Optional,
                    Sequence, Tuple, Union)

# policy_fn(obs [N, D] float32, weights) -> (actions, logps)
PolicyFn = Callable[[np.ndarray, "Weights"], Tuple[ArrayLike, ArrayLike]]

from . import _lib
from ._lib import VolleyError
from .action import ActionSpace, CAction, DISCRETE
from .env_loop import _EnvList, _VectorEnv, is_vector
from ._types import (ENCODING_NAMES, ENV_ABI_VERSION, F32, FIELDS_MAX, NDIM_MAX, U1, U2, U8,
                     ActorParams, EnvTable)

__all__ = ["Actor", "Spec", "Screen", "Weights", "run_actor", "spec_from_spaces",
           "ActorInterrupted", "SpecRefused", "KeyRefused", "ParamsRefused", "ValueRefused",
           "LAYOUTS"]

OK, EINVAL, EFAIL, EREFUSED, EINTR = 0, -1, -2, -3, -4


class ActorInterrupted(VolleyError):
    """The actor was interrupted (a signal) while it could not finish a call."""


class SpecRefused(VolleyError):
    """The broker refused this actor's spec (another spec serves the policy)."""


class KeyRefused(VolleyError):
    """The broker refused this actor's CURVE key: a certificate it does not
    allow, or a broker_key that is not the broker's."""


class ParamsRefused(VolleyError, ValueError):
    """libvolley refused to open the actor with its parameters: reason says
    what was wrong and what it takes; param and value name the parameter
    when it is known to be the one ("model" and its spec), else ""."""

    def __init__(self, reason: str, param: str = "", value: str = "") -> None:
        self.reason, self.param, self.value = reason, param, value
        super().__init__(f"volley.Actor: {f'{param} {value!r}: ' if param else ''}{reason}")


class ValueRefused(VolleyError, ValueError):
    """libvolley refused a value act or observe was given (an observation
    outside its field's range or encoding, NaN, a reward that is not
    finite); the message names the value and what it must be."""


OBS_CHECKS = ("error", "warn", "off")  # include/volley/actor.h: vl_actor_set_obs_check's 0, 1, 2


_P = c_void_p
_WEIGHTS_NDIM_MAX = 4  # include/volley/actor.h: VL_ACTOR_WEIGHTS_NDIM_MAX
_lib.bind({
    "vl_actor_params_default": (ActorParams, []),
    "vl_actor_open": (_P, [POINTER(ActorParams), c_char_p, c_size_t]),
    "vl_actor_close": (None, [POINTER(_P)]),
    "vl_actor_set_obs_check": (c_int, [_P, c_int, _P, _P, c_char_p, c_size_t]),
    "vl_actor_obs_dim": (c_uint32, [_P]),
    "vl_actor_sync": (c_int, [_P, c_char_p, c_size_t]),
    "vl_actor_act": (c_int, [_P, _P, c_size_t, _P, _P, c_char_p, c_size_t]),
    "vl_actor_act_external": (c_int, [_P, _P, c_size_t, _P, _P, c_char_p, c_size_t]),
    "vl_actor_observe": (c_int, [_P, _P, _P, _P, _P, _P, c_size_t, c_char_p, c_size_t]),
    "vl_actor_weights_version": (c_uint64, [_P]),
    "vl_actor_weights_count": (c_uint32, [_P]),
    "vl_actor_weights_tensor": (c_int, [_P, c_uint32, POINTER(c_char_p), POINTER(c_uint32),
                                        c_uint32 * 2, POINTER(POINTER(c_float))]),
    "vl_actor_weights_shape": (c_int, [_P, c_uint32, c_uint32 * _WEIGHTS_NDIM_MAX]),
    "vl_actor_model": (c_char_p, [_P]),
    "vl_actor_steps": (c_uint64, [_P]),
    "vl_actor_segments_sent": (c_uint64, [_P]),
})


# ---- spec ----------------------------------------------------------------

LAYOUTS = ("HWC", "CHW", "HW")  # how a uint8 screen's axes come from the env
_CHANNELS_MAX = 4  # an end of a 3-D screen this small holds its channels
_SIDE_MIN = 7  # a 2-D uint8 field is a screen from this side up: volley's smallest cnn frame


class Screen(NamedTuple):
    """How a uint8 image field is read: field (its index in the Spec), the
    env's shape, its layout (HWC, CHW or HW), how that was decided
    ("declared", "detected" or "ambiguous": CHW, as neither end or both
    ends could hold the channels), and the Box's largest declared value."""
    field: int
    env_shape: Tuple[int, ...]
    layout: str
    how: str
    high: int

    def line(self, spec: "Spec") -> str:
        """One line saying how the field is read and sent."""
        name, enc, shape, _, _ = spec.fields[self.field]
        c, h, w = shape
        what = f"observations{f' {name!r}' if name else ''} uint8 {self.env_shape}"
        how = " (declared)" if self.how == "declared" else ""
        text = (f"{what} read as {self.layout}{how}: {c} channel{'s' if c != 1 else ''} of "
                f"{h}x{w}, sent as {ENCODING_NAMES[enc]} (Box high {self.high})")
        if self.how == "ambiguous":
            text += ("; it could be HWC too: if its channels come last, declare "
                     "layout='HWC' (--obs-layout HWC)")
        return text


def _screen_layout(shape: Tuple[int, ...], declared: Optional[str], where: str
                   ) -> Tuple[str, str]:
    """(layout, how) of a uint8 field of shape; ("", "") when it is no screen."""
    if declared:
        if len(shape) != len(declared):
            raise ValueError(f"{where}: layout {declared} takes {len(declared)} dimensions, "
                             f"the space has {len(shape)} {shape}")
        return declared, "declared"
    if len(shape) == 2:
        return ("HW", "detected") if min(shape) >= _SIDE_MIN else ("", "")
    if len(shape) != 3:
        return "", ""
    first, last = shape[0] <= _CHANNELS_MAX, shape[2] <= _CHANNELS_MAX
    if first != last:
        return ("CHW" if first else "HWC"), "detected"
    return "CHW", "ambiguous"


def _channels_first(shape: Tuple[int, ...], layout: str) -> Tuple[int, ...]:
    """A screen's shape as volley takes it, (C, H, W)."""
    if layout == "HW":
        return (1,) + shape
    return (shape[2], shape[0], shape[1]) if layout == "HWC" else shape


class Spec:
    """What an actor's observations and actions look like: named fields
    (encoding F32/U8/U2/U1, shape, F32 range low..high) in order, and the
    action space: `action` (an ActionSpace, or anything ActionSpace.of
    takes), or num_actions discrete actions. obs_dim is the floats per row. A field's
    low/high are numbers (low == high: no range) or arrays of its shape, one
    range per element (an infinite bound: none on that side); each element
    is checked against its own range. low/high [obs_dim] (float32) hold every
    value's range; a field keeps its widest finite range as its summary."""

    def __init__(self, fields: Iterable[Tuple[Any, Any, Any, Any, Any]], num_actions: Any = None,
                 name: str = "python", action_start: int = 0, action: Any = None,
                 screens: Sequence[Screen] = ()) -> None:
        # (name, encoding, shape, widest finite low, high) of each field, in order
        self.fields: List[Tuple[str, int, Tuple[int, ...], float, float]] = []
        lows: List[np.ndarray] = []
        highs: List[np.ndarray] = []
        for n, e, s, lo, hi in fields:
            shape = tuple(int(d) for d in s)
            lo_a, hi_a, env_lo, env_hi = _bounds(int(e), shape, lo, hi, str(n))
            self.fields.append((str(n), int(e), shape, env_lo, env_hi))
            lows.append(lo_a)
            highs.append(hi_a)
        if (action is None) == (num_actions is None):
            raise ValueError("spec: give the action space (action=) or num_actions, one of them")
        self.action = ActionSpace.of(action) if action is not None else \
            ActionSpace.discrete(int(num_actions), int(action_start))
        self.name = name
        if not 1 <= len(self.fields) <= FIELDS_MAX:
            raise ValueError(f"spec: {len(self.fields)} observation fields, volley takes "
                             f"1..{FIELDS_MAX}")
        self.sizes = [int(np.prod(s)) for _, _, s, _, _ in self.fields]
        self.obs_dim = sum(self.sizes)
        self.low = np.ascontiguousarray(np.concatenate(lows), dtype=np.float32)
        self.high = np.ascontiguousarray(np.concatenate(highs), dtype=np.float32)
        self.keyed = len(self.fields) > 1 or self.fields[0][0] != ""
        # uint8 image fields (spec_from_spaces'); an HWC one is transposed by flatten
        self.screens = list(screens)
        self._hwc = {sc.field: sc.env_shape for sc in self.screens if sc.layout == "HWC"}

    @property
    def num_actions(self) -> int:
        """The policy head's outputs: the choices of a discrete space, the sum
        of a multi-discrete one's, a box's dimensions."""
        return self.action.outputs

    @property
    def action_start(self) -> int:
        """A Discrete space's first choice (Gymnasium's start); 0 otherwise."""
        return int(self.action.start[0]) if self.action.kind == DISCRETE else 0

    def __repr__(self) -> str:
        f = ", ".join(f"{n or '_'}:{ENCODING_NAMES[e]}{list(s)}" for n, e, s, _, _ in self.fields)
        return f"Spec({f}; actions {self.action})"

    def _table(self) -> EnvTable:
        t = EnvTable()
        t.abi_version = ENV_ABI_VERSION
        self._name = self.name.encode()
        t.name = self._name
        t.n_fields = len(self.fields)
        for i, (_, enc, shape, lo, hi) in enumerate(self.fields):
            f = t.fields[i]
            f.encoding, f.ndim = enc, len(shape)
            for d, n in enumerate(shape):
                f.shape[d] = n
            f.low, f.high = (lo, hi) if enc == F32 else (0.0, 0.0)
        t.action = self.action.to_c()
        return t

    def flatten(self, obs: Any) -> np.ndarray:
        """One observation (an array, or a dict of the fields) as a float32 row [D]."""
        return self.flatten_batch(obs, batched=False)[0]

    def flatten_batch(self, obs: Any, batched: bool = True) -> np.ndarray:
        """A batch of observations ([N, ...] arrays, a dict of them, or a
        [N, D] array) as float32 [N, D]. An HWC screen given in the env's
        shape ([N, H, W, C]) is sent channels first; given as rows, it is
        taken as sent."""
        if not self.keyed or not isinstance(obs, dict):
            if 0 in self._hwc and len(self.fields) == 1:
                return self._hwc_rows(0, obs)
            a = np.asarray(obs, dtype=np.float32)
            return a.reshape(-1 if batched else 1, self.obs_dim) if a.size % self.obs_dim == 0 \
                else _raise(f"obs: {a.size} values, not a multiple of the spec's {self.obs_dim}")
        parts: List[np.ndarray] = []
        for k, ((name, _, shape, _, _), size) in enumerate(zip(self.fields, self.sizes)):
            if name not in obs:
                raise ValueError(f"obs: no field '{name}' (the spec has "
                                 f"{[f[0] for f in self.fields]})")
            if k in self._hwc:
                parts.append(self._hwc_rows(k, obs[name]))
                continue
            a = np.asarray(obs[name], dtype=np.float32)
            parts.append(a.reshape(-1 if batched else 1, size))
        return np.concatenate(parts, axis=1)

    def _hwc_rows(self, k: int, given: Any) -> np.ndarray:
        """Field k's observations as float32 rows [n, C*H*W], channels first:
        transposed from [..., H, W, C] (one pass, converting as it copies), or
        rows already sent."""
        a = np.asarray(given)
        env, size = self._hwc[k], self.sizes[k]
        if a.size % size:
            raise ValueError(f"obs: {a.size} values, not a multiple of the field's {size}")
        n = a.size // size
        if a.shape[-3:] != env:
            return np.asarray(a, np.float32).reshape(n, size)
        out = np.empty((n,) + self.fields[k][2], np.float32)
        np.copyto(out, np.moveaxis(a.reshape((n,) + env), 3, 1), casting="unsafe")
        return out.reshape(n, size)


def _raise(msg: str) -> NoReturn:
    raise ValueError(msg)


def _bounds(enc: int, shape: Tuple[int, ...], lo: Any, hi: Any, name: str
            ) -> Tuple[np.ndarray, np.ndarray, float, float]:
    """A field's declared range per element: (low [size], high [size]) as
    float32 (-inf/+inf: no bound), and the widest finite range (lo, hi) for
    the field's summary ((0, 0): none). Integer encodings have their own rule."""
    size = int(np.prod(shape))
    f32max = float(np.finfo(np.float32).max)
    none = (np.full(size, -np.inf, np.float32), np.full(size, np.inf, np.float32), 0.0, 0.0)
    if enc != F32:
        return none
    lo64, hi64 = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if lo64.ndim == 0 and hi64.ndim == 0:
        if not (np.isfinite(lo64) and np.isfinite(hi64) and lo64 < hi64):
            return none
    try:
        low = np.broadcast_to(lo64, shape).reshape(size)
        high = np.broadcast_to(hi64, shape).reshape(size)
    except ValueError:
        raise ValueError(f"spec field {name!r}: bounds of shape {np.shape(lo64)} / "
                         f"{np.shape(hi64)}, expected a number or the field's shape "
                         f"{shape}") from None
    if np.isnan(low).any() or np.isnan(high).any() or (low > high).any():
        raise ValueError(f"spec field {name!r}: bounds must be numbers with low <= high")
    # float32 bounds, widened by an ulp where rounding moved them inward: a value
    # at the edge stays inside; beyond float32's range, no bound.
    lo32 = np.where(low <= -f32max, -np.inf, low).astype(np.float32)
    hi32 = np.where(high >= f32max, np.inf, high).astype(np.float32)
    lo32 = np.where(lo32 > low, np.nextafter(lo32, np.float32(-np.inf)), lo32).astype(np.float32)
    hi32 = np.where(hi32 < high, np.nextafter(hi32, np.float32(np.inf)), hi32).astype(np.float32)
    finite = np.isfinite(lo32).all() and np.isfinite(hi32).all() and lo32.min() < hi32.max()
    summary = (float(lo32.min()), float(hi32.max())) if finite else (0.0, 0.0)
    return lo32, hi32, summary[0], summary[1]


def _kind(space: Any) -> str:
    return type(space).__name__


_Field = Tuple[str, int, Tuple[int, ...], Any, Any]  # (name, encoding, shape, low, high)


def _field_of(name: str, space: Any, layout: Optional[str] = None
              ) -> Tuple[_Field, Optional[Tuple[Tuple[int, ...], str, str, int]]]:
    """One space as a field (name, encoding, shape, low, high), and, for a
    uint8 screen, (env shape, layout, how, Box high)."""
    kind = _kind(space)
    where = f"observation space{f' field {name!r}' if name else ''} ({kind})"
    if kind == "MultiBinary":
        n = space.n
        shape = tuple(n) if isinstance(n, (tuple, list, np.ndarray)) else (int(n),)
        return (name, U1, shape, 0.0, 0.0), None
    if kind != "Box" and not (hasattr(space, "low") and hasattr(space, "dtype")):
        raise ValueError(f"{where}: volley takes Box, MultiBinary or a Dict of them")
    shape = tuple(space.shape) or (1,)
    if len(shape) > NDIM_MAX:
        raise ValueError(f"{where}: {len(shape)} dimensions, volley takes 1..{NDIM_MAX}")
    dt = np.dtype(space.dtype)
    if dt == np.uint8:
        # four values (0..3) travel four to a byte, as a C env's U2 field does
        low, high = np.asarray(space.low), np.asarray(space.high)
        enc = U2 if low.min() >= 0 and high.max() <= 3 else U8
        lay, how = _screen_layout(shape, layout, where)
        screen = (shape, lay, how, int(high.max())) if lay else None
        return (name, enc, _channels_first(shape, lay) if lay else shape, 0.0, 0.0), screen
    if dt.kind != "f":
        raise ValueError(f"{where}: dtype {dt}, volley takes float32 or uint8 Boxes")
    if layout:
        raise ValueError(f"{where}: layout {layout} is for uint8 screens, this Box is {dt}")
    # Each element keeps its own bounds (Spec checks every value against its own).
    low = np.broadcast_to(np.asarray(space.low, dtype=np.float64), shape)
    high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), shape)
    return (name, F32, shape, low, high), None


def _layouts(layout: Any, spaces: List[Tuple[str, Any]]) -> Dict[str, Optional[str]]:
    """{field name: declared layout or None} from layout: a dict by field
    name, or one for every uint8 Box of its dimensions (a str)."""
    names = [n for n, _ in spaces]
    if not isinstance(layout, dict):
        layout = {n: layout for n, sp in spaces if layout is not None and
                  _kind(sp) != "MultiBinary" and hasattr(sp, "dtype") and
                  np.dtype(sp.dtype) == np.uint8 and len(tuple(sp.shape)) == len(str(layout))}
    for n, lay in layout.items():
        if n not in names:
            raise ValueError(f"layout: no observation field {n!r} (the space has {names})")
        if lay is not None and lay not in LAYOUTS:
            raise ValueError(f"layout: {lay!r}, expected one of {', '.join(LAYOUTS)}")
    return {n: layout.get(n) for n in names}


def spec_from_spaces(observation_space: Any, action_space: Any, name: str = "python",
                     layout: Any = None) -> Spec:
    """A Spec from Gymnasium-style spaces (read by attribute, never imported):
    Box float32 -> F32 (with its range when finite), Box uint8 -> U8 (U2 when
    its high is 3 or less), MultiBinary -> U1, a Dict of those -> one field
    each in the Dict's order; Discrete, MultiDiscrete or a one-dimensional
    Box of finite bounds as the actions. A uint8 Box of two dimensions (each
    7 or more) or three is a screen, sent as (C, H, W): layout "HWC", "CHW"
    or "HW" declares how its axes come (a dict: per field name), else it is
    detected (spec.screens says how). Anything else raises ValueError naming
    the space."""
    if _kind(observation_space) == "Dict" or (hasattr(observation_space, "spaces") and
                                              isinstance(observation_space.spaces, dict)):
        spaces = [(str(k), s) for k, s in observation_space.spaces.items()]
    else:
        spaces = [("", observation_space)]
    if layout is not None and not isinstance(layout, dict) and layout not in LAYOUTS:
        raise ValueError(f"layout: {layout!r}, expected one of {', '.join(LAYOUTS)}")
    declared = _layouts(layout, spaces)
    fields, screens = [], []
    for k, (n, space) in enumerate(spaces):
        field, screen = _field_of(n, space, declared[n])
        fields.append(field)
        if screen:
            screens.append(Screen(k, *screen))
    if layout is not None and not screens:
        raise ValueError(f"layout {layout!r}: the observation space has no uint8 Box of as "
                         f"many dimensions")
    return Spec(fields, name=name, action=ActionSpace.from_gym(action_space), screens=screens)


def _as_spec(spec: Any, observation_space: Any = None, action_space: Any = None,
             layout: Any = None) -> Spec:
    if isinstance(spec, Spec):
        if layout is not None:
            raise ValueError("layout: give it to spec_from_spaces, this Spec is made")
        return spec
    if spec is None and observation_space is not None:
        return spec_from_spaces(observation_space, action_space, layout=layout)
    if isinstance(spec, tuple) and len(spec) == 2:
        return spec_from_spaces(*spec, layout=layout)
    obs_space = getattr(spec, "single_observation_space", None) or \
        getattr(spec, "observation_space", None)
    act_space = getattr(spec, "single_action_space", None) or getattr(spec, "action_space", None)
    if obs_space is None or act_space is None:
        raise TypeError("spec: give a volley.Spec, (observation_space, action_space), or an env "
                        "with observation_space and action_space")
    return spec_from_spaces(obs_space, act_space, name=env_name(spec), layout=layout)


def env_name(env: Any) -> str:
    """env's name for a spec: its Gymnasium spec id, else its class's name, as
    the wire takes it (up to 63 of letters, digits and -_.:, others as _)."""
    spec = getattr(env, "spec", None)
    name = getattr(spec, "id", None) or type(env).__name__
    name = "".join(c if c.isalnum() or c in "-_.:" else "_" for c in str(name))[:63]
    return name or "python"


# ---- the actor -------------------------------------------------------------


class Weights(Dict[str, np.ndarray]):
    """The newest weights: {tensor name: float32 array}, and .version."""
    version = 0


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class _Wake:
    """A pipe Python's signal handling writes to (signal.set_wakeup_fd), so that
    a Ctrl-C ends a wait inside C; only from the main thread and when no one
    else holds the wakeup fd."""

    def __init__(self) -> None:
        self.r = self.w = -1
        self.old: Optional[int] = None
        if threading.current_thread() is not threading.main_thread():
            return
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        try:
            old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(r)
            os.close(w)
            return
        if old != -1:  # someone else's (asyncio): give it back, wake by timeouts only
            signal.set_wakeup_fd(old)
            os.close(r)
            os.close(w)
            return
        self.r, self.w, self.old = r, w, old

    def drain(self) -> bool:
        """True if a signal had written to the pipe."""
        got = False
        while self.r >= 0:
            try:
                if not os.read(self.r, 512):
                    break
                got = True
            except BlockingIOError:
                break
        return got

    def close(self) -> None:
        if self.r >= 0:
            try:
                signal.set_wakeup_fd(-1)
            except (ValueError, OSError):
                pass
            os.close(self.r)
            os.close(self.w)
            self.r = self.w = -1


def _say(text: str) -> None:
    """One line to stderr, as the actor's other notes."""
    print(f"volley actor: {text}", file=sys.stderr, flush=True)


def _images(spec: Spec) -> List[Tuple[str, Tuple[int, ...], Tuple[int, ...]]]:
    """(name, env shape, shape sent) of the spec's uint8 fields of two
    dimensions or more."""
    screens = {sc.field: sc.env_shape for sc in spec.screens}
    return [(name, screens.get(k, shape), shape)
            for k, (name, enc, shape, _, _) in enumerate(spec.fields)
            if k in screens or (enc in (U8, U2) and len(shape) >= 2)]


_ADVICE_STEPS = 16  # acts whose u8 values are looked at before saying they could be u2


class _ValueWatch:
    """Notes which values a spec's u8 fields take over the first
    _ADVICE_STEPS acts, then says once of each that took only two to four
    how to send it as u2: four values a byte instead of one."""

    def __init__(self, spec: Spec) -> None:
        ends = np.cumsum([0] + spec.sizes)
        self.spec = spec
        self.fields = [(k, int(ends[k]), int(ends[k + 1])) for k, f in enumerate(spec.fields)
                       if f[1] == U8]
        self.seen = {k: np.zeros(256, bool) for k, _, _ in self.fields}
        self.left = _ADVICE_STEPS if self.fields else 0

    def see(self, obs: np.ndarray) -> None:
        """Takes one act's observations [N, D] (checked by C: u8 values are 0..255)."""
        if not self.left:
            return
        for k, a, b in self.fields:
            self.seen[k] |= np.bincount(obs[:, a:b].astype(np.uint8).ravel(), minlength=256) > 0
        self.left -= 1
        if not self.left:
            for k, _, _ in self.fields:
                self._advise(k)

    def _advise(self, k: int) -> None:
        values = [int(v) for v in np.flatnonzero(self.seen[k])]
        if not 2 <= len(values) <= 4:
            return
        step = 0
        for v in values:
            step = gcd(step, v)
        if max(values) <= 3:
            how = "declare the Box's high=3 (shades 0..3)"
        elif max(values) // step <= 3:
            how = f"map them to 0..3 (obs // {step}) and declare the Box's high=3"
        else:
            how = "map them to 0..3 and declare the Box's high=3"
        name = self.spec.fields[k][0]
        _say(f"observations{f' {name!r}' if name else ''} took only the values "
             f"{', '.join(map(str, values))} in the first {_ADVICE_STEPS} steps, sent as u8 (a "
             f"byte each): {how}; they then travel as u2, four to a byte")


class Actor:
    """An actor whose env loop is the caller's (include/volley/actor.h).

    broker: HOST[:PORT]; policy: the policy id, or a callable (external forward
    pass, as policy_fn); spec: a Spec, (observation_space, action_space), or an
    env (or vector env) to read them from; num_envs N; horizon T, hidden and
    model (a model spec such as "cnn" or "linear(128) relu"; None: the default
    for the observations), as the learner's; actor_id (default: the pid); seed; max_ahead / wait_ms (pacing);
    obs_check: an observation value outside its element's declared range
    raises ValueError naming the element, its value and the range ("error"),
    is sent after one warning ("warn"), or is not checked ("off"); NaN and
    infinities are refused in every mode.
    policy_fn(obs [N, D] float32, weights: Weights) -> (actions, logps [N]):
    actions [N] (a discrete space) or [N, dims], in the spec's action space
    (discrete choices from 0; a box's samples before clipping), with their
    joint log-probs (densities for a box).
    cert, broker_key: CURVE certificate files from `volley keygen` (ours,
    its secret beside it as cert + "_secret", and the broker's public one),
    as `volley actor --cert --broker-key`; a broker that refuses the key
    makes the first act (or sync) raise KeyRefused. layout: how uint8
    screens' axes come ("HWC", "CHW", "HW"; see spec_from_spaces) when the
    spec is read from spaces.
    Said once on stderr: how each screen is read and sent; that a u8 field
    whose values fit in two bits could travel as u2; that a network without
    conv layers flattens a screen.
    """

    def __init__(self, broker: str = "127.0.0.1", policy: Union[str, PolicyFn] = "default",
                 spec: Any = None, num_envs: int = 8, horizon: int = 64, hidden: int = 64,
                 actor_id: Optional[int] = None, seed: int = 1,
                 policy_fn: Optional[PolicyFn] = None, max_ahead: int = 1, wait_ms: int = 500,
                 observation_space: Any = None, action_space: Any = None,
                 obs_check: str = "error", model: Optional[str] = None,
                 cert: Optional[str] = None, broker_key: Optional[str] = None,
                 layout: Any = None) -> None:
        if callable(policy):
            policy_fn, policy = policy, "default"
        self.spec = _as_spec(spec, observation_space, action_space, layout)
        self.policy_fn = policy_fn
        self.num_envs = N = int(num_envs)
        self.policy = str(policy)
        D = self.spec.obs_dim
        self._table = self.spec._table()
        self._wake = _Wake()
        p = _lib.lib.vl_actor_params_default()
        self._broker = str(broker).encode()
        self._policy = self.policy.encode()
        p.broker, p.policy, p.env = self._broker, self._policy, ctypes.pointer(self._table)
        p.n_envs, p.horizon, p.hidden = N, int(horizon), int(hidden)
        self._model = str(model).encode() if model else None
        p.model = self._model
        p.actor_id = int(actor_id if actor_id is not None else os.getpid()) & 0x7fffffff
        p.seed, p.max_ahead, p.wait_ms = int(seed), int(max_ahead), int(wait_ms)
        p.external, p.wake_fd = int(policy_fn is not None), self._wake.r
        self._cert = os.fsencode(cert) if cert is not None else None
        self._broker_key = os.fsencode(broker_key) if broker_key is not None else None
        p.cert, p.broker_key = self._cert, self._broker_key
        if obs_check not in OBS_CHECKS:
            self._wake.close()
            raise ValueError(f"obs_check: {obs_check!r}, expected one of {', '.join(OBS_CHECKS)}")
        self.actor_id = p.actor_id
        for sc in self.spec.screens:
            _say(sc.line(self.spec))
        self._why = _lib.why_buffer()
        self._h = c_void_p(_lib.lib.vl_actor_open(ctypes.byref(p), self._why, len(self._why)))
        if not self._h.value:
            self._wake.close()
            why = self._why.value.decode(errors="replace")
            raise ParamsRefused(why, *(("model", model) if model and
                                       not self._model_builds(model) else ()))
        # Each value's own declared range (copied by C), and what breaking it does.
        if _lib.lib.vl_actor_set_obs_check(self._h, OBS_CHECKS.index(obs_check),
                                           _ptr(self.spec.low), _ptr(self.spec.high), self._why,
                                           len(self._why)) != OK:
            why = self._why.value.decode(errors="replace")
            self.close()
            raise ValueError(f"volley.Actor: {why}")
        self._obs = np.zeros((N, D), np.float32)
        self._next = np.zeros((N, D), np.float32)
        self._final = np.zeros((N, D), np.float32)
        self._actions = np.zeros((N, self.spec.action.dims), np.float32)
        self._logps = np.zeros(N, np.float32)
        self._rew = np.zeros(N, np.float32)
        self._term = np.zeros(N, np.uint8)
        self._trunc = np.zeros(N, np.uint8)
        self._p = {k: _ptr(getattr(self, k)) for k in
                   ("_obs", "_next", "_final", "_actions", "_logps", "_rew", "_term", "_trunc")}
        self._nval = N * D
        self._weights = Weights()
        self._values = _ValueWatch(self.spec)
        self._model_noted = policy_fn is not None  # an external network is the caller's
        self.last_logps = self._logps
        self.raw_actions = self._actions.copy()

    def _model_builds(self, model: str) -> bool:
        """Whether volley's network builds from the model spec for this
        actor's spec (vl_model_new); a torch:MOD:FN module's text is the
        caller's to check, taken as building."""
        from .model import Model
        if model.startswith("torch:"):
            return True
        try:
            Model(model, self.spec)
        except (VolleyError, ValueError, TypeError):
            return False
        return True

    # -- lifecycle

    def close(self) -> None:
        """Stops the actor: queued segments get a second to leave."""
        if getattr(self, "_h", None) and self._h.value:
            _lib.lib.vl_actor_close(ctypes.byref(self._h))
        if getattr(self, "_wake", None):
            self._wake.close()

    def __enter__(self) -> Actor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- calls

    def _check(self, rc: int, retry_ok: bool) -> bool:
        """Returns True to retry (a signal woke a wait and its handler did not
        raise), raises on an error, False when done."""
        if rc == OK:
            return False
        why = self._why.value.decode(errors="replace")
        if rc == EINTR:
            if retry_ok and self._wake.drain():
                return True  # Python runs the signal's handler before the retry
            raise ActorInterrupted(why)
        if rc == EINVAL:
            raise ValueRefused(self._name_field(why))
        if rc == EREFUSED:
            raise KeyRefused(why) if why.startswith("CURVE: ") else SpecRefused(why)
        raise VolleyError(why)

    def _name_field(self, why: str) -> str:
        """Adds the field's name to C's "field K element" (a Dict space's key)."""
        def named(m: Match[str]) -> str:
            k = int(m.group(1))
            name = self.spec.fields[k][0] if k < len(self.spec.fields) else ""
            return f"field {k} ({name!r}) element" if name else m.group(0)
        return re.sub(r"field (\d+) element", named, why)

    def _handle(self) -> c_void_p:
        if not self._h.value:
            raise VolleyError("the actor is closed")
        return self._h

    def _load(self, dst: np.ndarray, name: str, given: Any) -> None:
        a = given  # HWC screens go channels first on the way in, once per call
        if (self.spec.keyed and isinstance(given, dict)) or \
                (self.spec._hwc and np.size(given) == dst.size):
            a = self.spec.flatten_batch(given)
        try:
            np.copyto(dst, np.reshape(a, dst.shape), casting="unsafe")
        except ValueError:
            shape = np.shape(a)
            raise ValueError(f"{name}: shape {shape}, expected ({self.num_envs}, "
                             f"{self.spec.obs_dim}) (num_envs x the spec's values)") from None

    def sync(self) -> int:
        """Waits for the first weights, takes newer ones, beats. Returns the version."""
        h = self._handle()
        while self._check(_lib.lib.vl_actor_sync(h, self._why, len(self._why)), True):
            pass
        return self.weights_version

    @property
    def weights_version(self) -> int:
        return int(_lib.lib.vl_actor_weights_version(self._handle()))

    def weights(self) -> "Weights":
        """The newest weights as a Weights dict of float32 arrays (external mode),
        each in the shape it was published with (ranks 1 to 4)."""
        h = self._handle()
        v = _lib.lib.vl_actor_weights_version(h)
        if self._weights.version == v and self._weights:
            return self._weights
        w = Weights()
        name, ndim = c_char_p(), c_uint32()
        shape, data = (c_uint32 * 2)(), POINTER(c_float)()
        dims = (c_uint32 * _WEIGHTS_NDIM_MAX)()
        for i in range(_lib.lib.vl_actor_weights_count(h)):
            if _lib.lib.vl_actor_weights_tensor(h, i, ctypes.byref(name), ctypes.byref(ndim),
                                                shape, ctypes.byref(data)) != 0:
                break
            rank = _lib.lib.vl_actor_weights_shape(h, i, dims)
            rows, cols = shape[0], shape[1]
            if rank != ndim.value or int(np.prod(dims[:rank])) != rows * cols:
                raise VolleyError(f"weights tensor {i}: rank {rank} {list(dims[:rank])}, "
                                  f"expected rank {ndim.value} of {rows} x {cols} floats")
            a = np.ctypeslib.as_array(data, shape=(rows * cols,)).copy()
            w[(name.value or b"").decode(errors="replace")] = a.reshape(tuple(dims[:rank]))
        w.version = v
        self._weights = w
        return w

    def act(self, obs: ArrayLike, return_logps: bool = False
            ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """Actions for obs [N, D] (or [N, *shape], or a dict of fields) as the
        env takes them: int32 [N] for a discrete space (plus its start),
        int64 [N, dims] for a multi-discrete one, float32 [N, dims] clipped to
        a box's bounds. volley's policy in C, or policy_fn. return_logps:
        (actions, logps). raw_actions holds the last actions as recorded
        (float32 [N, dims]: a box's samples before clipping)."""
        h = self._handle()
        self._load(self._obs, "obs", obs)
        if self.policy_fn is None:
            fn, out = _lib.lib.vl_actor_act, (self._p["_actions"], self._p["_logps"])
        else:
            self._external_forward()
            fn, out = _lib.lib.vl_actor_act_external, (self._p["_actions"], self._p["_logps"])
        while self._check(fn(h, self._p["_obs"], self._nval, *out, self._why, len(self._why)),
                          True):
            pass
        self._values.see(self._obs)
        if not self._model_noted:
            self._note_model()
        space = self.spec.action
        self.raw_actions = self._actions.copy()
        actions = space.to_env(self.raw_actions)
        if space.kind == DISCRETE:
            actions = actions.astype(np.int32)
        return (actions, self._logps.copy()) if return_logps else actions

    def _note_model(self) -> None:
        """Says once, after the first act, that the network the actor acts
        with (given, or its learner's) flattens its uint8 images."""
        self._model_noted = True
        text = (_lib.lib.vl_actor_model(self._handle()) or b"").decode(errors="replace")
        images = _images(self.spec)
        if not images or "conv" in text:
            return
        whose = "the model given" if self._model else "the policy's network (its learner's)"
        what = ", ".join(f"{n!r} " * bool(n) + f"{shape}" for n, shape, _ in images)
        small = [sent for _, _, sent in images if min(sent[-2:]) < _SIDE_MIN]
        fix = (f"sides under {_SIDE_MIN} are too small for volley's cnn" if small else
               "give model='cnn' (--model cnn) to the actor and its learner to read it as an "
               "image")
        inputs = sum(int(np.prod(sent)) for _, _, sent in images)
        _say(f"{whose} '{text}' has no conv layers: it takes the uint8 observations {what} as "
             f"{inputs} flat inputs; {fix}")

    def _external_forward(self) -> None:
        if self.policy_fn is None:
            raise ValueError("the actor has no policy_fn")  # act calls this only with one
        self.sync()
        actions, logps = self.policy_fn(self._obs.copy(), self.weights())
        N, space = self.num_envs, self.spec.action
        want = f"[{N}]" if space.kind == DISCRETE else f"[{N}, {space.dims}]"
        try:
            lp = np.asarray(logps, dtype=np.float64).reshape(N)
            a = np.asarray(actions, dtype=np.float64).reshape(N, space.dims)
        except (ValueError, TypeError) as e:
            raise ValueError(f"policy_fn must return (actions {want}, logps [{N}]): "
                             f"{e}") from None
        self._check_external(a, lp)
        np.copyto(self._actions, a, casting="unsafe")
        np.copyto(self._logps, lp, casting="unsafe")

    def _check_external(self, a: np.ndarray, lp: np.ndarray) -> None:
        """Refuses actions outside the space (or NaN) and non-finite log-probs,
        naming the env, the value and what it must be."""
        space, env = self.spec.action, self.spec.name
        bad = space.find_bad(a)
        if bad is not None:
            i, d, v = bad
            where = f"actions[{i}]" if space.dims == 1 else f"actions[{i}][{d}]"
            must = "finite" if space.is_box else \
                f"a whole number 0..{int(space.n[d]) - 1}" if not np.isfinite(v) or v != round(v) \
                else f"0..{int(space.n[d]) - 1}"
            raise ValueError(f"env '{env}': policy_fn's {where} = {v:g}, must be {must} "
                             f"(action space {space})")
        if not np.all(np.isfinite(lp)):
            i = int(np.flatnonzero(~np.isfinite(lp))[0])
            raise ValueError(f"env '{env}': policy_fn's logps[{i}] = {lp[i]:g}, must be finite")

    def observe(self, rewards: ArrayLike, terminated: ArrayLike, truncated: ArrayLike,
                next_obs: ArrayLike, final_obs: Optional[ArrayLike] = None) -> None:
        """Records the outcome of the last act. final_obs [N, D]: the last
        observation of episodes that ended (read where truncated and not
        terminated; may be None when none is truncated)."""
        h = self._handle()
        N = self.num_envs
        try:
            np.copyto(self._rew, np.reshape(rewards, N), casting="unsafe")
        except ValueError:
            raise ValueError(f"rewards: shape {np.shape(rewards)}, expected ({N},)") from None
        for name, dst, given in (("terminated", self._term, terminated),
                                 ("truncated", self._trunc, truncated)):
            a = np.asarray(given)
            if a.shape != (N,):
                raise ValueError(f"{name}: shape {a.shape}, expected ({N},)")
            if a.dtype != np.bool_ and not np.all((a == 0) | (a == 1)):
                bad = np.flatnonzero(~((a == 0) | (a == 1)))[0]
                raise ValueError(f"{name}[{bad}] = {a[bad].tolist()!r}, must be 0 or 1")
            np.copyto(dst, a, casting="unsafe")
        self._load(self._next, "next_obs", next_obs)
        fin = 0
        if final_obs is not None:
            self._load(self._final, "final_obs", final_obs)
            fin = self._p["_final"]
        p = self._p
        rc = _lib.lib.vl_actor_observe(h, p["_rew"], p["_term"], p["_trunc"], p["_next"], fin,
                                       self._nval, self._why, len(self._why))
        self._check(rc, False)

    @property
    def steps(self) -> int:
        return int(_lib.lib.vl_actor_steps(self._handle()))

    @property
    def segments_sent(self) -> int:
        return int(_lib.lib.vl_actor_segments_sent(self._handle()))


# ---- driving Gymnasium-style envs -------------------------------------------


def _seeds(seed: int, actor_id: int, n: int) -> List[int]:
    return [int(s) for s in np.random.SeedSequence([int(seed), int(actor_id)]).generate_state(n)]


def run_actor(envs: Any, broker: str = "127.0.0.1", policy: str = "default", horizon: int = 64,
              hidden: int = 64, actor_id: Optional[int] = None, seed: int = 1,
              policy_fn: Optional[PolicyFn] = None, max_steps: Optional[int] = None,
              max_ahead: int = 1, wait_ms: int = 500,
              on_step: Optional[Callable[..., Any]] = None, name: Optional[str] = None,
              obs_check: str = "error", model: Optional[str] = None,
              cert: Optional[str] = None, broker_key: Optional[str] = None,
              layout: Any = None) -> int:
    """Drives Gymnasium-style envs with a volley Actor until interrupted (or
    max_steps env steps). envs: a list of env factories (each called once;
    reset(seed=...) -> (obs, info), step(a) -> (obs, reward, terminated,
    truncated, info); reset when an episode ends), a list of envs, or one vector
    env. name: the env's name in the spec (default: the env's spec id or class
    name; the learner's run records it). Returns the env steps taken; raises
    what an env raises (segments already sent are complete). obs_check,
    model, cert, broker_key and layout: as Actor's."""
    if is_vector(envs):
        spec = _as_spec(envs, layout=layout)
        n = int(envs.num_envs)
    else:
        envs = [e() if isinstance(e, type) or (callable(e) and not hasattr(e, "step")) else e
                for e in envs]
        if not envs:
            raise ValueError("run_actor: no envs")
        spec = _as_spec(envs[0], layout=layout)
        n = len(envs)
    if name:
        spec.name = str(name)
    aid = actor_id if actor_id is not None else os.getpid()
    with Actor(broker=broker, policy=policy, spec=spec, num_envs=n, horizon=horizon,
               hidden=hidden, actor_id=aid, seed=seed, policy_fn=policy_fn,
               max_ahead=max_ahead, wait_ms=wait_ms, obs_check=obs_check,
               model=model, cert=cert, broker_key=broker_key) as actor:
        loop = _VectorEnv(envs, spec, seed) if is_vector(envs) else \
            _EnvList(envs, spec, _seeds(seed, aid, n))
        steps = 0
        try:
            while max_steps is None or steps < max_steps:
                actor.act(loop.obs)
                nxt, rew, term, trunc, final = loop.step(actor.raw_actions)
                actor.observe(rew, term, trunc, nxt, final_obs=final)
                steps += n
                if on_step:
                    on_step(actor, steps)
        finally:
            loop.close()
    return steps
