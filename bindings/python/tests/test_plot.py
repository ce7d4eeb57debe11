"""`volley plot` draws runs' metrics.jsonl to PNG (and SVG): several runs in
one picture, runs with keys missing, malformed lines skipped; a run without
metrics is refused with exit 2 and one line."""
import importlib.util
import os
import json
import math
import struct
import subprocess
from pathlib import Path

import pytest

from procs import VOLLEY

pytestmark = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                reason="matplotlib is not installed (python3-matplotlib)")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _run_dir(root, name, seed, rows=40, keys=None, junk=False):
    """A run directory with synthetic metrics of the learner's format."""
    d = root / name
    d.mkdir(parents=True)
    (d / "config.ini").write_text(f"[up]\nenv = cartpole\nseed = {seed}\n")
    lines = []
    for i in range(rows):
        ret = 500 / (1 + math.exp(-(i - 15 - 3 * seed) / 4))
        row = {"wall_time": 1.7e9 + i * 0.1, "uptime_s": i * 0.1, "env_steps": (i + 1) * 8192,
               "steps_per_s": 90000 + 1000 * seed, "version": i, "return_mean": ret,
               "return_min": ret / 2, "return_max": min(500, ret * 1.5), "loss_pi": -0.01,
               "loss_v": 30 * math.exp(-i / 10), "entropy": 0.69 - 0.005 * i,
               "approx_kl": 0.01, "clip_frac": 0.05, "explained_var": 1 - math.exp(-i / 8),
               "lag_min": 0, "lag_median": 1, "lag_max": 3}
        if keys is not None:
            row = {k: v for k, v in row.items() if k in keys}
        lines.append(json.dumps(row))
    if junk:
        lines[3:3] = ["{not json", "[1, 2]", "\xff garbage"]
    (d / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return d


def _plot(*args, cwd):
    return subprocess.run([VOLLEY, "plot", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, data[:8]
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24]), len(data)


def test_a_seed_sweep_in_one_png_and_svg(tmp_path):
    runs = [_run_dir(tmp_path, f"seed{s}", s) for s in range(3)]
    out = tmp_path / "sweep.png"
    r = _plot(*runs, "--out", out, "--svg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (w, h), size = _png_size(out)
    assert (w, h) == (1500, 1100) and size > 50_000  # nine panels of curves, not a blank page
    svg = (tmp_path / "sweep.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for s in range(3):
        assert f"seed{s}" in svg  # one line per run, labelled by its name
    assert "return vs env steps" in svg and "policy lag" in svg


def test_one_run_defaults_to_its_directory(tmp_path):
    run = _run_dir(tmp_path, "only", 0)
    r = _plot(run, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    _png_size(run / "curves.png")


def test_missing_keys_and_malformed_lines(tmp_path):
    run = _run_dir(tmp_path, "sparse", 1, keys={"env_steps", "return_mean"}, junk=True)
    r = _plot(run, "--out", tmp_path / "s.png", "--svg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "3 malformed lines skipped" in r.stderr
    _png_size(tmp_path / "s.png")
    assert "no data" in (tmp_path / "s.svg").read_text()  # panels without their keys say so


def test_a_run_without_metrics_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    r = _plot(tmp_path / "empty", "--out", tmp_path / "e.png", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "no metrics" in r.stderr and not (tmp_path / "e.png").exists()
    blank = _run_dir(tmp_path, "blank", 0, rows=0)
    r = _plot(blank, cwd=tmp_path)
    assert r.returncode == 2 and "has no rows" in r.stderr
    # of several runs (runs/*), one without metrics is left out, said; none at all is refused
    good = _run_dir(tmp_path, "good", 1, rows=5)
    r = _plot(good, tmp_path / "empty", "--out", tmp_path / "two.png", cwd=tmp_path)
    assert r.returncode == 0 and "left out" in r.stderr and "empty" in r.stderr, r.stderr
    _png_size(tmp_path / "two.png")
    r = _plot(tmp_path / "empty", blank, "--out", tmp_path / "none.png", cwd=tmp_path)
    assert r.returncode == 2 and "none of the runs has metrics" in r.stderr


def test_read_metrics_in_process(tmp_path):
    from volley import plot
    m = plot.read_metrics(_run_dir(tmp_path, "r", 2, rows=5))
    assert m["env_steps"] == [8192.0 * (i + 1) for i in range(5)]
    assert m["time_s"][0] == 0 and m["_skipped"] == 0


def test_rows_without_episodes_or_updates_are_not_drawn(tmp_path):
    from volley import plot
    d = tmp_path / "r"
    d.mkdir()
    rows = [{"env_steps": 0, "version": 0, "window": 0, "return_mean": 0, "loss_pi": 0},
            {"env_steps": 10, "version": 2, "window": 5, "return_mean": 20, "loss_pi": -0.1}]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = plot.read_metrics(d)
    assert math.isnan(m["return_mean"][0]) and m["return_mean"][1] == 20
    assert math.isnan(m["loss_pi"][0]) and m["loss_pi"][1] == -0.1


def test_the_title_names_the_env_of_a_learner_run(tmp_path):
    # A learner's --run-dir writes [learner] env, not [up]; a metrics.jsonl names its run too.
    run = _run_dir(tmp_path, "lrn", 0, rows=5)
    (run / "config.ini").write_text("[learner]\nenv = catch\nhidden = 64\n")
    r = _plot(run / "metrics.jsonl", "--out", tmp_path / "t.png", "--svg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "t.svg").read_text()
    assert "volley: 1 run (catch)" in svg and "(?)" not in svg


def test_plot_runs_on_the_programs_own_library(tmp_path):
    # The package somewhere without <repo>/build beside it (as from `cmake -B out`) and no
    # VOLLEY_LIB: volley tells Python which libvolley it runs on.
    import shutil
    pkg = tmp_path / "src" / "bindings" / "python"
    shutil.copytree(Path(__file__).resolve().parents[1] / "volley", pkg / "volley",
                    ignore=shutil.ignore_patterns("__pycache__"))
    run = _run_dir(tmp_path, "r", 0, rows=5)
    env = {k: v for k, v in os.environ.items() if k not in ("VOLLEY_LIB", "PYTHONPATH")}
    env["VOLLEY_PYTHONPATH"] = str(pkg)
    r = subprocess.run([VOLLEY, "plot", str(run)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    _png_size(run / "curves.png")
    lib = Path(VOLLEY).resolve().parent / "libvolley.so"
    if lib.exists():  # nothing of this machine compiled into the library
        data = lib.read_bytes()
        assert b"bindings/python" not in data and b"/usr/bin/python3" not in data
