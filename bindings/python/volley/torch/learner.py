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
--compile (torch.compile, PyTorch 2), --amp bf16 (bfloat16 autocast),
--torch-model MOD:FN (a module of one's own, volley.torch.custom: the
policy's model becomes torch:MOD:FN, which Python actors started with the
same --torch-model act with; a policy whose spec at the broker names
torch:MOD:FN is trained with that module without the flag).
torch's CPU threads: the learner's --threads, else 1. --device cuda where
this torch has no CUDA is refused (exit 2); a device left unset is logged,
with a warning when it is the CPU while an NVIDIA GPU is visible. On CUDA,
--minibatch defaults to 2048 (minibatch_for).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
from typing import Any, List, Optional, Sequence, Tuple

import torch

from .. import engine as E
from . import custom
from .engine import TorchEngine, default_device

__all__ = ["TorchLearner", "main", "split_argv", "minibatch_for", "TORCH_HELP", "CUDA_MINIBATCH"]

# Samples per Adam step on a CUDA device unless --minibatch says: a GPU takes a step on 2048
# about as fast as on the C learner's 256, so an update's epochs cost an eighth of the steps.
CUDA_MINIBATCH = 2048

TORCH_HELP = f"""\

torch options (python3 -m volley learner --torch):
  --device D         torch device: cpu, cuda, cuda:N (default: cuda when this torch
                     has CUDA, else cpu); cuda without CUDA is refused
  --compile          torch.compile the module (PyTorch 2)
  --amp bf16         forward and loss under bfloat16 autocast on the device
  --torch-model MOD:FN
                     train the nn.Module MOD.FN(spec) returns (the policy's model
                     becomes torch:MOD:FN; act with PYTHON -m volley actor
                     --torch-model MOD:FN, this same PYTHON; C actors refuse
                     it)
torch's CPU threads: --threads, else 1. On cuda, --minibatch defaults to {CUDA_MINIBATCH}.
"""


def minibatch_for(device: torch.device, argv: Sequence[str]) -> Optional[int]:
    """The --minibatch the torch learner adds to the C learner's arguments
    argv: CUDA_MINIBATCH on a CUDA device when argv gives none (a GPU is
    fastest on large minibatches), else None (argv's, or the C learner's
    default)."""
    keys = (a.partition("=")[0] for a in argv)  # getopt_long takes --mini for --minibatch
    given = any(k.startswith("--mini") and "--minibatch".startswith(k) for k in keys)
    return CUDA_MINIBATCH if device.type == "cuda" and not given else None


def _torch_found() -> str:
    """'torch VERSION (FOLDER)': which torch this Python imports."""
    return f"torch {torch.__version__} ({os.path.dirname(torch.__file__)})"


def _no_cuda() -> str:
    """Why this torch cannot train on CUDA, and what to do about it."""
    if torch.version.cuda is None:
        py = sys.executable
        return (f"this Python's {_torch_found()} has no CUDA; install a CUDA build into it "
                f"({py} -m pip install 'torch>=2' from PyPI, or {py} -m pip install -e "
                f"'bindings/python[torch]' in the checkout) or point VOLLEY_PYTHON at a Python "
                f"whose torch has CUDA")
    return (f"this Python's {_torch_found()} is built for CUDA {torch.version.cuda} but finds "
            f"no GPU (nvidia-smi shows what the driver sees; CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')})")


