"""volley.Learner: a Python learner's transport, include/volley/learner.h.

The C learner's own receiving end (learner/vl_inlet.c) runs on a thread of
its own: hello and credit to the broker, the policy's spec declared or
fetched, every segment validated and decoded into a [capacity] buffer of
segments. take(n) hands the n oldest to Python as one Batch of NumPy arrays
per field, and publish() sends weights (e.g. a PyTorch state_dict) to the
policy's actors.

    with volley.Learner("127.0.0.1:7600", policy="default") as learner:
        batch = learner.take(16, timeout=5.0)     # None on timeout
        batch.obs        # float32 [n, T+1, D] (row T: the bootstrap observation)
        learner.publish(model.state_dict(), version=1)

A Batch's arrays are copies the caller owns: the segments sit in separate
slots of the C buffer, so each array is gathered by one C call (the GIL
released) into one contiguous NumPy array, and the slots go back to the
buffer before take returns. Nothing needs releasing.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np
from numpy.typing import NDArray
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from . import _lib
from ._lib import VolleyError
from .action import ActionSpace, CAction
from ._types import (ENCODING_NAMES, FIELDS_MAX, MODEL_MAX, NDIM_MAX, TENSORS_MAX,
                     TransportCounts, TransportSpec, TransportTensor)

__all__ = ["Learner", "Batch"]

_P = c_void_p
_lib.bind({
    "vl_transport_new": (_P, [c_char_p, c_char_p, POINTER(TransportSpec), c_uint32, c_int, c_char_p,
                              c_size_t]),
    "vl_transport_destroy": (None, [POINTER(_P)]),
    "vl_transport_spec": (None, [_P, POINTER(TransportSpec)]),
    "vl_transport_take": (c_int, [_P, c_uint32, c_int]),
    "vl_transport_array_bytes": (c_size_t, [_P, c_int]),
    "vl_transport_gather": (c_int, [_P, c_int, _P, c_size_t]),
    "vl_transport_release": (None, [_P]),
    "vl_transport_counts": (None, [_P, POINTER(TransportCounts)]),
    "vl_transport_refused": (c_uint64, [_P, c_int, POINTER(c_char_p)]),
    "vl_transport_reasons": (c_int, []),
    "vl_transport_publish": (c_int, [_P, c_uint64, POINTER(TransportTensor), c_uint32, c_int,
                                     c_char_p, c_size_t]),
    "vl_transport_publish_stats": (c_int, [_P, c_uint64, c_uint64, c_float, c_float, c_float]),
    "vl_transport_checkpoint": (c_int, [_P, c_char_p, c_char_p, c_char_p, c_char_p, c_size_t]),
})

# vl_transport_array_t: name -> (index, dtype, shape given n, T, D, row_bytes; None: by count)
_Shape = Optional[Callable[[int, int, int, int], Tuple[int, ...]]]
_ARRAYS: Dict[str, Tuple[int, Any, _Shape]] = {
    "obs": (0, np.float32, lambda n, T, D, R: (n, T + 1, D)),
    "obs_rows": (1, np.uint8, lambda n, T, D, R: (n, T + 1, R)),
    "actions": (2, np.float32, None),  # [n, T, dims]: shaped by the spec's action space
    "rewards": (3, np.float32, lambda n, T, D, R: (n, T)),
    "dones": (4, np.float32, lambda n, T, D, R: (n, T)),
    "truncated": (5, np.uint8, lambda n, T, D, R: (n, T)),
    "logp": (6, np.float32, lambda n, T, D, R: (n, T)),
    "final_obs": (7, np.float32, lambda n, T, D, R: (n, T, D)),
    "policy_version": (8, np.uint64, lambda n, T, D, R: (n,)),
    "actor_id": (9, np.uint32, lambda n, T, D, R: (n,)),
    "env_id": (10, np.uint32, lambda n, T, D, R: (n,)),
    "seq": (11, np.uint64, lambda n, T, D, R: (n,)),
    "n_episodes": (12, np.uint32, lambda n, T, D, R: (n,)),
    "episode_returns": (13, np.float32, None),
    "episode_lengths": (14, np.uint32, None),
}


class Batch:
    """n segments of T steps, one NumPy array per field (copies, yours):

    obs [n, T+1, D] float32 (unpack=True) or obs_rows [n, T+1, row_bytes]
    uint8 (unpack=False: f32 fields as their bytes, others one byte a value);
    actions [n, T, dims] float32 (the spec's action space: discrete choices
    as whole numbers, a box's samples as drawn, before clipping); rewards,
    dones, logp [n, T] float32 (dones[t] = 1 when the episode ended after
    action t, either way); truncated [n, T]
    uint8 (1 when that end was a time limit's); final_obs [n, T, D] float32
    (the final observation at each truncated step, 0 elsewhere: V(x_final));
    policy_version, seq [n] uint64; actor_id, env_id, n_episodes [n] uint32;
    episode_returns float32 and episode_lengths uint32 [sum of n_episodes]
    (the episodes that finished in these segments, segment by segment).
    Fields read as attributes or batch["name"]."""

    # The fields (set from the arrays given; obs or obs_rows, as take's unpack chose).
    obs: np.ndarray
    obs_rows: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    truncated: np.ndarray
    logp: np.ndarray
    final_obs: np.ndarray
    policy_version: np.ndarray
    actor_id: np.ndarray
    env_id: np.ndarray
    seq: np.ndarray
    n_episodes: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.__dict__.update(arrays)
        self._names = tuple(arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.__dict__[name]

    def keys(self) -> Tuple[str, ...]:
        return self._names

    def __len__(self) -> int:
        return len(self.actions)

    def select(self, keep: Any) -> Batch:
        """A Batch of the segments where keep (a bool array [n]) is True."""
        mask = np.asarray(keep, dtype=bool)
        out = {k: self.__dict__[k][mask] for k in self._names if not k.startswith("episode_")}
        ends = np.cumsum(self.n_episodes)
        owner = np.searchsorted(ends, np.arange(len(self.episode_returns)), side="right")
        for k in ("episode_returns", "episode_lengths"):
            out[k] = self.__dict__[k][mask[owner]]
        return Batch({k: out[k] for k in self._names})

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}{list(self.__dict__[k].shape)}" for k in self._names)
        return f"Batch({shapes})"


def _spec_in(spec: Any) -> TransportSpec:
    """A spec dict as vl_transport_spec_t: {"obs_dim": D} (one f32 field) or
    {"fields": [(shape, encoding), ...]}, plus the action space (action: an
    ActionSpace or what ActionSpace.of takes, or num_actions discrete
    choices), horizon, hidden and model (a model spec; "" or absent: the
    default for the observations)."""
    if not isinstance(spec, dict):
        raise TypeError(f"spec: expected a dict, got {type(spec).__name__}")
    fields = spec.get("fields")
    if fields is None:
        if "obs_dim" not in spec:
            raise ValueError("spec: give 'obs_dim' or 'fields'")
        fields = [((int(spec["obs_dim"]),), "f32")]
    if not 1 <= len(fields) <= FIELDS_MAX:
        raise ValueError(f"spec fields: expected 1 .. {FIELDS_MAX}, got {len(fields)}")
    s = TransportSpec()
    s.n_fields = len(fields)
    for i, (given, enc) in enumerate(fields):
        scalar = np.isscalar(given)  # a number (int() refuses the non-numbers among them)
        shape = (int(given),) if scalar else tuple(int(d) for d in given)
        if enc not in ENCODING_NAMES or not 1 <= len(shape) <= NDIM_MAX:
            raise ValueError(f"spec field {i}: expected (shape of 1 .. {NDIM_MAX} dims, one of "
                             f"{ENCODING_NAMES}), got ({shape}, {enc!r})")
        s.fields[i].encoding = ENCODING_NAMES.index(enc)
        s.fields[i].ndim = len(shape)
        for k, d in enumerate(shape):
            if not 0 < d < 2**32:
                raise ValueError(f"spec field {i}: dim {d} out of range")
            s.fields[i].shape[k] = d
    if "horizon" not in spec:
        raise ValueError("spec: 'horizon' missing")
    s.action = spec_action(spec).to_c()
    s.horizon = int(spec["horizon"])
    s.hidden = int(spec.get("hidden", 64))
    model = str(spec.get("model") or "").encode()
    if len(model) >= MODEL_MAX or not model.isascii():
        raise ValueError(f"spec: model: expected an ASCII model spec under {MODEL_MAX} bytes")
    s.model = model
    return s


def spec_action(spec: Dict[str, Any]) -> ActionSpace:
    """A spec dict's action space: its "action" (an ActionSpace, a dict, an
    int), else a discrete one of its "num_actions". ValueError when neither."""
    if spec.get("action") is not None:
        return ActionSpace.of(spec["action"])
    if "num_actions" not in spec:
        raise ValueError("spec: 'action' (the action space) or 'num_actions' missing")
    return ActionSpace.discrete(int(spec["num_actions"]))


def _spec_out(s: TransportSpec) -> Dict[str, Any]:
    fields = [(tuple(s.fields[i].shape[:s.fields[i].ndim]), ENCODING_NAMES[s.fields[i].encoding])
              for i in range(s.n_fields)]
    action = ActionSpace.from_c(s.action)
    return {"fields": fields, "obs_dim": s.obs_dim, "action": action,
            "num_actions": action.outputs,
            "horizon": s.horizon, "hidden": s.hidden, "row_bytes": s.row_bytes,
            "model": s.model.decode()}


def _as_array(name: str, value: Any) -> NDArray[np.float32]:
    """A tensor (torch or NumPy or nested lists) as a C-contiguous float32 array."""
    if hasattr(value, "detach"):  # a torch tensor, without importing torch
        value = value.detach().cpu().numpy()
    try:
        a = np.ascontiguousarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"publish: tensor {name}: expected an array of floats ({e})") from None
    if not 1 <= a.ndim <= NDIM_MAX:
        raise ValueError(f"publish: tensor {name}: rank {a.ndim} (shape {a.shape}); weights on "
                         f"the wire are rank 1 .. {NDIM_MAX}")
    if not all(0 < d < 2**32 for d in a.shape):
        raise ValueError(f"publish: tensor {name}: shape {a.shape}: expected every dim in "
                         "1 .. 2^32 - 1")
    return a


class Learner:
    """Receives one policy's segments from a broker and publishes its weights.

    broker "HOST[:PORT]"; policy the policy id; capacity the buffer's slots
    in segments (take at most capacity // 2 at a time: the broker sends no
    more than half the buffer ahead). spec None takes the policy's spec from
    the broker (waiting up to `timeout` seconds for an actor to declare it);
    a dict declares it ({"obs_dim": 4, "num_actions": 2, "horizon": 64,
    "hidden": 64}, or "fields": [((84, 84), "u2"), ((16,), "u1")] instead of
    obs_dim, "action": volley.ActionSpace.box([-1], [1]) instead of
    num_actions). self.spec holds "action" (an ActionSpace) and
    "num_actions" (the policy head's outputs). Raises VolleyError with the
    reason when the broker refuses the spec or none comes in time.
    """

    def __init__(self, broker: str = "127.0.0.1:7600", policy: str = "default",
                 capacity: int = 64, spec: Any = None, timeout: float = 30.0) -> None:
        self._ptr: Optional[int] = None
        slots = int(capacity)
        if not 2 <= slots <= 2**20:
            raise ValueError(f"capacity: expected 2 .. 2^20 segments, got {slots}")
        s = _spec_in(spec) if spec is not None else None
        why = _lib.why_buffer()
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        ptr = _lib.lib.vl_transport_new(str(broker).encode(), str(policy).encode(),
                                        ctypes.byref(s) if s is not None else None, slots,
                                        ms, why, len(why))
        if not ptr:
            raise VolleyError(f"Learner({broker!r}, policy={policy!r}): {why.value.decode()}")
        self._ptr = ptr
        self.broker, self.policy, self.capacity = broker, policy, slots
        out = TransportSpec()
        _lib.lib.vl_transport_spec(ptr, ctypes.byref(out))
        self.spec = _spec_out(out)

    def _live(self) -> int:
        if not self._ptr:
            raise ValueError("Learner: closed")
        return self._ptr

    def take(self, n: int, timeout: Optional[float] = None, unpack: bool = True,
             partial: bool = False) -> Optional["Batch"]:
        """Waits up to timeout seconds (None: no limit) for n segments and
        returns the n oldest as a Batch (fewer if the buffer evicted some
        meanwhile), or None on timeout. partial=True: on timeout, takes those
        that wait, if any (the C learner's --batch-wait-ms: actors that wait
        for new weights after each round never send more). unpack=False gives
        obs_rows (the stored rows, packed fields one byte a value) instead of
        obs."""
        ptr = self._live()
        want = int(n)
        if not 1 <= want <= self.capacity // 2:
            raise ValueError(f"take: n {want}: expected 1 .. capacity // 2 "
                             f"({self.capacity // 2})")
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        got = _lib.lib.vl_transport_take(ptr, want, ms)
        if got == 0 and partial:
            waiting = self.counters["waiting"]
            got = _lib.lib.vl_transport_take(ptr, min(want, waiting), 0) if waiting else 0
        if got <= 0:
            return None
        try:
            return Batch(self._gather(ptr, got, unpack))
        finally:
            _lib.lib.vl_transport_release(ptr)

    def _gather(self, ptr: int, n: int, unpack: bool) -> Dict[str, np.ndarray]:
        T, D, R = self.spec["horizon"], self.spec["obs_dim"], self.spec["row_bytes"]
        dims = self.spec["action"].dims
        out: Dict[str, np.ndarray] = {}
        for name, (idx, dtype, shape) in _ARRAYS.items():
            if name == ("obs_rows" if unpack else "obs"):
                continue
            size = _lib.lib.vl_transport_array_bytes(ptr, idx)
            want = (n, T, dims) if name == "actions" else shape(n, T, D, R) if shape \
                else size // 4
            a = np.empty(want, dtype)
            if a.nbytes != size or _lib.lib.vl_transport_gather(ptr, idx, a.ctypes.data,
                                                                a.nbytes) != 0:
                raise VolleyError(f"take: gathering {name} failed ({size} bytes for "
                                  f"{a.shape})")
            out[name] = a
        return out

    def publish(self, weights: Mapping[str, Any], version: int,
                check_policy: bool = True) -> None:
        """Sends weights as `version` (an int >= any published before) to the
        policy's actors. weights maps names to arrays of rank 1 to 4 (a conv
        weight [out, in, kh, kw] goes as it is, every dimension kept): NumPy,
        nested lists, or torch tensors (a state_dict). With check_policy the
        tensors must be volley's MLP for the spec (pi.0.weight [hidden,
        obs_dim] ... v.2.bias [1]), what C actors load; pass False for a
        model of your own whose actors take its tensors. Raises ValueError
        naming the tensor and the reason (nothing is sent then)."""
        ptr = self._live()
        if not hasattr(weights, "items"):
            raise TypeError(f"publish: weights: expected a mapping of names to arrays, got "
                            f"{type(weights).__name__}")
        items = [(str(k), _as_array(k, v)) for k, v in weights.items()]
        if not 1 <= len(items) <= TENSORS_MAX:
            raise ValueError(f"publish: {len(items)} tensors: expected 1 .. {TENSORS_MAX}")
        v = int(version)
        if not 0 <= v < 2**64:
            raise ValueError(f"publish: version {v}: expected 0 .. 2^64 - 1")
        ts = (TransportTensor * len(items))()
        names = [k.encode() for k, _ in items]
        for t, name, (_, a) in zip(ts, names, items):
            t.name, t.ndim, t.data = name, a.ndim, a.ctypes.data
            for k, d in enumerate(a.shape):
                t.shape[k] = d
        why = _lib.why_buffer()
        if _lib.lib.vl_transport_publish(ptr, v, ts, len(items), int(bool(check_policy)),
                                         why, len(why)) != 0:
            raise ValueError(f"publish: {why.value.decode()}")

    def publish_stats(self, version: int, trained: int = 0, policy_loss: float = 0.0,
                      value_loss: float = 0.0, entropy: float = 0.0) -> None:
        """Sends a progress report (what `volley top` shows and `volley up`
        judges): the version and losses given, steps, episodes and the mean
        return from the transport's own books."""
        _lib.lib.vl_transport_publish_stats(self._live(), int(version), int(trained),
                                            float(policy_loss), float(value_loss), float(entropy))

    def checkpoint(self, path: str, env: Optional[str] = None, extra: str = "") -> None:
        """Writes the weights published last to path as a learner checkpoint
        (what `volley eval` and `volley export` read), its config section
        naming env and the spec, then the extra INI lines ("model = cnn\n").
        Atomic: a file already at path is replaced whole. Raises VolleyError
        with the reason (nothing published yet, a path that cannot be
        written)."""
        why = _lib.why_buffer()
        if _lib.lib.vl_transport_checkpoint(self._live(), str(path).encode(),
                                            env.encode() if env else None,
                                            extra.encode() if extra else None, why,
                                            len(why)) != 0:
            raise VolleyError(f"checkpoint: {why.value.decode()}")

    @property
    def counters(self) -> Dict[str, Any]:
        """accepted, refused, evicted, env_steps, episodes, mean_return (of
        the last `window` <= 100 episodes), window, waiting; and refusals:
        {reason: count} for the reasons that occurred."""
        ptr = self._live()
        c = TransportCounts()
        _lib.lib.vl_transport_counts(ptr, ctypes.byref(c))
        out: Dict[str, Any] = {f[0]: getattr(c, f[0]) for f in TransportCounts._fields_}
        refusals: Dict[str, int] = {}
        for r in range(_lib.lib.vl_transport_reasons()):
            name = c_char_p()
            k = _lib.lib.vl_transport_refused(ptr, r, ctypes.byref(name))
            if k:
                refusals[(name.value or b"").decode()] = k
        out["refusals"] = refusals
        return out

    def close(self) -> None:
        """Stops receiving and closes the sockets; safe twice."""
        if getattr(self, "_ptr", None):
            _lib.lib.vl_transport_destroy(ctypes.byref(c_void_p(self._ptr)))
            self._ptr = None

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
