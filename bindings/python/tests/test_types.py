"""mypy checks the package with pyproject.toml's [tool.mypy]: every function
of a typed module carries its hints (disallow_untyped_defs) and every body
is checked (check_untyped_defs); a function that loses its hints, or a call
that does not fit them, fails this test with mypy's lines."""
import subprocess
import sys
from pathlib import Path

from conftest import need

PACKAGE = Path(__file__).resolve().parents[1]  # bindings/python: pyproject.toml's [tool.mypy]


def test_mypy_passes_on_the_package():
    need("mypy")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=PACKAGE,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout, out.stdout


def test_mypy_refuses_a_function_without_hints(tmp_path):
    """The check has teeth: the same settings refuse an untyped function."""
    need("mypy")
    bad = tmp_path / "untyped.py"
    bad.write_text("def f(x):\n    return x\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                          "--config-file", str(PACKAGE / "pyproject.toml"), str(bad)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert out.returncode == 1 and "no-untyped-def" in out.stdout, out.stdout + out.stderr
