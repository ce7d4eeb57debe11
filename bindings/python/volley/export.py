"""volley.export: policies written by `volley export` in NumPy and PyTorch.

    volley.load_safetensors(path)        {name: np.ndarray}, every header field checked
    volley.load_export_spec(path)        the architecture and spec JSON (a dict)
    volley.TorchPolicy(obs, actions, h)  volley's MLP as a torch.nn.Module (volley.torch)
    volley.load_torch_policy(path)       any export's network (its action space, its obs
                                         normalisation, its recurrent core) as a module
                                         with its weights
    volley.policy_forward(ckpt, obs)     the C policy's log-probs and values (libvolley)

The network (models/vl_policy.c): two MLPs with tanh hidden layers, pi: obs ->
hidden -> hidden -> logits and v: obs -> hidden -> hidden -> 1; tensors
"pi.0.weight" [hidden, obs] ... "v.2.bias" [1], a layer computing x W^T + b as
torch.nn.Linear does, so the names are the module's state_dict keys.

torch is imported only when a TorchPolicy is made: `import volley` works
without it.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
from typing import TYPE_CHECKING, Any, Dict, List, NoReturn, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _lib
from .action import ActionSpace

if TYPE_CHECKING:  # torch is imported only when a module is made
    from .torch.model import VolleyNet

_Path = Union[str, "os.PathLike[str]"]
# One tensor's checked header entry: (dtype name, shape, begin, end) in the data bytes.
_Entry = Tuple[str, List[int], int, int]

__all__ = ["load_safetensors", "load_export_spec", "SafetensorsError", "TorchPolicy",
           "load_torch_policy", "policy_forward"]

# safetensors dtypes NumPy holds as they are (BF16 has no NumPy dtype).
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
           "I16": "<i2", "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
           "BOOL": "?"}
_MAX_HEADER = 100 * 1024 * 1024  # as the safetensors library bounds it


class SafetensorsError(ValueError):
    """A file that is not valid safetensors, with the reason."""


def _fail(path: str, why: str) -> NoReturn:
    raise SafetensorsError(f"{path}: {why}")


def _read_header(path: str, raw: bytearray) -> Tuple[Dict[str, Any], int]:
    if len(raw) < 8:
        _fail(path, f"{len(raw)} bytes: too short for the 8-byte header length")
    (n,) = struct.unpack_from("<Q", raw, 0)
    if n > _MAX_HEADER or 8 + n > len(raw):
        _fail(path, f"header length {n} does not fit in the file's {len(raw)} bytes")
    try:
        header = json.loads(bytes(raw[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        _fail(path, f"header is not JSON ({e})")
    if not isinstance(header, dict):
        _fail(path, "header is not a JSON object")
    return header, 8 + n


def _check_metadata(path: str, meta: object) -> Dict[str, str]:
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in meta.items()):
        _fail(path, "__metadata__ is not an object of strings")
    return meta


def _check_entry(path: str, name: str, e: object, data_len: int) -> _Entry:
    """(dtype, shape, begin, end) of one tensor's header entry, checked."""
    if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
        _fail(path, f"tensor {name!r}: wants exactly dtype, shape and data_offsets")
    dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
    if dtype not in _DTYPES:
        _fail(path, f"tensor {name!r}: dtype {dtype!r} not supported")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        _fail(path, f"tensor {name!r}: shape {shape!r} is not a list of sizes")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(type(o) is int for o in offs) or not 0 <= offs[0] <= offs[1] <= data_len):
        _fail(path, f"tensor {name!r}: data_offsets {offs!r} outside the {data_len} data bytes")
    want = int(np.prod(shape, dtype=np.int64)) * np.dtype(_DTYPES[dtype]).itemsize
    if offs[1] - offs[0] != want:
        _fail(path, f"tensor {name!r}: {offs[1] - offs[0]} bytes for shape {shape} of {dtype}, "
                    f"not {want}")
    return dtype, shape, offs[0], offs[1]


