"""Finds and loads libvolley.so, and declares the C prototypes the package calls.

The library is looked for, in order:
  1. $VOLLEY_LIB, a path to libvolley.so (used as given: no fallback when it
     is set and fails to load);
  2. the copy bundled in the package (volley/libvolley.so), which
     `pip install ./bindings/python` builds and puts in the wheel;
  3. the build tree of the checkout this package sits in:
     <repo>/build/libvolley.so, which `bash compose/setup.sh` builds;
  4. the system's: ctypes.util.find_library("volley"), then "libvolley.so.0"
     (after `cmake --install build && ldconfig`).
ImportError names every place tried and why each failed.

Every ctypes structure mirroring a C struct is checked against the size the
library reports (vl_abi_sizeof) when the package is imported: a library built
from other headers is refused with one line rather than handed misread memory.

Symbols that a given libvolley may lack (the replay buffer, newer than the
rest) are bound when present; has(name) says which.
"""
import ctypes
import ctypes.util
import os
from ctypes import POINTER, c_char_p, c_double, c_float, c_int, c_size_t, c_uint32, c_uint64
from ctypes import c_void_p
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple, Type

_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parents[2]  # bindings/python/volley/_lib.py -> the checkout


class VolleyError(RuntimeError):
    """A refusal from libvolley, carrying the C side's reason."""


def _candidates() -> Tuple[List[Tuple[str, str]], bool]:
    env = os.environ.get("VOLLEY_LIB")
    if env:
        return [("$VOLLEY_LIB", env)], True
    found = ctypes.util.find_library("volley")
    out = [("package", str(_HERE / "libvolley.so")),
           ("build tree", str(_REPO / "build" / "libvolley.so"))]
    if found:
        out.append(("find_library('volley')", found))
    out.append(("system", "libvolley.so.0"))
    return out, False


def _load() -> Tuple[ctypes.CDLL, str]:
    tried = []
    cands, from_env = _candidates()
    for where, name in cands:
        if where in ("package", "build tree") and not os.path.exists(name):
            tried.append(f"{where}: {name} (no such file)")
            continue
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            tried.append(f"{where}: {name} ({e})")
    hint = ("" if from_env else
            "; install the package with `pip install ./bindings/python`, build the checkout "
            "with `bash compose/setup.sh` (or cmake), or point VOLLEY_LIB at a libvolley.so")
    raise ImportError("volley: cannot load libvolley: tried " + "; ".join(tried) + hint)


lib, path = _load()


class vtrace_params(ctypes.Structure):
    """include/volley/vtrace.h: vl_vtrace_params_t."""
    _fields_ = [("gamma", c_float), ("lambda_", c_float), ("rho_bar", c_float),
                ("c_bar", c_float), ("pg_rho_bar", c_float)]


VL_RBUF_FIELDS_MAX = 16
VL_RBUF_NDIM_MAX = 4
VL_RBUF_NAME_MAX = 32


class rbuf_field(ctypes.Structure):
    """include/volley/replay.h: vl_rbuf_field_t."""
    _fields_ = [("name", ctypes.c_char * VL_RBUF_NAME_MAX), ("dtype", c_uint32),
                ("ndim", c_uint32), ("shape", c_uint32 * VL_RBUF_NDIM_MAX)]


_P = c_void_p  # every array crosses as its data pointer (an int)

# name: (restype, argtypes); all pointer arguments are c_void_p.
_PROTOS: Dict[str, Tuple[Any, List[Any]]] = {
    "vl_version": (c_char_p, []),
    # include/volley/vtrace.h
    "vl_vtrace": (None, [POINTER(vtrace_params), c_int, c_int, _P, _P, _P, _P, _P, _P]),
    "vl_vtrace_boot": (None, [POINTER(vtrace_params), c_int, c_int, _P, _P, _P, _P, _P, _P, _P]),
    "vl_vtrace_path": (c_int, [c_int]),
    # include/volley/sampler.h
    "vl_sampler_new": (_P, [c_uint32, c_uint64]),
    "vl_sampler_destroy": (None, [POINTER(_P)]),
    "vl_sampler_priority": (c_double, [_P, c_uint32, c_float]),
    "vl_sampler_set": (None, [_P, c_uint32, c_double]),
    "vl_sampler_get": (c_double, [_P, c_uint32]),
    "vl_sampler_total": (c_double, [_P]),
    "vl_sampler_count": (c_uint32, [_P]),
    "vl_sampler_sample": (c_uint32, [_P, c_uint32, c_float, _P, _P]),
    "vl_sampler_beta": (c_float, [c_float, c_uint64, c_uint64]),
    # include/volley/replay.h
    "vl_rbuf_new": (_P, [c_uint64, POINTER(rbuf_field), c_uint32, c_uint64, c_char_p, c_size_t]),
    "vl_rbuf_destroy": (None, [POINTER(_P)]),
    "vl_rbuf_field_bytes": (c_size_t, [_P, c_uint32]),
    "vl_rbuf_field_data": (_P, [_P, c_uint32]),
    "vl_rbuf_add_batch": (c_uint64, [_P, _P, c_uint64]),
    "vl_rbuf_size": (c_uint64, [_P]),
    "vl_rbuf_sample": (c_uint64, [_P, c_uint64, c_float, _P, _P]),
    "vl_rbuf_gather": (None, [_P, _P, c_uint64, _P]),
    "vl_rbuf_update_priorities": (None, [_P, _P, _P, c_uint64]),
    "vl_rbuf_save": (c_int, [_P, c_char_p, c_char_p, c_size_t]),
    "vl_rbuf_load": (_P, [c_char_p, c_uint64, c_char_p, c_size_t]),
    # A loaded buffer describes itself (fields, capacity) through these.
    "vl_rbuf_capacity": (c_uint64, [_P]),
    "vl_rbuf_n_fields": (c_uint32, [_P]),
    "vl_rbuf_field": (POINTER(rbuf_field), [_P, c_uint32]),
    "vl_rbuf_rejected": (c_uint64, [_P]),
}


def bind(protos: Mapping[str, Tuple[Any, List[Any]]]) -> None:
    """Declares prototypes {name: (restype, argtypes)} on the symbols the
    loaded libvolley exports (each module binds the ones it calls)."""
    for name, (res, args) in protos.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = res
            fn.argtypes = args


bind(_PROTOS)


def has(name: str) -> bool:
    """True when the loaded libvolley exports the symbol name."""
    return hasattr(lib, name)


def check_abi(mirrors: Mapping[str, Type[ctypes.Structure]]) -> None:
    """Compares each ctypes structure {C type name: class} with sizeof that type in the
    loaded library; ImportError (one line naming the type, both sizes and the library)
    at the first that differs, or when the library cannot say."""
    sizeof = getattr(lib, "vl_abi_sizeof", None)
    if sizeof is None:
        raise ImportError(f"volley: {path} has no vl_abi_sizeof (a libvolley older than this "
                          "package): rebuild it or reinstall the package")
    sizeof.restype, sizeof.argtypes = c_size_t, [c_char_p]
    for name, cls in mirrors.items():
        theirs, ours = sizeof(name.encode()), ctypes.sizeof(cls)
        if theirs != ours:
            got = "does not know it" if theirs == 0 else f"has {theirs} bytes"
            raise ImportError(f"volley: {path} does not match this package: {name} "
                              f"{got}, the package's mirror {ours} (rebuild libvolley or "
                              "reinstall the package)")


def why_buffer() -> ctypes.Array[ctypes.c_char]:
    """A buffer for a C function's `why` (its reason for a refusal)."""
    return ctypes.create_string_buffer(1024)