def _visible_gpu() -> Optional[str]:
    """How an NVIDIA GPU shows itself on this machine (nvidia-smi -L, /dev/nvidia0,
    CUDA_VISIBLE_DEVICES), or None when none does."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "") not in ("", "NoDevFiles"):
        return f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']}"
    if os.path.exists("/dev/nvidia0"):
        return "/dev/nvidia0"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        listed = False
    return "nvidia-smi -L" if listed else None


class TorchOptions:
    """The torch-only flags: device, compile, amp, torch_model (MOD:FN)."""

    def __init__(self, device: Optional[str] = None, compile: bool = False,
                 amp: Optional[str] = None, torch_model: Optional[str] = None) -> None:
        self.device, self.compile, self.amp = device, bool(compile), amp
        self.torch_model = torch_model

    def check(self) -> None:
        """ValueError naming the first option this torch cannot honour (or the
        --torch-model it cannot import)."""
        if self.torch_model is not None:
            custom.load_build(self.torch_model)
        if self.amp not in (None, "bf16"):
            raise ValueError(f"--amp: expected bf16, got {self.amp!r}")
        if self.compile and not hasattr(torch, "compile"):
            raise ValueError(f"--compile: torch.compile needs PyTorch 2; this is "
                             f"{torch.__version__}")
        if self.device is None:
            return
        try:
            dev = torch.device(self.device)
        except RuntimeError as e:
            raise ValueError(f"--device: {e}") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"--device {self.device}: {_no_cuda()}")
        if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"--device {self.device}: torch sees {torch.cuda.device_count()} "
                             f"GPU(s), cuda:0 to cuda:{torch.cuda.device_count() - 1}")

    def choose(self) -> torch.device:
        """The device to train on: --device as given, else the default
        (CUDA when this torch has it, else the CPU), which is logged, with a
        warning when it is the CPU while an NVIDIA GPU is visible. Sets
        device to it."""
        if self.device is not None:
            return torch.device(self.device)
        dev = default_device()
        self.device = str(dev)
        _log(f"device {dev} (--device unset: cuda when this torch has CUDA, else cpu)")
        gpu = _visible_gpu() if dev.type == "cpu" else None
        if gpu:
            _log(f"an NVIDIA GPU is visible ({gpu}) but not used: {_no_cuda()} (--device cpu "
                 f"says the CPU is meant)", "warning")
        return dev

    def model_args(self, argv: Sequence[str]) -> List[str]:
        """The C learner's --model for --torch-model (none without it).
        ValueError when argv names a --model too."""
        if self.torch_model is None:
            return []
        if any(a.partition("=")[0] == "--model" for a in argv):
            raise ValueError("--torch-model and --model both name the network: give one")
        return ["--model", custom.model_text(self.torch_model)]

    def open(self, config: E.Config) -> TorchEngine:
        """The engine for the learner's config: volley.torch's network of its
        model spec, or for a torch:MOD:FN spec the module MOD.FN builds."""
        torch.set_num_threads(config.threads or 1)
        module = None
        if custom.is_model_text(config.model):
            module = custom.build_net(config.model, config, seed=config.seed)
        engine = TorchEngine(config, device=self.device, compile=self.compile, amp=self.amp,
                             module=module)
        if E._lib.has("vl_engine_set_device"):  # the learner's progress line names it
            E._lib.lib.vl_engine_set_device(str(engine.device).encode())
        _log(f"torch engine: {config.model} on {engine.device} (torch {torch.__version__}, "
             f"{torch.get_num_threads()} CPU threads, compile {'on' if self.compile else 'off'}, "
             f"amp {self.amp or 'off'})")
        return engine


def _log(text: str, level: str = "info") -> None:
    """One line on stderr as the C learner logs: time, role, pid, level."""
    import time
    now = time.time()
    print(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now % 1 * 1000):03d} "
          f"learner[{os.getpid()}] {level}: {text}", file=sys.stderr, flush=True)


def _with_minibatch(argv: List[str], device: torch.device) -> List[str]:
    """argv with minibatch_for's --minibatch added (and logged) when it gives one."""
    n = minibatch_for(device, argv)
    if n is None:
        return argv
    _log(f"minibatch {n} for {device.type} (--minibatch sets it)")
    return argv + ["--minibatch", str(n)]


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
        elif key in ("--device", "--amp", "--torch-model"):
            if not eq:
                if i + 1 >= len(argv):
                    raise ValueError(f"{key}: needs a value")
                i, val = i + 1, argv[i + 1]
            setattr(opts, key[2:].replace("-", "_"), val)
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
        rest += opts.model_args(rest)
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
        return E.main_engine(["learner"] + _with_minibatch(rest, opts.choose()), opts.open)
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
    compile, amp and torch_model ("pkg.mod:build", a module of one's own:
    volley.torch.custom) as the command's torch options. run() trains until
    the run ends (--max-steps, SIGINT or SIGTERM) and returns the exit code;
    engine is then the TorchEngine that trained."""

    def __init__(self, broker: str = "127.0.0.1:7600", policy: str = "default",
                 device: Any = None, compile: bool = False, amp: Optional[str] = None,
                 torch_model: Optional[str] = None, **flags: Any) -> None:
        self.options = TorchOptions(None if device is None else str(device), compile, amp,
                                    torch_model)
        self.options.check()
        self.argv = ["learner", "--broker", broker, "--policy", policy] + _flag_args(flags)
        self.argv += self.options.model_args(self.argv)
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
            return E.main_engine(_with_minibatch(self.argv, self.options.choose()), self._open)
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
