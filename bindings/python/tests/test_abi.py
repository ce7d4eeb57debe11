"""The package checks every ctypes mirror of a C struct against the size the loaded
libvolley reports (vl_abi_sizeof) at import, and refuses a library that differs with
one line naming the struct and both sizes."""
import ctypes
import os
import subprocess
import sys

import pytest

import volley
from volley import _lib, _types

MIRRORS = {"vl_vtrace_params_t": _lib.vtrace_params, "vl_rbuf_field_t": _lib.rbuf_field,
           **_types.MIRRORS}


def test_every_mirror_has_the_library_size():
    sizeof = _lib.lib.vl_abi_sizeof
    for name, cls in MIRRORS.items():
        got = sizeof(name.encode())
        assert got > 0, f"libvolley does not know {name}"
        assert got == ctypes.sizeof(cls), name
    assert sizeof(b"vl_no_such_t") == 0
    assert sizeof(None) == 0


def test_a_mismatched_mirror_is_refused_in_one_line():
    class short_params(ctypes.Structure):
        _fields_ = [("gamma", ctypes.c_float)]
    with pytest.raises(ImportError) as e:
        _lib.check_abi({"vl_vtrace_params_t": short_params})
    msg = str(e.value)
    assert "\n" not in msg
    assert "vl_vtrace_params_t has 20 bytes, the package's mirror 4" in msg, msg
    assert volley.lib_path in msg
    with pytest.raises(ImportError, match="vl_no_such_t does not know it"):
        _lib.check_abi({"vl_no_such_t": short_params})


def test_a_library_without_the_size_function_is_refused(tmp_path):
    """A libvolley without vl_abi_sizeof (older than the package): `import volley` fails
    with one line, not a crash or a silent misread."""
    src = tmp_path / "old.c"
    src.write_text('const char *vl_version(void) { return "0.1.0"; }\n')
    lib = tmp_path / "libvolley.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    pkg = os.path.dirname(os.path.dirname(volley.__file__))  # this checkout's package
    env = dict(os.environ, VOLLEY_LIB=str(lib), PYTHONPATH=pkg)
    r = subprocess.run([sys.executable, "-c", "import volley"], env=env, cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: volley: ") and "has no vl_abi_sizeof" in last, r.stderr
