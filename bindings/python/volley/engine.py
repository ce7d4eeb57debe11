"""volley.engine: include/volley/engine.h, the learner's update engine.

volley's learner is one C loop (receive, choose a batch, train, publish,
checkpoint, report) around one engine. This module wraps that contract:

  - Config: a vl_engine_config_t read into Python (fields, action space,
    model text, hyperparameters);
  - Batch: a vl_engine_batch_t the loop hands an engine (size, gather of an
    array into caller memory, the learner's minibatch shuffle);
  - ops_for(engine): a vl_engine_ops_t whose functions call a Python
    object's update / weights / optimizer / load / close; an exception in
    one is caught, its message written to `why`, and -1 returned to C;
  - main_engine(argv, open_engine): `volley learner` with such an engine;
  - CEngine, config_default, make_batch: engines and batches without a
    broker (vl_engine_new, vl_engine_batch_new), for tests and benchmarks.

Importing this module does not import torch.
"""
from __future__ import annotations

import ctypes
import dataclasses
import traceback
from ctypes import (CFUNCTYPE, POINTER, c_char, c_char_p, c_float, c_int, c_size_t, c_uint32,
                    c_uint64, c_void_p)
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _lib
from ._lib import VolleyError
from .action import ActionSpace
from ._types import ENCODING_NAMES, TransportSpec, TransportTensor

__all__ = ["Config", "Batch", "Stats", "ops_for", "main_engine", "CEngine", "config_default",
           "make_batch", "ARRAYS", "OBS", "OBS_ROWS", "ACTIONS", "REWARDS", "DONES", "TRUNCATED",
           "LOGP", "FINAL_OBS", "ACTOR_ID", "STATE", "WEIGHTS", "OBS_PACKED", "FINAL_PACKED"]

# include/volley/learner.h's vl_transport_array_t, then engine.h's own arrays
(OBS, OBS_ROWS, ACTIONS, REWARDS, DONES, TRUNCATED, LOGP, FINAL_OBS, POLICY_VERSION, ACTOR_ID,
 ENV_ID, SEQ, N_EPISODES, EPISODE_RETURNS, EPISODE_LENGTHS) = range(15)
STATE, WEIGHTS, OBS_PACKED, FINAL_PACKED = 15, 16, 17, 18
ARRAYS = 19


class _config(ctypes.Structure):
    """include/volley/engine.h: vl_engine_config_t."""
    _fields_ = [("spec", TransportSpec), ("policy", c_char * 64), ("state_size", c_uint32),
                ("batch_segments", c_uint32), ("epochs", c_uint32), ("minibatch", c_uint32),
                ("burn_in", c_uint32), ("lr", c_float), ("gamma", c_float),
                ("lambda_", c_float), ("clip", c_float), ("ent_coef", c_float),
                ("vf_coef", c_float), ("max_grad_norm", c_float), ("rho_bar", c_float),
                ("c_bar", c_float), ("norm_obs", c_int), ("norm_reward", c_int),
                ("seed", c_uint64), ("threads", c_uint32)]


class _stats(ctypes.Structure):
    """include/volley/engine.h: vl_engine_stats_t."""
    _fields_ = [("policy_loss", c_float), ("value_loss", c_float), ("entropy", c_float),
                ("approx_kl", c_float), ("clip_frac", c_float), ("mean_abs_adv", c_float),
                ("explained_var", c_float)]


_P = c_void_p
_UPDATE = CFUNCTYPE(c_int, _P, _P, c_float, POINTER(c_float), POINTER(_stats), _P, c_size_t)
_WEIGHTS = CFUNCTYPE(c_int, _P, POINTER(TransportTensor), c_uint32, POINTER(c_uint32), _P, c_size_t)
_OPTIMIZER = CFUNCTYPE(c_int, _P, POINTER(_P), POINTER(c_size_t), _P, c_size_t)
_LOAD = CFUNCTYPE(c_int, _P, POINTER(TransportTensor), c_uint32, _P, c_size_t, _P, c_size_t)
_CLOSE = CFUNCTYPE(None, _P)


class _ops(ctypes.Structure):
    """include/volley/engine.h: vl_engine_ops_t."""
    _fields_ = [("self", _P), ("update", _UPDATE), ("weights", _WEIGHTS),
                ("optimizer", _OPTIMIZER), ("load", _LOAD), ("close", _CLOSE)]


_OPEN = CFUNCTYPE(c_int, _P, POINTER(_config), POINTER(_ops), _P, c_size_t)


