"""volley.torch.learner: volley's learner training with PyTorch, in-process
(TorchLearner) and as `python3 -m volley learner --torch` (main).

The learner is the C learner (learner/, include/volley/engine.h): every
flag of `volley learner`, its run directory, checkpoints and --resume,
--retain, --max-steps, metrics and progress reports, the learning-rate
schedule and observation/reward normalisation. Only the engine that takes
each update is PyTorch's: volley.torch.engine.TorchEngine, holding
volley.torch.model's module of the policy's model spec (the C model's tensors, so
C actors act with what it publishes) and its Adam.

    python3 -m volley learner --torch --broker 127.0.0.1 --env cartpole \\
        --run-dir runs/cp [--device cuda] [--compile] [--amp bf16]

    from volley.torch import TorchLearner
    TorchLearner("127.0.0.1:7600", env="cartpole", max_steps=200000).run()

torch options: --device D (default cuda when available, else cpu),
--compile (torch.compile, PyTorch 2), --amp bf16 (bfloat16 autocast).
torch's CPU threads: the learner's --threads, else 1.
"""
from __future__ import annotations

import ctypes
import signal
import sys
from typing import Any, List, Optional, Sequence, Tuple

import torch

from .. import engine as E
from .engine import TorchEngine

__all__ = ["TorchLearner", "main", "split_argv", "TORCH_HELP"]

TORCH_HELP = """\

torch options (python3 -m volley learner --torch):
  --device D         torch device (default: cuda when available, else cpu)
  --compile          torch.compile the module (PyTorch 2)
  --amp bf16         forward and loss under bfloat16 autocast on the device
torch's CPU threads: --threads, else 1.
"""


class TorchOptions:
    """The torch-only flags: device, compile, amp."""

    def __init__(self, device: Optional[str] = None, compile: bool = False,
                 amp: Optional[str] = None) -> None:
        self.device, self.compile, self.amp = device, bool(compile), amp

    def check(self) -> None:
        """ValueError naming the first option this torch cannot honour."""
        if self.amp not in (None, "bf16"):
            raise ValueError(f"--amp: expected bf16, got {self.amp!r}")
        if self.compile and not hasattr(torch, "compile"):
            raise ValueError(f"--compile: torch.compile needs PyTorch 2; this is "
                             f"{torch.__version__}")
        if self.device is not None:
            try:
                torch.device(self.device)
            except RuntimeError as e:
                raise ValueError(f"--device: {e}") from None

    def open(self, config: E.Config) -> TorchEngine:
        """The engine for the learner's config."""
        torch.set_num_threads(config.threads or 1)
        engine = TorchEngine(config, device=self.device, compile=self.compile, amp=self.amp)
        _log(f"torch engine: {config.model} on {engine.device} (torch {torch.__version__}, "
             f"{torch.get_num_threads()} CPU threads, compile {'on' if self.compile else 'off'}, "
             f"amp {self.amp or 'off'})")
        return engine


def _log(text: str) -> None:
    """One line on stderr as the C learner logs: time, role, pid, level."""
    import os
    import time
    now = time.time()
    print(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now % 1 * 1000):03d} "
          f"learner[{os.getpid()}] info: {text}", file=sys.stderr, flush=True)


def split_argv(argv: Sequence[str]) -> Tuple[List[str], TorchOptions]:
    """(the C learner's arguments, the torch options) of argv, --torch dropped.
    ValueError for a torch option without its value."""
    rest, opts, i = [], TorchOptions(), 0
    argv = list(argv)
    while i < len(argv):
        a = argv[i]
        key, eq, val = a.partition("=")
        if a == "--torch":
            pass
        elif a == "--compile":
            opts.compile = True
        elif key in ("--device", "--amp"):
            if not eq:
                if i + 1 >= len(argv):
                    raise ValueError(f"{key}: needs a value")
                i, val = i + 1, argv[i + 1]
            setattr(opts, key[2:], val)
        else:
            rest.append(a)
        i += 1
    return rest, opts


def _flush_c_stdout() -> None:
    libc = ctypes.CDLL(None)
    libc.fflush(None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python3 -m volley learner --torch ...`; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        rest, opts = split_argv(argv)
        opts.check()
    except ValueError as e:
        print(f"volley learner --torch: {e}", file=sys.stderr)
        return 2
    if {"-h", "--help"} & set(rest):
        sys.stdout.flush()
        rc = E.main_engine(["learner", "--help"], opts.open)
        _flush_c_stdout()
        print(TORCH_HELP, end="", flush=True)
        return rc
    sys.stdout.flush()
    try:
        return E.main_engine(["learner"] + rest, opts.open)
    finally:
        _flush_c_stdout()


def _flag_args(flags: dict) -> List[str]:
    out = []
    for k, v in flags.items():
        if v is None or v is False:
            continue
        out.append("--" + k.replace("_", "-"))
        if v is not True:
            out.append(str(v))
    return out


class TorchLearner:
    """volley's learner with the PyTorch engine, in this process: broker
    "HOST[:PORT]", policy, and any flag of `volley learner` as a keyword
    (env="cartpole", run_dir="runs/x", max_steps=100000, lr=3e-4,
    resume=True ...: underscores for dashes, True for a flag alone); device,
    compile and amp as the command's torch options. run() trains until the
    run ends (--max-steps, SIGINT or SIGTERM) and returns the exit code;
    engine is then the TorchEngine that trained."""

    def __init__(self, broker: str = "127.0.0.1:7600", policy: str = "default",
                 device: Any = None, compile: bool = False, amp: Optional[str] = None,
                 **flags: Any) -> None:
        self.options = TorchOptions(None if device is None else str(device), compile, amp)
        self.options.check()
        self.argv = ["learner", "--broker", broker, "--policy", policy] + _flag_args(flags)
        self.engine: Optional[TorchEngine] = None

    def _open(self, config: E.Config) -> TorchEngine:
        self.engine = self.options.open(config)
        return self.engine

    def run(self) -> int:
        """Runs the learner (blocking) until --max-steps' budget is spent and
        SIGINT or SIGTERM comes (the C learner catches them while it runs;
        Python's handlers are put back after); returns its exit code."""
        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            return E.main_engine(self.argv, self._open)
        finally:
            _flush_c_stdout()
            for s, handler in saved.items():
                if handler is not None:
                    signal.signal(s, handler)

    def weights(self) -> dict:
        """The engine's tensors (C names, float32 NumPy copies); {} before run."""
        return self.engine.state_dict() if self.engine else {}

    def close(self) -> None:
        """Nothing to close: run() ends with the learner."""

    def __enter__(self) -> "TorchLearner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
