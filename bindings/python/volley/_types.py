"""The observation encodings and the ctypes mirrors of libvolley's structs that
several modules share, each written once.

Encodings (include/volley/env.h's VL_ENV_F32 .. VL_ENV_U1): a field's values
cross as float32, one byte, two bits or one bit each; ENCODINGS is indexed
by the C code. Structs: the env table and its fields (volley/env.h), the
actor's parameters (volley/actor.h), the transport's field, spec, counts and
tensor (volley/learner.h). MIRRORS maps each C type name to its mirror:
the package checks them against the loaded library's sizes when imported
(volley._lib.check_abi).
"""
import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int, c_uint32, c_uint64, c_void_p
from typing import Dict, NamedTuple, Type

from .action import CAction

__all__ = ["Encoding", "ENCODINGS", "ENCODING_NAMES", "BY_NAME", "F32", "U8", "U2", "U1",
           "wire_bytes", "FIELDS_MAX", "NDIM_MAX", "TENSORS_MAX", "MODEL_MAX", "FIGURES_MAX",
           "ENV_ABI_VERSION", "EnvField", "EnvTable", "ActorParams", "TransportField",
           "TransportSpec", "TransportCounts", "TransportTensor", "MIRRORS"]


class Encoding(NamedTuple):
    """One observation encoding: its name, its C code, the bits one value
    takes on the wire, and the factor an image field of it is scaled by
    before a conv layer (1 / its largest value; f32 and u1: 1)."""
    name: str
    code: int
    bits: int
    scale: float


ENCODINGS = (Encoding("f32", 0, 32, 1.0), Encoding("u8", 1, 8, 1.0 / 255.0),
             Encoding("u2", 2, 2, 1.0 / 3.0), Encoding("u1", 3, 1, 1.0))
ENCODING_NAMES = tuple(e.name for e in ENCODINGS)  # by code: ("f32", "u8", "u2", "u1")
BY_NAME: Dict[str, Encoding] = {e.name: e for e in ENCODINGS}
F32, U8, U2, U1 = (e.code for e in ENCODINGS)


def wire_bytes(encoding: str, count: int) -> int:
    """The bytes count values of encoding take packed on the wire, whole bytes."""
    return (count * BY_NAME[encoding].bits + 7) // 8


FIELDS_MAX, NDIM_MAX = 8, 4  # VL_ENV_FIELDS_MAX, VL_ENV_NDIM_MAX (the transport's the same)
TENSORS_MAX = 64  # include/volley/learner.h: tensors one publish takes
MODEL_MAX = 1024  # include/volley/learner.h: VL_TRANSPORT_MODEL_MAX
FIGURES_MAX = 4  # VL_ENV_FIGURES_MAX: an env's own episode figures
ENV_ABI_VERSION = 3


class EnvField(ctypes.Structure):
    """include/volley/env.h: vl_env_field_t."""
    _fields_ = [("encoding", c_uint32), ("ndim", c_uint32), ("shape", c_uint32 * NDIM_MAX),
                ("low", c_float), ("high", c_float)]


class EnvTable(ctypes.Structure):
    """include/volley/env.h: vl_env_t (only the spec part is filled; no figures)."""
    _fields_ = [("abi_version", c_uint32), ("name", c_char_p), ("summary", c_char_p),
                ("n_fields", c_uint32), ("fields", EnvField * FIELDS_MAX),
                ("action", CAction), ("has_solved_return", c_int),
                ("solved_return", c_float)]
    _fields_ += [(f"fn{i}", c_void_p) for i in range(10)]  # the functions, left NULL
    _fields_ += [("n_figures", c_uint32), ("figure_names", c_char_p * FIGURES_MAX),
                 ("figures", c_void_p), ("vec_figures", c_void_p)]


class ActorParams(ctypes.Structure):
    """include/volley/actor.h: vl_actor_params_t."""
    _fields_ = [("broker", c_char_p), ("policy", c_char_p), ("env", POINTER(EnvTable)),
                ("n_envs", c_uint32), ("horizon", c_uint32), ("hidden", c_uint32),
                ("actor_id", c_uint32), ("seed", c_uint64), ("max_ahead", c_uint32),
                ("wait_ms", c_int), ("external", c_int), ("wake_fd", c_int),
                ("model", c_char_p), ("cert", c_char_p), ("broker_key", c_char_p)]


class TransportField(ctypes.Structure):
    """include/volley/learner.h: vl_transport_field_t."""
    _fields_ = [("encoding", c_uint32), ("ndim", c_uint32), ("shape", c_uint32 * NDIM_MAX)]


class TransportSpec(ctypes.Structure):
    """include/volley/learner.h: vl_transport_spec_t."""
    _fields_ = [("n_fields", c_uint32), ("fields", TransportField * FIELDS_MAX),
                ("action", CAction), ("horizon", c_uint32), ("hidden", c_uint32),
                ("obs_dim", c_uint32), ("row_bytes", c_uint32),
                ("model", ctypes.c_char * MODEL_MAX)]


class TransportCounts(ctypes.Structure):
    """include/volley/learner.h: vl_transport_counts_t."""
    _fields_ = [("accepted", c_uint64), ("refused", c_uint64), ("evicted", c_uint64),
                ("env_steps", c_uint64), ("episodes", c_uint64), ("mean_return", c_float),
                ("window", c_uint32), ("waiting", c_uint32)]


class TransportTensor(ctypes.Structure):
    """include/volley/learner.h: vl_transport_tensor_t."""
    _fields_ = [("name", c_char_p), ("ndim", c_uint32), ("shape", c_uint32 * NDIM_MAX),
                ("data", c_void_p)]


MIRRORS: Dict[str, Type[ctypes.Structure]] = {
    "vl_env_field_t": EnvField, "vl_env_t": EnvTable, "vl_actor_params_t": ActorParams,
    "vl_transport_field_t": TransportField, "vl_transport_spec_t": TransportSpec,
    "vl_transport_counts_t": TransportCounts, "vl_transport_tensor_t": TransportTensor}