class _arrays(ctypes.Structure):
    """include/volley/engine.h: vl_engine_arrays_t (every array by its address)."""
    _fields_ = [(name, _P) for name in ("obs", "actions", "rewards", "dones", "logp",
                                        "truncated", "final_obs", "state", "weights",
                                        "actor_id")]


_lib.bind({
    "vl_engine_set_device": (None, [ctypes.c_char_p]),
    "vl_learner_stopping": (c_int, []),
    "vl_engine_batch_size": (c_uint32, [_P]),
    "vl_engine_batch_bytes": (c_size_t, [_P, c_int]),
    "vl_engine_batch_gather": (c_int, [_P, c_int, _P, c_size_t]),
    "vl_engine_batch_shuffle": (None, [_P, c_uint32, _P]),
    "vl_learner_main_engine": (c_int, [c_int, POINTER(c_char_p), _OPEN, _P]),
    "vl_engine_config_default": (c_int, [POINTER(_config), POINTER(TransportSpec), c_char_p,
                                         c_size_t]),
    "vl_engine_new": (_P, [POINTER(_config), POINTER(_ops), c_char_p, c_size_t]),
    "vl_engine_destroy": (None, [POINTER(_P)]),
    "vl_engine_batch_new": (_P, [POINTER(_config), c_uint32, POINTER(_arrays), c_char_p,
                                 c_size_t]),
    "vl_engine_batch_destroy": (None, [POINTER(_P)]),
    "vl_engine_update": (c_int, [_P, _P, POINTER(c_float), POINTER(_stats), c_char_p, c_size_t]),
    "vl_engine_tensor_count": (c_uint32, [_P]),
    "vl_engine_tensor": (c_int, [_P, c_uint32, POINTER(TransportTensor)]),
    "vl_engine_load": (c_int, [_P, POINTER(TransportTensor), c_uint32, c_char_p, c_size_t]),
})

if _lib.has("vl_engine_new"):
    _lib.check_abi({"vl_engine_config_t": _config, "vl_engine_stats_t": _stats,
                    "vl_engine_ops_t": _ops, "vl_engine_arrays_t": _arrays})


def _need(name: str) -> Any:
    fn = getattr(_lib.lib, name, None)
    if fn is None:
        raise VolleyError(f"{_lib.path} has no {name} (a libvolley without include/volley/"
                          "engine.h's engines): rebuild it")
    return fn


Stats = Dict[str, float]
STAT_NAMES = tuple(field[0] for field in _stats._fields_)


@dataclasses.dataclass
class Config:
    """A vl_engine_config_t in Python's terms (see include/volley/engine.h)."""
    fields: List[Tuple[Tuple[int, ...], str]]  # [(shape, encoding)]
    action: ActionSpace
    horizon: int
    hidden: int
    obs_dim: int
    row_bytes: int
    model: str  # canonical spec text
    policy: str
    state_size: int
    batch_segments: int
    epochs: int
    minibatch: int
    burn_in: int
    lr: float
    gamma: float
    lam: float
    clip: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    rho_bar: float
    c_bar: float
    norm_obs: bool
    norm_reward: bool
    seed: int
    threads: int
    c: Any = dataclasses.field(default=None, repr=False)  # the _config it was read from

    @classmethod
    def from_c(cls, c: _config) -> "Config":
        """The config C filled (a copy: c may be the loop's stack memory)."""
        own = _config()
        ctypes.memmove(ctypes.byref(own), ctypes.byref(c), ctypes.sizeof(_config))
        s = own.spec
        fields = [(tuple(int(x) for x in s.fields[i].shape[:s.fields[i].ndim]),
                   ENCODING_NAMES[s.fields[i].encoding]) for i in range(s.n_fields)]
        return cls(fields=fields, action=ActionSpace.from_c(s.action), horizon=s.horizon,
                   hidden=s.hidden, obs_dim=s.obs_dim, row_bytes=s.row_bytes,
                   model=s.model.decode(), policy=own.policy.decode(),
                   state_size=own.state_size, batch_segments=own.batch_segments,
                   epochs=own.epochs, minibatch=own.minibatch, burn_in=own.burn_in, lr=own.lr,
                   gamma=own.gamma, lam=own.lambda_, clip=own.clip, ent_coef=own.ent_coef,
                   vf_coef=own.vf_coef, max_grad_norm=own.max_grad_norm, rho_bar=own.rho_bar,
                   c_bar=own.c_bar, norm_obs=bool(own.norm_obs),
                   norm_reward=bool(own.norm_reward), seed=int(own.seed),
                   threads=int(own.threads), c=own)

    def replace(self, **changes: Any) -> "Config":
        """A copy with changes, its C struct changed alike."""
        out = dataclasses.replace(self, **changes)
        c = _config()
        ctypes.memmove(ctypes.byref(c), ctypes.byref(self.c), ctypes.sizeof(_config))
        for k, v in changes.items():
            setattr(c, "lambda_" if k == "lam" else k, v)
        out.c = c
        return out