def _check_layout(path: str, spans: List[Tuple[int, int, str]], data_len: int) -> None:
    """The tensors' byte ranges tile the data exactly: no gap, no overlap."""
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            _fail(path, f"tensor {name!r} starts at data byte {begin}, expected {at} "
                        f"({'overlap' if begin < at else 'gap'})")
        at = end
    if at != data_len:
        _fail(path, f"{data_len - at} data bytes after the last tensor")


def _read(path: str) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    with open(path, "rb") as f:
        raw = bytearray(f.read())  # writable: the arrays are views of it
    header, start = _read_header(path, raw)
    meta = _check_metadata(path, header.pop("__metadata__", {}))
    data_len = len(raw) - start
    entries = {name: _check_entry(path, name, e, data_len) for name, e in header.items()}
    _check_layout(path, [(b, e, n) for n, (_, _, b, e) in entries.items()], data_len)
    tensors: Dict[str, np.ndarray] = {}
    for name, (dtype, shape, begin, end) in entries.items():
        dt = np.dtype(_DTYPES[dtype])
        tensors[name] = np.frombuffer(raw, dtype=dt, count=(end - begin) // dt.itemsize,
                                      offset=start + begin).reshape(shape)
    return tensors, meta


def load_safetensors(path: _Path) -> Dict[str, np.ndarray]:
    """The tensors of a safetensors file as {name: np.ndarray} (writable, little-endian).

    Checks everything first: the header length against the file, the JSON,
    every dtype, shape and data_offsets (inside the data, sized for the shape,
    the tensors tiling the data without gaps or overlaps). Raises
    SafetensorsError naming the file and the fault; OSError if unreadable.
    """
    return _read(os.fspath(path))[0]


def load_export_spec(path: _Path) -> Any:
    """The architecture and spec `volley export` wrote (a dict), from the
    .safetensors' __metadata__ ("volley"), else the .json beside it."""
    where = os.fspath(path)
    if where.endswith(".json"):
        with open(where) as f:
            return json.load(f)
    meta = _read(where)[1]
    if "volley" in meta:
        try:
            return json.loads(meta["volley"])
        except ValueError as e:
            _fail(where, f"__metadata__ 'volley' is not JSON ({e})")
    side = (where[:-len(".safetensors")] if where.endswith(".safetensors") else where) + ".json"
    with open(side) as f:
        return json.load(f)


def _net_of(spec: Any, path: str
            ) -> Tuple[str, List[Tuple[Tuple[int, ...], str]], ActionSpace]:
    """(model spec, observation fields, action space) an export names: its
    architecture's (format 2; format 3 adds the action space, before it one
    discrete choice among num_actions), or volley's MLP read off the tensors
    of an export from before models (format 1)."""
    arch = spec.get("architecture", {}) if isinstance(spec, dict) else {}
    try:
        if arch.get("action_space") is not None:
            action = ActionSpace.from_dict(arch["action_space"])
            if "num_actions" in arch and int(arch["num_actions"]) != action.outputs:
                raise ValueError(f"num_actions {arch['num_actions']} is not the "
                                 f"{action.outputs} outputs of {action}")
        else:
            action = ActionSpace.discrete(int(arch["num_actions"]))
        if "model" in arch:
            fields = [(tuple(f["shape"]), f["encoding"]) for f in arch["observation_fields"]]
            return str(arch["model"]), fields, action
        return f"mlp({int(arch['hidden'])})", [((int(arch["obs_dim"]),), "f32")], action
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{path}: its architecture does not say the network ({e!r})") from None


def _core_of(spec: Any, path: str) -> int:
    """The recurrent core an export's architecture names: its LSTM's hidden
    size, 0 for "core": null or none (an export from before recurrent
    models). ValueError for anything else."""
    arch = spec.get("architecture", {}) if isinstance(spec, dict) else {}
    core = arch.get("core") if isinstance(arch, dict) else None
    if core is None:
        return 0
    hidden = core.get("hidden") if isinstance(core, dict) else None
    if not isinstance(core, dict) or core.get("kind") != "lstm" or type(hidden) is not int \
            or not 1 <= hidden <= 1 << 20:
        raise ValueError(f"{path}: its core {core!r} is not {{\"kind\": \"lstm\", "
                         "\"hidden\": H}")
    return hidden


