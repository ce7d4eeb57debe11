"""volley.Model: volley's actor-critic network in C, include/volley/model.h.

The network a model spec names ("cnn", "mlp(64)", "conv(16,3,1) relu
linear(128) relu", ...) over a policy's observation fields and action
space, as the actors and the C learner run it: forward, backward and the
parameters, which are named tensors in PyTorch's layout and order (the same
names and shapes as the module volley.torch.build makes from the spec).

    m = volley.Model("cnn", [((4, 84, 84), "u8")], num_actions=6, seed=1)
    m = volley.Model("mlp", 3, action=volley.ActionSpace.box([-2], [2]))
    logits, values = m.forward(obs)              # obs float32 [n, obs_dim]
    m.backward(dlogits, dvalues)                 # adds into m.grads()
    m.set_tensors(module.state_dict())           # weights from PyTorch

Fields are given as the package gives them elsewhere: a list of (shape,
encoding) with encoding one of "f32", "u8", "u2", "u1" (as Learner's spec
dict), a volley.Spec (an actor's), a spec dict with "fields" or "obs_dim",
or an int obs_dim (one f32 field). The action space is `action` (an
ActionSpace, or what ActionSpace.of takes) or num_actions discrete choices,
else the one fields carry (a Spec's, a spec dict's). The head's outputs
(`outputs` of them) are the logits of every discrete dimension in turn, or
a box's means, whose log-stds are the tensor pi.logstd [dims]. Image
fields (three dimensions, channels first) hold their raw values (0..255 for
u8): the network scales them.
"""
from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from collections.abc import Sequence
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _lib
from ._lib import VolleyError
from .action import ActionSpace, CAction
from ._types import ENCODING_NAMES, FIELDS_MAX, NDIM_MAX, TransportField

__all__ = ["Model", "model_fields"]

_NAME_MAX = 32  # include/volley/model.h: VL_MODEL_NAME_MAX
_MODELNDIM_MAX = 4  # VL_MODELNDIM_MAX
_TEXT_MAX = 4096  # models/vl_model_spec.h: VL_MODEL_TEXT_MAX

_P = c_void_p
_lib.bind({
    "vl_model_new": (_P, [c_char_p, POINTER(TransportField), c_uint32, POINTER(CAction), c_uint64,
                          c_char_p, c_size_t]),
    "vl_model_destroy": (None, [POINTER(_P)]),
    "vl_model_text": (c_int, [_P, c_char_p, c_size_t]),
    "vl_model_obs_dim": (c_uint32, [_P]),
    "vl_model_tensor_count": (c_uint32, [_P]),
    "vl_model_tensor": (POINTER(c_float), [_P, c_uint32, c_int, c_char_p, POINTER(c_uint32),
                                           POINTER(c_uint32)]),
    "vl_model_params_changed": (None, [_P]),
    "vl_model_forward": (c_int, [_P, c_uint32, _P, _P, _P]),
    "vl_model_state_size": (c_uint32, [_P]),
    "vl_model_forward_seq": (c_int, [_P, c_uint32, c_uint32, _P, _P, _P, _P, _P, _P]),
    "vl_model_backward": (c_int, [_P, c_uint32, _P, _P]),
    "vl_model_zero_grad": (None, [_P]),
})


def model_fields(fields: Any) -> List[Tuple[Tuple[int, ...], str]]:
    """fields in any of the forms the package takes (see the module's
    docstring) as a list of (shape, encoding name). ValueError or TypeError
    naming what was wrong."""
    if isinstance(fields, (int, np.integer)):
        return [((int(fields),), "f32")]
    if isinstance(fields, dict):
        if fields.get("fields") is not None:
            return model_fields(fields["fields"])
        if "obs_dim" in fields:
            return [((int(fields["obs_dim"]),), "f32")]
        raise ValueError("fields: a spec dict needs 'fields' or 'obs_dim'")
    if hasattr(fields, "fields") and hasattr(fields, "action"):  # a volley.Spec
        return [(tuple(int(d) for d in shape), ENCODING_NAMES[int(enc)])
                for _, enc, shape, _, _ in fields.fields]
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Sequence):
        raise TypeError(f"fields: expected a list of (shape, encoding), a volley.Spec, a spec "
                        f"dict or an obs_dim, got {type(fields).__name__}")
    out: List[Tuple[Tuple[int, ...], str]] = []
    for i, f in enumerate(fields):
        try:
            given, enc = f
        except (TypeError, ValueError):
            raise TypeError(f"fields[{i}]: expected (shape, encoding), got {f!r}") from None
        scalar = np.isscalar(given)  # a number (int() refuses the non-numbers among them)
        shape = (int(given),) if scalar else tuple(int(d) for d in given)
        if enc not in ENCODING_NAMES:
            raise ValueError(f"fields[{i}]: encoding {enc!r}: expected one of {ENCODING_NAMES}")
        out.append((shape, enc))
    return out