class Batch:
    """A vl_engine_batch_t: n segments of T steps (see include/volley/engine.h).
    Valid only during the call it was handed to."""

    def __init__(self, ptr: int) -> None:
        self.ptr: Optional[int] = ptr  # None once an OwnedBatch is closed
        self.n = int(_lib.lib.vl_engine_batch_size(ptr))

    def nbytes(self, array: int) -> int:
        """Bytes gather writes for array (0: an array the library does not know)."""
        return int(_lib.lib.vl_engine_batch_bytes(self.ptr, array))

    def gather_into(self, array: int, address: int, size: int) -> None:
        """Copies array into size bytes at address (a pinned tensor's data_ptr,
        say). VolleyError when C refuses."""
        if _lib.lib.vl_engine_batch_gather(self.ptr, array, address, size) != 0:
            raise VolleyError(f"vl_engine_batch_gather: array {array} refused "
                              f"({size} bytes given, {self.nbytes(array)} needed)")

    def gather(self, array: int, dtype: Any = np.float32) -> np.ndarray:
        """array as a flat NumPy array of dtype (a copy, yours)."""
        size = self.nbytes(array)
        out = np.empty(size // np.dtype(dtype).itemsize, dtype)
        if size:
            self.gather_into(array, out.ctypes.data, size)
        return out

    def shuffle(self, N: int) -> np.ndarray:
        """A permutation of 0 .. N-1 from the learner's minibatch RNG (uint32 [N])."""
        perm = np.empty(N, np.uint32)
        _lib.lib.vl_engine_batch_shuffle(self.ptr, N, perm.ctypes.data)
        return perm


def stopping() -> bool:
    """True once the learner this process runs was asked to stop (SIGINT or
    SIGTERM): a long update ends at its next minibatch."""
    return bool(_lib.has("vl_learner_stopping") and _lib.lib.vl_learner_stopping())


def _write_why(why: Optional[int], size: int, text: str) -> None:
    if why and size:
        raw = text.replace("\n", " ").encode(errors="replace")[:size - 1]
        ctypes.memmove(why, raw + b"\0", len(raw) + 1)


def _guard(op: str, fn: Callable[[], None], why: Optional[int], size: int) -> int:
    """Runs fn: 0, or -1 with the exception's message in why (C's loop goes on safely)."""
    try:
        fn()
        return 0
    except BaseException as e:  # noqa: B902  (KeyboardInterrupt too: C decides when to stop)
        msg = f"{op}: {type(e).__name__}: {e}"
        if not isinstance(e, (ValueError, VolleyError, RuntimeError, KeyboardInterrupt)):
            msg += " (" + traceback.format_exc(limit=-1).strip().splitlines()[-2].strip() + ")"
        _write_why(why, size, msg)
        return -1


def tensors_from_c(tensors: Any, n: int) -> Dict[str, np.ndarray]:
    """n vl_transport_tensor_t as name -> float32 NumPy copies."""
    out = {}
    for i in range(n):
        t = tensors[i]
        shape = tuple(int(x) for x in t.shape[:t.ndim])
        count = int(np.prod(shape))
        buf = (c_float * count).from_address(t.data)
        out[t.name.decode()] = np.frombuffer(memoryview(buf), np.float32).reshape(shape).copy()
    return out


class _Published:
    """The tensor table weights() hands C, and what keeps its memory alive."""

    def __init__(self) -> None:
        self.keep: List[Any] = []

    def fill(self, out: Any, max_n: int, arrays: Sequence[Tuple[str, Any, Tuple[int, ...]]]) -> int:
        """Writes (name, address, shape) rows into out; returns how many."""
        if len(arrays) > max_n:
            raise ValueError(f"{len(arrays)} tensors, the learner takes at most {max_n}")
        self.keep = []
        for i, (name, address, shape) in enumerate(arrays):
            raw = name.encode()
            self.keep.append(raw)
            t = out[i]
            t.name = raw
            t.ndim = len(shape)
            for d in range(4):
                t.shape[d] = shape[d] if d < len(shape) else 0
            t.data = address
        return len(arrays)


class _Ops:
    """A vl_engine_ops_t over a Python engine, with every callback kept alive."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.published = _Published()
        self.opt_buf: Any = None
        self.closed = False
        self.ops = _ops(None, _UPDATE(self._update), _WEIGHTS(self._weights),
                        _OPTIMIZER(self._optimizer), _LOAD(self._load), _CLOSE(self._close))

    # The callbacks' arguments as ctypes hands them: a void * is an int (None for NULL), a
    # typed pointer a ctypes pointer object. C always passes a batch, tensors and outputs.
    def _update(self, _self: Optional[int], batch: int, lr: float,
                adv_sums: ctypes._Pointer[c_float], stats: ctypes._Pointer[_stats],
                why: Optional[int], size: int) -> int:
        def run() -> None:
            figures, sums = self.engine.update(Batch(batch), float(lr))
            for name in STAT_NAMES:
                setattr(stats.contents, name, float(figures[name]))
            if adv_sums:
                flat = np.ascontiguousarray(sums, np.float32)
                ctypes.memmove(adv_sums, flat.ctypes.data, flat.nbytes)
        return _guard("update", run, why, size)

    def _weights(self, _self: Optional[int], out: ctypes._Pointer[TransportTensor], max_n: int,
                 n: ctypes._Pointer[c_uint32], why: Optional[int], size: int) -> int:
        def run() -> None:
            n[0] = self.published.fill(out, max_n, self.engine.weights())
        return _guard("weights", run, why, size)

    def _optimizer(self, _self: Optional[int], data: ctypes._Pointer[c_void_p],
                   nbytes: ctypes._Pointer[c_size_t], why: Optional[int], size: int) -> int:
        def run() -> None:
            raw = bytes(self.engine.optimizer())
            self.opt_buf = ctypes.create_string_buffer(raw, len(raw) or 1)
            data[0] = ctypes.addressof(self.opt_buf)
            nbytes[0] = len(raw)
        return _guard("optimizer", run, why, size)

    def _load(self, _self: Optional[int], tensors: ctypes._Pointer[TransportTensor], n: int,
              opt: Optional[int], opt_size: int, why: Optional[int], size: int) -> int:
        def run() -> None:
            raw = ctypes.string_at(opt, opt_size) if opt and opt_size else b""
            self.engine.load(tensors_from_c(tensors, n), raw)
        return _guard("load", run, why, size)

    def _close(self, _self: Optional[int]) -> None:
        if not self.closed:
            self.closed = True
            close = getattr(self.engine, "close", None)
            try:
                if close:
                    close()
            except Exception:
                traceback.print_exc()
        _LIVE.pop(id(self), None)


_LIVE: Dict[int, _Ops] = {}  # outside engines C holds (until their close)


def ops_for(engine: Any) -> _ops:
    """A vl_engine_ops_t calling engine's methods (kept alive until C closes it):
    update(Batch, lr) -> (stats dict of STAT_NAMES, adv_sums [n]); weights() ->
    [(name, address of host float32 data, shape)] valid until the next update
    or load; optimizer() -> bytes; load({name: array}, bytes); close()."""
    holder = _Ops(engine)
    _LIVE[id(holder)] = holder
    holder.ops.self = id(holder)
    return holder.ops


def main_engine(argv: Sequence[str], open_engine: Callable[[Config], Any]) -> int:
    """`volley learner` (argv[0] the program) with an outside engine:
    open_engine(Config) returns the engine (see ops_for). Returns the exit code."""
    fn = _need("vl_learner_main_engine")

    def on_open(_ctx: Optional[int], config: ctypes._Pointer[_config], ops: ctypes._Pointer[_ops],
                why: Optional[int], size: int) -> int:
        def run() -> None:
            made = ops_for(open_engine(Config.from_c(config.contents)))
            ctypes.memmove(ops, ctypes.byref(made), ctypes.sizeof(_ops))
        return _guard("open", run, why, size)

    cb = _OPEN(on_open)
    raw = [a.encode() for a in argv]
    c_argv = (c_char_p * (len(raw) + 1))(*raw, None)
    return int(fn(len(raw), c_argv, cb, None))


# ---- engines and batches without a broker ----

def _c_spec(fields: Any, action: Any, horizon: int, hidden: int = 64,
            model: str = "") -> TransportSpec:
    from .model import model_fields
    s = TransportSpec()
    fs = model_fields(fields)
    s.n_fields = len(fs)
    for i, (shape, enc) in enumerate(fs):
        s.fields[i].encoding = ENCODING_NAMES.index(enc)
        s.fields[i].ndim = len(shape)
        for d, x in enumerate(shape):
            s.fields[i].shape[d] = int(x)
    s.action = ActionSpace.of(action).to_c()
    s.horizon, s.hidden, s.model = horizon, hidden, model.encode()
    return s


def config_default(fields: Any, action: Any, horizon: int, hidden: int = 64, model: str = "",
                   **changes: Any) -> Config:
    """The config `volley learner` settles for this spec with no flags
    (vl_engine_config_default), then changes (Config's names). VolleyError
    with C's reason when refused."""
    fn, why = _need("vl_engine_config_default"), _lib.why_buffer()
    s, c = _c_spec(fields, action, horizon, hidden, model), _config()
    if fn(ctypes.byref(c), ctypes.byref(s), why, len(why)) != 0:
        raise VolleyError(why.value.decode(errors="replace"))
    return Config.from_c(c).replace(**changes) if changes else Config.from_c(c)


class CEngine:
    """vl_engine_new: the C engine (engine None) or an outside one (an object
    ops_for takes) for config; update, tensors and load as the learner calls them."""

    def __init__(self, config: Config, engine: Any = None) -> None:
        why = _lib.why_buffer()
        ops = ops_for(engine) if engine is not None else None
        self.config = config
        self.ptr = _need("vl_engine_new")(ctypes.byref(config.c),
                                          ctypes.byref(ops) if ops is not None else None,
                                          why, len(why))
        if not self.ptr:
            raise VolleyError(why.value.decode(errors="replace"))

    def update(self, batch: "OwnedBatch") -> Tuple[Stats, np.ndarray]:
        """One update (vl_engine_update): (stats, adv_sums [n])."""
        why, st = _lib.why_buffer(), _stats()
        sums = (c_float * batch.n)()
        if _lib.lib.vl_engine_update(self.ptr, batch.ptr, sums, ctypes.byref(st), why,
                                     len(why)) != 0:
            raise VolleyError(why.value.decode(errors="replace"))
        return {k: float(getattr(st, k)) for k in STAT_NAMES}, np.array(sums, np.float32)

    def tensors(self) -> Dict[str, np.ndarray]:
        """The published tensors (norm.* included) as float32 copies."""
        n = _lib.lib.vl_engine_tensor_count(self.ptr)
        table = (TransportTensor * max(n, 1))()
        for i in range(n):
            if _lib.lib.vl_engine_tensor(self.ptr, i, ctypes.byref(table[i])) != 0:
                raise VolleyError(f"vl_engine_tensor: {i} refused")
        return tensors_from_c(table, n)

    def load(self, tensors: Mapping[str, np.ndarray]) -> None:
        """Copies tensors into the engine's weights (vl_engine_load)."""
        arrays = [(k, np.ascontiguousarray(v, np.float32)) for k, v in tensors.items()]
        table, pub = (TransportTensor * max(len(arrays), 1))(), _Published()
        pub.fill(table, len(arrays), [(k, a.ctypes.data, a.shape) for k, a in arrays])
        why = _lib.why_buffer()
        if _lib.lib.vl_engine_load(self.ptr, table, len(arrays), why, len(why)) != 0:
            raise VolleyError(why.value.decode(errors="replace"))

    def close(self) -> None:
        """Destroys the engine (an outside one's close is called); safe twice."""
        if getattr(self, "ptr", None):
            p = c_void_p(self.ptr)
            _lib.lib.vl_engine_destroy(ctypes.byref(p))
            self.ptr = None

    __del__ = close


class OwnedBatch(Batch):
    """A batch made by make_batch (vl_engine_batch_new); destroyed with close()."""

    def close(self) -> None:
        if getattr(self, "ptr", None):
            p = c_void_p(self.ptr)
            _lib.lib.vl_engine_batch_destroy(ctypes.byref(p))
            self.ptr = None

    __del__ = close


def make_batch(config: Config, n: int, arrays: Mapping[str, Any]) -> OwnedBatch:
    """A batch of n segments from arrays (vl_engine_arrays_t's names: obs, actions,
    rewards, dones, logp, and optionally truncated, final_obs, state, weights,
    actor_id), encoded as actors send them. VolleyError with C's reason."""
    dtypes = {"truncated": np.uint8, "actor_id": np.uint32}
    keep, a = [], _arrays()
    for field in _arrays._fields_:
        name = field[0]
        if arrays.get(name) is None:
            continue
        x = np.ascontiguousarray(arrays[name], dtypes.get(name, np.float32))
        keep.append(x)
        setattr(a, name, x.ctypes.data)
    why = _lib.why_buffer()
    ptr = _need("vl_engine_batch_new")(ctypes.byref(config.c), n, ctypes.byref(a), why, len(why))
    if not ptr:
        raise VolleyError(why.value.decode(errors="replace"))
    return OwnedBatch(ptr)
