"""Tests import the package from this checkout (bindings/python), whatever
the .pth says; libvolley comes from $VOLLEY_LIB (ctest sets it to the build's
libvolley.so) or the package's own search."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pytest  # noqa: E402


@pytest.fixture
def procs(tmp_path):
    """Real volley processes for one test, stopped at its end (see procs.py)."""
    from procs import Procs
    p = Procs(tmp_path)
    yield p
    p.stop_all()
