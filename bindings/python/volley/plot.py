"""python3 -m volley.plot RUN [RUN...] [--out FILE.png] [--svg]   (what `volley plot` runs)

Learning curves of one run or several side by side (a seed sweep: one line per
run, labelled by its name), from each run's metrics.jsonl (one JSON object per
line: env_steps, wall_time, return_mean, loss_pi, ...; a key a run lacks is
left out of its panels). Drawn with matplotlib (Debian's python3-matplotlib)
to a PNG, and an SVG beside it with --svg. Exit 0 when drawn, 2 on bad usage
or a run without metrics.
"""
import argparse
import configparser
import json
import math
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

# A run's metrics: {key: [float, ...]} and "_skipped": the count of malformed lines.
Metrics = Dict[str, Union[List[float], int]]
Panel = Tuple[str, str, List[Tuple[str, str, str]], Optional[Tuple[str, str]], str]

# (title, x key, [(y key, label suffix, line style)], band keys or None, y label)
PANELS: List[Panel] = [
    ("return vs env steps", "env_steps", [("return_mean", "", "-")],
     ("return_min", "return_max"), "episode return"),
    ("return vs wall time", "time_s", [("return_mean", "", "-")],
     ("return_min", "return_max"), "episode return"),
    ("throughput", "env_steps", [("steps_per_s", "", "-")], None, "env steps / s"),
    ("policy loss", "env_steps", [("loss_pi", "", "-")], None, "clipped surrogate"),
    ("value loss", "env_steps", [("loss_v", "", "-")], None, "0.5 (v - target)^2"),
    ("entropy", "env_steps", [("entropy", "", "-")], None, "nats"),
    ("approx KL, clip fraction", "env_steps",
     [("approx_kl", " approx KL", "-"), ("clip_frac", " clip fraction", ":")], None, ""),
    ("explained variance", "env_steps", [("explained_var", "", "-")], None, ""),
    ("policy lag (median, min-max)", "env_steps", [("lag_median", "", "-")],
     ("lag_min", "lag_max"), "versions"),
]
XLABELS = {"env_steps": "env steps", "time_s": "wall time (s)"}
# Mean returns that count as solved, for a reference line on the return panels.
SOLVED = {"cartpole": 475.0}


class PlotError(Exception):
    """A run that cannot be drawn, with the reason (exit 2)."""


def _number(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v) if math.isfinite(v) else math.nan


def _mask(out: Dict[str, List[float]], gate: str, keys: Sequence[str]) -> None:
    """NaN (not drawn) where gate is 0: returns of a row with no episode in its
    window (window 0), losses of a row before the first update (version 0)."""
    if gate not in out:
        return
    for k in keys:
        if k in out:
            out[k] = [math.nan if g == 0 else v for g, v in zip(out[gate], out[k])]


def read_metrics(run: str) -> Metrics:
    """A run's metrics as {key: [float, ...]} (rows in file order; NaN where a
    row lacks the key), plus "time_s": seconds since the run's first row. run is
    a run directory or a metrics.jsonl. Malformed lines are skipped and counted
    in "_skipped". Raises PlotError when there is no row to draw."""
    path = os.path.join(run, "metrics.jsonl") if os.path.isdir(run) else run
    if not os.path.isfile(path):
        raise PlotError(f"{run}: no metrics ({path} is missing; is it a run directory?)")
    rows: List[Dict[str, Any]] = []
    skipped = 0
    with open(path, "rb") as f:
        for line in f:
            try:
                row = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                row = None
            if isinstance(row, dict):
                rows.append(row)
            elif line.strip():
                skipped += 1
    if not rows:
        raise PlotError(f"{run}: no metrics ({path} has no rows)")
    keys = sorted({k for row in rows for k in row})
    out = {k: [_number(row.get(k)) for row in rows] for k in keys}
    _mask(out, "window", ("return_mean", "return_min", "return_max", "length_mean"))
    _mask(out, "version", ("loss_pi", "loss_v", "entropy", "approx_kl", "clip_frac",
                           "explained_var"))
    if "uptime_s" in out:  # seconds since the learner started
        out["time_s"] = out["uptime_s"]
    elif "wall_time" in out:
        t0 = next((t for t in out["wall_time"] if not math.isnan(t)), 0.0)
        out["time_s"] = [t - t0 for t in out["wall_time"]]
    metrics: Metrics = dict(out)
    metrics["_skipped"] = skipped
    return metrics


def run_env(run: str) -> Optional[str]:
    """The env a run trained on, or None: its config.ini's [up] env (volley up),
    else [actor]'s, else [learner]'s (a learner's --run-dir). run is a run
    directory or a metrics.jsonl in one."""
    d = run if os.path.isdir(run) else os.path.dirname(os.path.abspath(run))
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(os.path.join(d, "config.ini"))
        for section in ("up", "actor", "learner"):
            env = cfg.get(section, "env", fallback=None)
            if env and env != "?":  # "?": a learner that never learnt its env's name
                return env
    except (configparser.Error, UnicodeDecodeError):
        pass
    return None


