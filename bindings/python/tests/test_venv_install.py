"""`pip install ./bindings/python` in a fresh virtual environment
(`python3 -m venv --system-site-packages`: Debian's NumPy, no network) builds libvolley.so
with the checkout's CMake and bundles it in the package; then, with no volley.pth naming
this checkout, no $PYTHONPATH and no $VOLLEY_LIB, from a directory outside the checkout,
`python -m volley --help` works, `import volley` loads the bundled library, and two
`python -m volley actor` processes train CartPole to solved (mean return >= 475 over 100
episodes) with a C broker and learner."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from procs import REPO, free_port

BASE = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys._base_executable


def clean_env():
    e = dict(os.environ)
    for k in ("PYTHONPATH", "VOLLEY_LIB", "VIRTUAL_ENV"):
        e.pop(k, None)
    return e


def run(argv, cwd, **kw):
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, **kw)


def test_fresh_venv_installs_and_trains(procs, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([BASE, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    # The pip build reuses bindings/python/build/ (setuptools' own) between runs: CMake then
    # rebuilds only what changed.
    r = run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation",
             REPO / "bindings" / "python"], cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
               cwd=tmp_path).stdout.strip()
    assert (Path(site) / "volley" / "libvolley.so").exists(), "no libvolley.so in the package"
    assert (Path(site) / "volley" / "py.typed").exists()

    r = run([py, "-m", "volley", "--help"], cwd=tmp_path)
    assert r.returncode == 0 and "actor" in r.stdout, r.stdout + r.stderr
    r = run([py, "-c", "import volley; print(volley.__file__); print(volley.lib_path)"],
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    where, lib = r.stdout.split()
    assert where.startswith(site) and lib == str(Path(site) / "volley" / "libvolley.so"), \
        r.stdout

    port = free_port()
    procs.broker(port)
    procs.learner(port)
    actors = [procs.start(f"actor{k}", [str(py), "-m", "volley", "actor", "--env",
                                        "volley.envs.cartpole:make_env", "--broker",
                                        f"127.0.0.1:{port}", "--envs", "8", "--actor-id",
                                        str(k), "--seed", str(k)], clean=True, cwd=tmp_path)
              for k in (1, 2)]
    procs.wait_solved(port, actors)
    shutil.rmtree(venv)
