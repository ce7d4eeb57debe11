"""volley.ReplayBuffer: include/volley/replay.h (a replay buffer of named fields) over NumPy.

Rows cross without copies where the layout allows: add_batch hands C the
data pointers of C-contiguous arrays of each field's dtype, and buf.fields
are read-only NumPy views of the buffer's own storage.
"""
from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import VolleyError

# VL_RBUF_* codes, in include/volley/replay.h's order.
_DTYPES = [np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64),
           np.dtype(np.float64)]
_CODE = {d: code for code, d in enumerate(_DTYPES)}
# One field as the buffer keeps it: (name, shape of a row, dtype).
_Spec = Tuple[str, Tuple[int, ...], np.dtype]
_RESERVED = ("indices", "weights")  # keys sample() adds beside the fields

# What a loaded buffer needs to describe itself, beyond what vl_rbuf_new needs.
_DESCRIBE = ("vl_rbuf_capacity", "vl_rbuf_n_fields", "vl_rbuf_field")


def _require(*names: str) -> None:
    missing = [n for n in names if not _lib.has(n)]
    if missing:
        raise NotImplementedError(
            f"the libvolley loaded ({_lib.path}) has no {', '.join(missing)}: "
            "the replay buffer (store/vl_rbuf.c) is not in this build")


def _field_struct(name: object, spec: Any
                  ) -> Tuple[_lib.rbuf_field, Tuple[int, ...], np.dtype]:
    """The vl_rbuf_field_t of one (name, (shape, dtype)) entry, and its numpy (shape, dtype)."""
    if not isinstance(name, str):
        raise TypeError(f"fields: a name must be a str, got {name!r}")
    if name in _RESERVED:
        raise ValueError(f"field {name!r}: the name is reserved (sample() returns it)")
    raw = name.encode()
    if not raw or len(raw) >= _lib.VL_RBUF_NAME_MAX or not name.isprintable():
        raise ValueError(f"field {name!r}: expected a printable name of 1 .. "
                         f"{_lib.VL_RBUF_NAME_MAX - 1} bytes")
    try:
        given_shape, given_dtype = spec
    except (TypeError, ValueError):
        raise TypeError(f"field {name!r}: expected (shape, dtype), got {spec!r}") from None
    shape: Tuple[int, ...] = ((int(given_shape),) if isinstance(given_shape, (int, np.integer))
                              else tuple(int(d) for d in given_shape))
    if len(shape) > _lib.VL_RBUF_NDIM_MAX or any(not 1 <= d < 2**32 for d in shape):
        raise ValueError(f"field {name!r}: expected up to {_lib.VL_RBUF_NDIM_MAX} dimensions of "
                         f"1 .. 2^32-1, got shape {shape}")
    dtype = np.dtype(given_dtype)
    if dtype not in _CODE:
        raise TypeError(f"field {name!r}: dtype {dtype} is not one of "
                        f"{', '.join(str(d) for d in _DTYPES)}")
    f = _lib.rbuf_field(raw, _CODE[dtype], len(shape))
    for i, d in enumerate(shape):
        f.shape[i] = d
    return f, shape, dtype


def _refusal(verb: str, path: Union[str, os.PathLike], why: ctypes.Array[ctypes.c_char]
             ) -> VolleyError:
    """VolleyError "verb: path: reason", the path said once (C's reasons often start with it)."""
    where, reason = os.fspath(path), why.value.decode(errors="replace")
    return VolleyError(f"{verb}: {reason}" if reason.startswith(where)
                       else f"{verb}: {where}: {reason}")


def _describe(ptr: int) -> Tuple[int, List[_Spec]]:
    """(capacity, [(name, shape, dtype)]) of a buffer, from the C side."""
    _require(*_DESCRIBE)
    out: List[_Spec] = []
    for i in range(_lib.lib.vl_rbuf_n_fields(ptr)):
        f = _lib.lib.vl_rbuf_field(ptr, i).contents
        if f.dtype >= len(_DTYPES):
            raise VolleyError(f"field {i}: unknown dtype code {f.dtype}")
        out.append((f.name.decode(), tuple(f.shape[:f.ndim]), _DTYPES[f.dtype]))
    return _lib.lib.vl_rbuf_capacity(ptr), out


class _Views(Mapping[str, np.ndarray]):
    """ReplayBuffer.fields: each view made when asked for (no cycle through the
    buffer, so dropping the buffer and its views frees it at once)."""

    def __init__(self, buf: ReplayBuffer) -> None:
        self._buf = buf

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            i = self._buf._names.index(name)
        except ValueError:
            raise KeyError(name) from None
        return self._buf._view(i)

    def __iter__(self) -> Iterator[str]:
        return iter(self._buf._names)

    def __len__(self) -> int:
        return len(self._buf._names)