def run_label(run: str) -> str:
    """A run's name for the legend: its directory's name."""
    path = os.path.normpath(os.path.abspath(run))
    if os.path.isfile(path):
        path = os.path.dirname(path)
    return os.path.basename(path)


def _pairs(m: Metrics, xkey: str, ykey: str) -> Tuple[List[float], List[float]]:
    """(xs, ys) where both are numbers."""
    xs, ys = m.get(xkey), m.get(ykey)
    if not isinstance(xs, list) or not isinstance(ys, list) or not xs or not ys:
        return [], []
    pts = [(x, y) for x, y in zip(xs, ys) if not (math.isnan(x) or math.isnan(y))]
    return [p[0] for p in pts], [p[1] for p in pts]


def _draw_panel(ax: Any, panel: Panel, runs: Sequence[Tuple[str, Metrics]],
                colors: Sequence[Any], solved: Optional[float]) -> None:
    title, xkey, lines, band, ylabel = panel
    drawn = False
    for (label, m), color in zip(runs, colors):
        if band:
            xs, lo = _pairs(m, xkey, band[0])
            xs2, hi = _pairs(m, xkey, band[1])
            if xs and xs == xs2:
                ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0)
        for ykey, suffix, style in lines:
            xs, ys = _pairs(m, xkey, ykey)
            if xs:
                ax.plot(xs, ys, style, color=color, linewidth=1.4, label=label + suffix)
                drawn = True
    if solved is not None and title.startswith("return") and drawn:
        ax.axhline(solved, color="0.4", linestyle="--", linewidth=0.9)
        ax.annotate(f"solved {solved:g}", xy=(0.01, solved), xycoords=("axes fraction", "data"),
                    va="bottom", fontsize=8, color="0.3")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(XLABELS.get(xkey, xkey), fontsize=8)
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, alpha=0.3)
    if xkey == "env_steps":
        from matplotlib.ticker import EngFormatter
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        if lines[0][0] == "steps_per_s":
            ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    if len(lines) > 1 and drawn:  # which line is which metric; colours are runs
        from matplotlib.lines import Line2D
        ax.legend([Line2D([], [], color="0.2", linestyle=st) for _, _, st in lines],
                  [suffix.strip() for _, suffix, _ in lines], fontsize=7, loc="best")
    if not drawn:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes,
                color="0.5")


def plot(runs: Sequence[str], out: str, svg: bool = False) -> List[str]:
    """Draws the runs' curves (a list of run directories) into out (.png) and,
    with svg, out with .svg. Returns the files written. Raises PlotError."""
    metrics: List[Tuple[str, Metrics]] = []
    kept: List[str] = []
    for r in runs:  # refuse a bad run first; of several, a run without metrics is left out
        try:
            metrics.append((run_label(r), read_metrics(r)))
            kept.append(r)
        except PlotError as e:
            if len(runs) == 1:
                raise
            print(f"volley plot: left out {e}", file=sys.stderr)
    if not metrics:
        raise PlotError("none of the runs has metrics")
    runs = kept
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for r, (_, m) in zip(runs, metrics):
        if m["_skipped"]:
            print(f"volley plot: {r}: {m['_skipped']} malformed lines skipped", file=sys.stderr)
    envs = {env for env in map(run_env, runs) if env is not None}
    solved = SOLVED.get(envs.pop()) if len(envs) == 1 else None
    colors = [plt.get_cmap("tab10")(i % 10) for i in range(len(metrics))]
    fig, axes = plt.subplots(3, 3, figsize=(15, 11))
    for ax, panel in zip(axes.flat, PANELS):
        _draw_panel(ax, panel, metrics, colors, solved)
    handles = [plt.Line2D([], [], color=c, linewidth=2) for c in colors]
    fig.legend(handles, [name for name, _ in metrics], loc="upper center",
               ncol=min(len(metrics), 6), fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.965))
    named = sorted({env for env in map(run_env, runs) if env is not None})
    env_text = ", ".join(named) if named else "env unknown"
    fig.suptitle(f"volley: {len(metrics)} run{'s' if len(metrics) > 1 else ''} ({env_text})",
                 y=0.995, va="top", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    written = [out]
    fig.savefig(out, dpi=100)
    if svg:
        stem = out[:-4] if out.lower().endswith(".png") else out
        written.append(stem + ".svg")
        fig.savefig(written[-1])
    plt.close(fig)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="volley plot", description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="RUN",
                    help="run directories (runs/NAME, holding metrics.jsonl) or metrics.jsonl files")
    ap.add_argument("--out", metavar="FILE.png",
                    help="the picture (default: RUN/curves.png for one run, curves.png here "
                         "for several)")
    ap.add_argument("--svg", action="store_true", help="also write FILE.svg beside the PNG")
    a = ap.parse_args(argv)
    out = a.out or (os.path.join(a.runs[0], "curves.png")
                    if len(a.runs) == 1 and os.path.isdir(a.runs[0]) else "curves.png")
    try:
        written = plot(a.runs, out, svg=a.svg)
    except PlotError as e:
        print(f"volley plot: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"volley plot: {e} (install python3-matplotlib)", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"volley plot: {e}", file=sys.stderr)
        return 1
    print("volley plot: wrote " + " and ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
