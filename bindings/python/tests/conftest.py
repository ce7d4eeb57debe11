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


def need(module):
    """module imported; a test that needs it fails without it when ctest runs the tests with
    the checkout's .venv ($VOLLEY_TEST_VENV=1: setup.sh installs it there), skips otherwise."""
    import importlib
    if os.environ.get("VOLLEY_TEST_VENV") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"{module} is not installed (bash compose/setup.sh "
                               "puts it in .venv)")