class ReplayBuffer:
    """capacity samples of named fields, {name: (shape, dtype)}, dtypes float32,
    uint8, int32, int64 or float64; shape () for a scalar. A ring: when full,
    adding overwrites the oldest rows. Several threads may add at once (each
    C call releases the GIL and reserves its rows atomically); sampling draws
    uniformly or by priority. Errors are exceptions naming the field."""

    def __init__(self, capacity: int, fields: Mapping[str, Tuple[Tuple[int, ...], Any]],
                 seed: int = 1) -> None:
        _require("vl_rbuf_new")
        rows = int(capacity)
        if rows < 1:
            raise ValueError(f"capacity: expected >= 1, got {rows}")
        if not isinstance(fields, dict) or not fields:
            raise TypeError("fields: expected a non-empty dict {name: (shape, dtype)}")
        if len(fields) > _lib.VL_RBUF_FIELDS_MAX:
            raise ValueError(f"fields: at most {_lib.VL_RBUF_FIELDS_MAX}, got {len(fields)}")
        structs: List[_lib.rbuf_field] = []
        specs: List[_Spec] = []
        for name, spec in fields.items():
            f, shape, dtype = _field_struct(name, spec)
            structs.append(f)
            specs.append((name, shape, dtype))
        arr = (_lib.rbuf_field * len(structs))(*structs)
        why = _lib.why_buffer()
        ptr = _lib.lib.vl_rbuf_new(rows, arr, len(structs), int(seed) & (2**64 - 1), why,
                                   len(why))
        if not ptr:
            raise ValueError(f"ReplayBuffer: refused: {why.value.decode(errors='replace')}")
        self._adopt(ptr, rows, specs)

    @classmethod
    def load(cls, path: Union[str, os.PathLike], seed: int = 1) -> "ReplayBuffer":
        """A buffer saved by save(); VolleyError with the reason when the file is
        missing, truncated or corrupt."""
        _require("vl_rbuf_load", *_DESCRIBE)
        why = _lib.why_buffer()
        ptr = _lib.lib.vl_rbuf_load(os.fsencode(path), int(seed) & (2**64 - 1), why, len(why))
        if not ptr:
            raise _refusal("load", path, why)
        self = cls.__new__(cls)
        self._ptr = ptr  # destroyed by __del__ should _describe refuse it
        capacity, specs = _describe(ptr)
        self._adopt(ptr, capacity, specs)
        return self

    def _adopt(self, ptr: int, capacity: int, specs: List[_Spec]) -> None:
        self._ptr: Optional[int] = ptr
        self.capacity = capacity
        self._specs = specs
        self._names = [name for name, _, _ in specs]
        for i, (name, shape, dtype) in enumerate(specs):
            nbytes = _lib.lib.vl_rbuf_field_bytes(ptr, i)
            if nbytes != dtype.itemsize * math.prod(shape):
                raise VolleyError(f"field {name!r}: C holds {nbytes} bytes a row, "
                                  f"{shape} {dtype} is {dtype.itemsize * math.prod(shape)}")

    @property
    def fields(self) -> _Views:
        """{name: read-only array [capacity, *shape]}: each field's storage in
        the buffer itself, not a copy (rows past len() are not yet written; a
        row may change under a concurrent add). A view keeps the buffer alive."""
        return _Views(self)

    def _view(self, i: int) -> np.ndarray:
        """Field i's storage as a read-only array, no copy; it holds self alive."""
        _, shape, dtype = self._specs[i]
        nbytes = self.capacity * _lib.lib.vl_rbuf_field_bytes(self._ptr, i)
        raw = (ctypes.c_char * nbytes).from_address(_lib.lib.vl_rbuf_field_data(self._ptr, i))
        raw._owner = self  # the storage lives as long as any view of it
        a = np.frombuffer(memoryview(raw).toreadonly(), dtype=dtype)
        return a.reshape((self.capacity,) + shape)

    def __del__(self) -> None:
        if getattr(self, "_ptr", None):
            _lib.lib.vl_rbuf_destroy(ctypes.byref(ctypes.c_void_p(self._ptr)))
            self._ptr = None

    def __len__(self) -> int:
        return int(_lib.lib.vl_rbuf_size(self._ptr))

    @property
    def rejected(self) -> Optional[int]:
        """Bad input the C side counted and dropped: priorities of rows never
        written, gathers of rows out of range (vl_rbuf_rejected); None when this
        libvolley does not count them."""
        return _lib.lib.vl_rbuf_rejected(self._ptr) if _lib.has("vl_rbuf_rejected") else None

    def _rows(self, arrays: Mapping[str, ArrayLike]) -> Tuple[int, List[np.ndarray]]:
        """The C-contiguous array of each field, in field order, all with the
        same leading dimension n; (n, arrays)."""
        unknown = [k for k in arrays if k not in self._names]
        if unknown:
            raise ValueError(f"add_batch: unknown field {unknown[0]!r} "
                             f"(fields: {', '.join(self._names)})")
        out: List[np.ndarray] = []
        n: Optional[int] = None
        first: Optional[str] = None
        for name, shape, dtype in self._specs:
            if name not in arrays:
                raise ValueError(f"add_batch: field {name!r} is missing")
            given = arrays[name]
            if isinstance(given, np.ndarray):
                if given.dtype != dtype:
                    raise TypeError(f"field {name!r}: expected dtype {dtype}, got {given.dtype}")
                a = np.ascontiguousarray(given)  # given itself when already C-contiguous
            else:
                a = np.ascontiguousarray(np.asarray(given, dtype=dtype))
            if a.ndim != 1 + len(shape) or a.shape[1:] != shape:
                raise ValueError(f"field {name!r}: expected shape (n, {', '.join(map(str, shape))})"
                                 .replace(", )", ")") + f", got {a.shape}")
            if n is None:
                n, first = a.shape[0], name
            elif a.shape[0] != n:
                raise ValueError(f"field {name!r}: {a.shape[0]} rows, field {first!r} has {n}")
            out.append(a)
        assert n is not None  # the buffer has at least one field
        return n, out

    def add_batch(self, arrays: Optional[Mapping[str, ArrayLike]] = None, /,
                  **kw: ArrayLike) -> int:
        """Adds n rows: add_batch(obs=..., act=...) or add_batch({'obs': ..., ...}),
        one array per field with leading dimension n. Arrays of the field's dtype
        and C-contiguous go to C as they are; an array of another dtype is
        refused (TypeError), other sequences are converted. Returns the index of
        the first row written (rows wrap modulo capacity)."""
        if arrays is not None and kw:
            raise TypeError("add_batch: pass a dict or keywords, not both")
        n, rows = self._rows(kw if arrays is None else arrays)
        ptrs = (ctypes.c_void_p * len(rows))(*[a.ctypes.data for a in rows])
        return _lib.lib.vl_rbuf_add_batch(self._ptr, ptrs, n)

    def sample(self, batch: int, beta: Optional[float] = None) -> Dict[str, np.ndarray]:
        """Draws batch rows and copies them out: {name: array [batch, *shape]}.
        beta None draws uniformly; a beta >= 0 draws by priority and adds
        'indices' (uint64, for update_priorities) and 'weights' (float32,
        importance weights, largest 1). ValueError when the buffer is empty."""
        rows = int(batch)
        if rows < 0:
            raise ValueError(f"batch: expected >= 0, got {rows}")
        if beta is not None and (not math.isfinite(beta) or beta < 0):
            raise ValueError(f"beta: expected None (uniform) or >= 0 and finite, got {beta}")
        idx = np.empty(rows, np.uint64)
        w = np.empty(rows, np.float32) if beta is not None else None
        if rows > 0:
            got = _lib.lib.vl_rbuf_sample(self._ptr, rows, -1.0 if beta is None else beta,
                                          idx.ctypes.data, None if w is None else w.ctypes.data)
            if got != rows:
                raise ValueError("sample: the buffer is empty")
        out = {name: np.empty((rows,) + shape, dtype) for name, shape, dtype in self._specs}
        if rows > 0:
            ptrs = (ctypes.c_void_p * len(out))(*[a.ctypes.data for a in out.values()])
            _lib.lib.vl_rbuf_gather(self._ptr, idx.ctypes.data, rows, ptrs)
        if w is not None:
            out["indices"], out["weights"] = idx, w
        return out

    def update_priorities(self, indices: ArrayLike, priorities: ArrayLike) -> None:
        """Sets the priorities of rows indices (as sample() returned them) to
        priorities (one number, or one per index; each >= 0 and finite)."""
        given = np.asarray(indices)
        if given.dtype.kind not in "iu":
            raise TypeError(f"indices: expected integers, got dtype {given.dtype}")
        flat = given.reshape(-1)
        size = len(self)  # rows 0 .. size - 1 hold samples; the rest were never written
        bad = (flat < 0) | (flat >= size) if flat.dtype.kind == "i" else (flat >= size)
        if bad.any():
            raise IndexError(f"indices: row {int(flat[bad][0])} holds no sample "
                             f"(rows 0 .. {size - 1} do)")
        i = np.ascontiguousarray(flat, dtype=np.uint64)
        p = np.ascontiguousarray(np.broadcast_to(np.asarray(priorities, np.float64), i.shape))
        bad = ~np.isfinite(p) | (p < 0)
        if bad.any():
            raise ValueError(f"priorities: expected >= 0 and finite, got {float(p[bad][0])}")
        if i.size:
            _lib.lib.vl_rbuf_update_priorities(self._ptr, i.ctypes.data, p.ctypes.data, i.size)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the buffer to path atomically; never overwrites (an existing
        path is refused). VolleyError with the reason on failure."""
        why = _lib.why_buffer()
        if _lib.lib.vl_rbuf_save(self._ptr, os.fsencode(path), why, len(why)) != 0:
            raise _refusal("save", path, why)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}: {s} {d}" for n, s, d in self._specs)
        return f"<volley.ReplayBuffer {len(self)}/{self.capacity} {{{fields}}}>"