def TorchPolicy(obs_dim: int, num_actions: int, hidden: int = 64) -> VolleyNet:
    """volley's MLP (the mlp(hidden) model) as a torch.nn.Module whose
    state_dict keys are volley's tensor names (pi.0.weight ... v.2.bias);
    forward(obs) -> (logits, values), log_probs(obs), act(obs, greedy=False).
    volley.torch.build makes any model's. Imports torch when called."""
    from . import torch as vtorch
    return vtorch.build(f"mlp({int(hidden)})", [((int(obs_dim),), "f32")], int(num_actions),
                        seed=None)


def load_torch_policy(path: _Path, device: Any = "cpu") -> VolleyNet:
    """The torch.nn.Module of a `volley export` file's model (volley.torch),
    holding its weights, in eval mode: its action space the export's (.action;
    act(obs, greedy) and dist(outputs) draw from it), observations
    normalised with the statistics the weights carry, when they carry them.
    An export whose "core" is {"kind": "lstm", "hidden": H} is a recurrent
    module (state_size 2H): act(obs, greedy, first) carries a state per env
    (row of obs), zero at first and where first marks an episode's first
    observation, forward_seq runs whole sequences. An export of a
    torch:MOD:FN model is that module (volley.torch.custom.CustomNet:
    forward and dist), built by MOD:FN as the learner built it. ValueError
    when the core the export names is not its model's, or the module cannot
    be built or does not take the tensors."""
    from . import torch as vtorch
    where = os.fspath(path)
    spec = load_export_spec(where)
    model, fields, action = _net_of(spec, where)
    if model.startswith("torch:"):
        return _load_custom(model, fields, action, where).to(device).eval()
    hidden = _core_of(spec, where)
    module = vtorch.build(model, fields, action=action, seed=None)
    if module.hidden != hidden:
        raise ValueError(f"{where}: its core says {'lstm(%d)' % hidden if hidden else 'none'}, "
                         f"its model {module.spec_text!r} "
                         f"{'ends in lstm(%d)' % module.hidden if module.hidden else 'has none'}")
    vtorch.load_weights(module, load_safetensors(where))
    return module.to(device).eval()


def _load_custom(model: str, fields: List[Tuple[Tuple[int, ...], str]], action: ActionSpace,
                 where: str) -> Any:
    """The module torch:MOD:FN builds for fields and action, holding the
    tensors of the export at where."""
    from .torch.actor import load_published
    from .torch.custom import ModelSpec, build_net
    net = build_net(model, ModelSpec(tuple(fields), action))
    load_published(net, load_safetensors(where))
    return net


_lib.bind({
    "vl_kept_forward": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                       ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p,
                                       ctypes.c_char_p, ctypes.c_size_t]),
})


def policy_forward(checkpoint: _Path, obs: ArrayLike, num_actions: int
                   ) -> Tuple[NDArray[np.float32], NDArray[np.float32]]:
    """The C policy (libvolley's forward pass) of a checkpoint file or run
    directory on obs [n, obs_dim]: (log-probs [n, num_actions], values [n])
    as float32 arrays; a multi-discrete policy's log-probs are each
    dimension's over its own choices in turn, a box policy's outputs its
    Gaussian's means. Raises VolleyError with the C side's reason."""
    if not _lib.has("vl_kept_forward"):
        raise _lib.VolleyError("this libvolley has no vl_kept_forward")
    x = np.ascontiguousarray(obs, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"obs: expected [n, obs_dim], got shape {x.shape}")
    n, dim = x.shape
    logp = np.empty((n, num_actions), dtype=np.float32)
    values = np.empty(n, dtype=np.float32)
    why = _lib.why_buffer()
    rc = _lib.lib.vl_kept_forward(os.fsencode(os.fspath(checkpoint)), n, dim, num_actions,
                                  x.ctypes.data, logp.ctypes.data, values.ctypes.data,
                                  why, len(why))
    if rc != 0:
        raise _lib.VolleyError(why.value.decode(errors="replace"))
    return logp, values