def action_of(fields: Any, num_actions: Any = None, action: Any = None) -> ActionSpace:
    """The action space: action as given, else num_actions (an int: that many
    discrete choices; or a space), else the one a volley.Spec or spec dict
    carries. ValueError when there is none."""
    if action is not None:
        return ActionSpace.of(action)
    if num_actions is not None:
        return ActionSpace.of(num_actions)
    if isinstance(fields, dict):
        if fields.get("action") is not None:
            return ActionSpace.of(fields["action"])
        if fields.get("num_actions") is not None:
            return ActionSpace.discrete(int(fields["num_actions"]))
    elif getattr(fields, "action", None) is not None:
        return ActionSpace.of(fields.action)
    raise ValueError("action space: not given (action= or num_actions=), and the fields do "
                     "not carry one")


def _num_actions(fields: Any, num_actions: Any) -> int:
    """The head outputs of the action space action_of finds."""
    return action_of(fields, num_actions).outputs


def _c_fields(fields: List[Tuple[Tuple[int, ...], str]]) -> ctypes.Array[TransportField]:
    """A list of (shape, encoding) as a vl_transport_field_t array."""
    if not 1 <= len(fields) <= FIELDS_MAX:
        raise ValueError(f"fields: {len(fields)}: expected 1 .. {FIELDS_MAX}")
    arr = (TransportField * len(fields))()
    for i, (shape, enc) in enumerate(fields):
        if not 1 <= len(shape) <= NDIM_MAX or not all(0 < d < 2**32 for d in shape):
            raise ValueError(f"fields[{i}]: shape {shape}: expected 1 .. {NDIM_MAX} "
                             "dimensions, each 1 .. 2^32 - 1")
        arr[i].encoding, arr[i].ndim = ENCODING_NAMES.index(enc), len(shape)
        for k, d in enumerate(shape):
            arr[i].shape[k] = d
    return arr


