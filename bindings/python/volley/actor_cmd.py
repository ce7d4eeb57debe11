"""python3 -m volley actor --env pkg.mod:make_env --broker HOST[:PORT] ...

Steps N Gymnasium-style envs from Python with volley's policy (in C) and
pushes their segments to the broker, as `volley actor` does with C envs.
Exit codes as `volley actor`'s: 0 after SIGINT/SIGTERM (or --steps done), 1
on an error (an env that raises: its traceback), 2 on bad usage (a flag the
actor cannot open with, such as a --model spec that does not build), an
observation volley refuses (outside its field's range or encoding), or when
the broker refused this actor's spec or its CURVE key: one line saying why.
"""
import argparse
import os
import signal
import sys
import traceback
from types import FrameType
from typing import Any, Optional, Sequence, Tuple

from . import actor as va
from .env_fn import load_env_fn

__all__ = ["main", "parser", "spec_name", "torch_policy_of", "USAGE_ACTOR"]

USAGE_ACTOR = """\
Steps N environments written in Python (Gymnasium's API: reset(seed=...) ->
(obs, info), step(a) -> (obs, reward, terminated, truncated, info)) with the
newest weights of a policy, running volley's policy in C, and pushes one
segment of T steps per environment to the broker. Gymnasium is not needed.
Spaces: Box float32/uint8, MultiBinary, a Dict of those; actions Discrete,
MultiDiscrete (an int64 array a step) or a one-dimensional Box of finite
bounds (a float32 array, volley's Gaussian draws clipped to the bounds).
A uint8 screen, (H, W), (H, W, C) or (C, H, W), is sent channels first; how
it is read is said once at the start (--obs-layout declares it).
"""


def spec_name(text: str) -> Optional[str]:
    """The env's name in the spec: MOD:FN itself, so that the learner's run
    records how to make the env again (`volley eval RUN` plays it); None
    (the env's own name) when it does not fit the wire's 63 printable bytes."""
    return text if len(text) < 64 and text.isprintable() and text.isascii() else None


class _Stop(BaseException):
    pass


def _on_term(signum: int, frame: Optional[FrameType]) -> None:
    raise _Stop()


def torch_policy_of(a: argparse.Namespace, envs: Any) -> Tuple[Any, Optional[str]]:
    """(policy_fn, model) of the flags: with --torch-model, the caller's torch
    module built for the spec the actor declares, and the model text that
    names it (unless --model is given); without, (None, --model)."""
    if not a.torch_model:
        return None, a.model
    from .torch.actor import model_text, torch_policy
    first = envs if va.is_vector(envs) else envs[0]
    fn = torch_policy(a.torch_model, va._as_spec(first, layout=a.obs_layout),
                      device=a.torch_device)
    return fn, a.model or model_text(a.torch_model)


def parser() -> argparse.ArgumentParser:
    """The command's flags."""
    ap = argparse.ArgumentParser(prog="python3 -m volley actor", description=USAGE_ACTOR,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", required=True, metavar="MOD:FN",
                    help="a function returning one env (called N times) or a vector env")
    ap.add_argument("--broker", required=True, metavar="HOST[:PORT]", help="the broker")
    ap.add_argument("--policy", default="default", help="policy to act for (default: default)")
    ap.add_argument("--envs", type=int, default=8, help="environments stepped together (8)")
    ap.add_argument("--horizon", type=int, default=64, help="steps per segment, as the learner's")
    ap.add_argument("--hidden", type=int, default=64, help="hidden units, as the learner's")
    ap.add_argument("--model", default=None, metavar="SPEC",
                    help="the network, as the learner's: a model spec such as 'cnn' or "
                         "'linear(128) relu' (default: cnn for image observations, else "
                         "mlp(--hidden))")
    ap.add_argument("--seed", type=int, default=1, help="envs and sampling, mixed with the id")
    ap.add_argument("--actor-id", "--id", type=int, default=0, help="actor id (0: the pid)")
    ap.add_argument("--max-ahead", type=int, default=1,
                    help="segments per env on one weights version before waiting (0: never)")
    ap.add_argument("--wait-ms", type=int, default=500, help="longest such wait")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many env steps (0: never)")
    ap.add_argument("--obs-check", choices=("error", "warn", "off"), default="error",
                    help="an observation value outside its element's declared bounds: stop the "
                         "actor naming it (error, default), send it after one warning (warn), or "
                         "do not check (off), for envs whose declared bounds are approximate; "
                         "NaN and infinities are refused in every mode")
    ap.add_argument("--obs-layout", choices=va.LAYOUTS, default=None,
                    help="how a uint8 screen's axes come: HWC (channels last), CHW (first) or "
                         "HW (one channel); default: detected (channels are an end of 4 or "
                         "fewer), and said at the start")
    ap.add_argument("--cert", metavar="FILE",
                    help="our CURVE certificate (from `volley keygen`; the secret key is read "
                         "from FILE_secret): encrypt and authenticate")
    ap.add_argument("--broker-key", metavar="FILE",
                    help="the broker's public certificate (with --cert)")
    ap.add_argument("--torch-model", metavar="MOD:FN",
                    help="act with your own torch module (MOD:FN builds it from the spec, as the "
                         "torch learner's --torch-model)")
    ap.add_argument("--torch-device", default="cpu", metavar="D",
                    help="where --torch-model's module runs (default: cpu)")
    return ap


def main(argv: Sequence[str]) -> int:
    """`python3 -m volley actor ...` (argv after `actor`); returns the exit code."""
    ap = parser()
    a = ap.parse_args(argv)
    if a.envs < 1:
        ap.error("--envs must be >= 1")
    if (a.cert is None) != (a.broker_key is None):
        ap.error("--cert and --broker-key go together")
    make = load_env_fn(a.env)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with it ignored
    try:
        first = make()
        envs = first if va.is_vector(first) else [first] + [make() for _ in range(a.envs - 1)]
        policy_fn, model = torch_policy_of(a, envs)
        n = va.run_actor(envs, broker=a.broker, policy=a.policy, horizon=a.horizon,
                         hidden=a.hidden, actor_id=a.actor_id or os.getpid(), seed=a.seed,
                         max_steps=a.steps or None, max_ahead=a.max_ahead, wait_ms=a.wait_ms,
                         name=spec_name(a.env), obs_check=a.obs_check, model=model,
                         cert=a.cert, broker_key=a.broker_key, layout=a.obs_layout,
                         policy_fn=policy_fn)
        print(f"volley actor: {n} env steps", file=sys.stderr)
        return 0
    except (KeyboardInterrupt, _Stop, va.ActorInterrupted):
        return 0
    except va.ParamsRefused as e:
        what = f"--{e.param} '{e.value}': " if e.param else ""
        print(f"volley actor: {what}{e.reason}", file=sys.stderr)
        return 2
    except (va.SpecRefused, va.KeyRefused, va.ValueRefused) as e:
        print(f"volley actor: {e}", file=sys.stderr)  # libvolley's reason says who refused
        return 2
    except Exception:
        traceback.print_exc()
        print("volley actor: stopped by the error above", file=sys.stderr)
        return 1