def _as_f32(name: str, given: Any, shape: Tuple[Optional[int], ...]) -> NDArray[np.float32]:
    """given as a C-contiguous float32 array of shape (given itself when it is
    one); a torch tensor is taken through NumPy without importing torch."""
    if hasattr(given, "detach"):
        given = given.detach().cpu().numpy()
    try:
        a = np.ascontiguousarray(given, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: expected an array of floats ({e})") from None
    if a.ndim != len(shape) or any(w is not None and w != d for w, d in zip(shape, a.shape)):
        want = "[" + ", ".join("n" if w is None else str(w) for w in shape) + "]"
        raise ValueError(f"{name}: expected shape {want}, got {list(a.shape)}")
    return a


class Model:
    """volley's network for spec over fields acting in an action space (see
    the module's docstring for the forms fields and the space take), its
    initial weights drawn from seed. num_actions is the head's outputs
    (logits, or a box's means). Raises VolleyError with the C side's
    one-line reason when the spec or the space is refused."""

    def __init__(self, spec: str, fields: Any, num_actions: Any = None, seed: int = 0,
                 action: Any = None) -> None:
        self._ptr: Optional[int] = None
        self.fields = model_fields(fields)
        self.action = action_of(fields, num_actions, action)
        self.num_actions = self.action.outputs
        if not isinstance(spec, str):
            raise TypeError(f"spec: expected the spec's text, got {type(spec).__name__}")
        if not _lib.has("vl_model_new"):
            raise VolleyError(f"{_lib.path} has no vl_model_new: a libvolley older than "
                              "volley.Model (rebuild it or reinstall the package)")
        arr = _c_fields(self.fields)
        why = _lib.why_buffer()
        c_action = self.action.to_c()
        ptr = _lib.lib.vl_model_new(spec.encode(), arr, len(self.fields),
                                    ctypes.byref(c_action), int(seed) % 2**64, why, len(why))
        if not ptr:
            raise VolleyError(f"model {spec!r}: {why.value.decode()}")
        self._ptr = ptr
        # The C model is one thread's at a time, and ctypes lets go of the GIL in each
        # call: calls that use or change its state take turns under this lock.
        self._lock = threading.Lock()
        buf = ctypes.create_string_buffer(_TEXT_MAX + 1)
        if _lib.lib.vl_model_text(ptr, buf, len(buf)) < 0:
            raise VolleyError(f"model {spec!r}: its canonical text does not fit in "
                              f"{_TEXT_MAX} bytes")
        self.spec_text = buf.value.decode()
        self.obs_dim = int(_lib.lib.vl_model_obs_dim(ptr))
        self._n: Optional[int] = None  # batch size of the last forward: what backward takes
        self._names: List[str] = []
        self._shapes: List[Tuple[int, ...]] = []
        for i in range(_lib.lib.vl_model_tensor_count(ptr)):
            name, shape, _ = self._tensor(i, 0)
            self._names.append(name)
            self._shapes.append(shape)

    def _tensor(self, i: int, grads: int
                ) -> Tuple[str, Tuple[int, ...], ctypes._Pointer[c_float]]:
        name = ctypes.create_string_buffer(_NAME_MAX)
        ndim = c_uint32()
        shape = (c_uint32 * _MODELNDIM_MAX)()
        p = _lib.lib.vl_model_tensor(self._ptr, i, grads, name, ctypes.byref(ndim), shape)
        if not p or not 1 <= ndim.value <= _MODELNDIM_MAX:
            raise VolleyError(f"model: tensor {i} of {len(self._names)}: none or rank "
                              f"{ndim.value}")
        return name.value.decode(), tuple(shape[:ndim.value]), p

    def _views(self, grads: int) -> OrderedDict[str, np.ndarray]:
        """Read-only NumPy views of the model's tensors (or gradients), each
        holding the model alive while it lives."""
        out: OrderedDict[str, np.ndarray] = OrderedDict()
        for i in range(len(self._names)):
            name, shape, p = self._tensor(i, grads)
            size = int(np.prod(shape))
            carr = (c_float * size).from_address(ctypes.addressof(p.contents))
            # the memory is the model's: keep it while viewed (ctypes arrays take attributes)
            carr._volley_model = self  # type: ignore[attr-defined]
            a = np.ctypeslib.as_array(carr).reshape(shape)
            a.flags.writeable = False
            out[name] = a
        return out

    @property
    def names(self) -> List[str]:
        """The tensors' names in the model's order."""
        return list(self._names)

    @property
    def shapes(self) -> "OrderedDict[str, Tuple[int, ...]]":
        """name -> shape, in the model's order."""
        return OrderedDict(zip(self._names, self._shapes))

    def tensors(self, copy: bool = False) -> "OrderedDict[str, np.ndarray]":
        """name -> float32 array of the parameters, in the model's order:
        read-only views of the C model's memory (they see later changes;
        write through set_tensors), or copies with copy=True."""
        views = self._views(0)
        return OrderedDict((k, v.copy()) for k, v in views.items()) if copy else views

    def grads(self, copy: bool = False) -> "OrderedDict[str, np.ndarray]":
        """name -> the accumulated gradient of that parameter (as tensors)."""
        views = self._views(1)
        return OrderedDict((k, v.copy()) for k, v in views.items()) if copy else views

    def set_tensors(self, mapping: Mapping[str, ArrayLike], strict: bool = True) -> None:
        """Copies mapping's arrays (NumPy, torch tensors: a state_dict) into
        the parameters by name. Every name must be the model's and have its
        shape; with strict every tensor of the model must be given. Nothing
        is written when any check fails (ValueError naming the tensor)."""
        if not hasattr(mapping, "items"):
            raise TypeError(f"set_tensors: expected a mapping of names to arrays, got "
                            f"{type(mapping).__name__}")
        shapes = self.shapes
        arrays: Dict[str, NDArray[np.float32]] = {}
        for name, value in mapping.items():
            if name not in shapes:
                raise ValueError(f"set_tensors: {name!r} is not a tensor of this model "
                                 f"({self.spec_text}); it has {', '.join(self._names)}")
            arrays[name] = _as_f32(f"set_tensors: {name}", value, shapes[name])
        missing = [n for n in self._names if n not in arrays]
        if strict and missing:
            raise ValueError(f"set_tensors: missing {', '.join(missing)}")
        with self._lock:
            for i, name in enumerate(self._names):
                if name in arrays:
                    _, shape, p = self._tensor(i, 0)
                    ctypes.memmove(p, arrays[name].ctypes.data, arrays[name].nbytes)
            _lib.lib.vl_model_params_changed(self._ptr)

    def forward(self, obs: ArrayLike) -> Tuple[np.ndarray, np.ndarray]:
        """logits float32 [n, num_actions] and values float32 [n] of obs
        [n, obs_dim] (raw field values; float32 C-contiguous is passed as it
        is). Keeps what backward needs."""
        ptr = self._live()
        x = _as_f32("obs", obs, (None, self.obs_dim))
        n = x.shape[0]
        if not 1 <= n < 2**32:
            raise ValueError(f"obs: {n} observations: expected 1 .. 2^32 - 1")
        logits = np.empty((n, self.num_actions), np.float32)
        values = np.empty(n, np.float32)
        with self._lock:
            rc = _lib.lib.vl_model_forward(ptr, n, x.ctypes.data, logits.ctypes.data,
                                           values.ctypes.data)
            self._n = n if rc == 0 else None
        if rc != 0:
            raise VolleyError(f"model {self.spec_text}: forward over {n} observations failed "
                              "(see the log)")
        return logits, values

    @property
    def state_size(self) -> int:
        """Floats of one sequence's recurrent state: 2H (h then c) for a
        model ending in lstm(H), 0 for a memoryless one (or a libvolley
        without recurrent models)."""
        if not _lib.has("vl_model_state_size"):
            return 0
        return int(_lib.lib.vl_model_state_size(self._live()))

    def forward_seq(self, obs: ArrayLike, state0: Optional[ArrayLike] = None,
                    reset: Optional[ArrayLike] = None
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B sequences of T steps, obs [B, T, obs_dim], from state0 [B,
        state_size] (None: zeros), the state zeroed before step t where
        reset [B, T] (None: nowhere) is nonzero: (outputs float32 [B, T,
        num_actions], values [B, T], state1 [B, state_size]). Keeps what
        backward needs (its n is B*T, gradients through every sequence)."""
        ptr = self._live()
        if not _lib.has("vl_model_forward_seq"):
            raise VolleyError(f"{_lib.path} has no vl_model_forward_seq: a libvolley older "
                              "than recurrent models")
        x = _as_f32("obs", obs, (None, None, self.obs_dim))
        B, T = x.shape[0], x.shape[1]
        if not 1 <= B * T < 2**32:
            raise ValueError(f"obs: {B} sequences of {T} steps: expected 1 .. 2^32 - 1 rows")
        S = self.state_size
        s0 = None if state0 is None else _as_f32("state0", state0, (B, S))
        if s0 is not None and not np.all(np.isfinite(s0)):
            raise ValueError("state0: a value that is not finite")
        rs = None
        if reset is not None:
            rs = np.ascontiguousarray(np.asarray(reset) != 0, dtype=np.uint8)
            if rs.shape != (B, T):
                raise ValueError(f"reset: expected shape [{B}, {T}], got {list(rs.shape)}")
        outputs = np.empty((B, T, self.num_actions), np.float32)
        values = np.empty((B, T), np.float32)
        state1 = np.empty((B, S), np.float32)
        with self._lock:
            rc = _lib.lib.vl_model_forward_seq(
                ptr, B, T, x.ctypes.data, None if s0 is None else s0.ctypes.data,
                None if rs is None else rs.ctypes.data, outputs.ctypes.data,
                values.ctypes.data, state1.ctypes.data if S else None)
            self._n = B * T if rc == 0 else None
        if rc != 0:
            raise VolleyError(f"model {self.spec_text}: forward over {B} sequences of {T} "
                              "steps failed (see the log)")
        return outputs, values, state1

    def backward(self, dlogits: Optional[ArrayLike], dvalues: Optional[ArrayLike]) -> None:
        """Adds the parameters' gradients of a loss whose gradients with
        respect to the last forward's outputs are dlogits [n, num_actions]
        and dvalues [n] (None: zero) into grads()."""
        ptr = self._live()
        with self._lock:
            n = self._n
            if n is None:
                raise ValueError("backward: no forward before it")
            dl = None if dlogits is None else _as_f32("dlogits", dlogits, (n, self.num_actions))
            dv = None if dvalues is None else _as_f32("dvalues", dvalues, (n,))
            rc = _lib.lib.vl_model_backward(ptr, n, None if dl is None else dl.ctypes.data,
                                            None if dv is None else dv.ctypes.data)
        if rc != 0:
            raise VolleyError(f"model {self.spec_text}: backward over {n} failed (see the log)")

    def zero_grad(self) -> None:
        """Sets the accumulated gradients to zero."""
        ptr = self._live()
        with self._lock:
            _lib.lib.vl_model_zero_grad(ptr)

    def _live(self) -> int:
        if not self._ptr:
            raise ValueError("Model: no C model (its construction failed)")
        return self._ptr

    def __repr__(self) -> str:
        text, fields = getattr(self, "spec_text", None), getattr(self, "fields", None)
        return f"Model({text!r}, fields={fields}, action={getattr(self, 'action', None)})"

    def __del__(self) -> None:
        if getattr(self, "_ptr", None):
            _lib.lib.vl_model_destroy(ctypes.byref(c_void_p(self._ptr)))
            self._ptr = None
