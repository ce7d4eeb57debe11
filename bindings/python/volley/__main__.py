"""python3 -m volley actor --env pkg.mod:make_env --broker HOST[:PORT] ...

Steps N Gymnasium-style envs from Python with volley's policy (in C) and
pushes their segments to the broker, as `volley actor` does with C envs.
Exit codes as `volley actor`'s: 0 after SIGINT/SIGTERM (or --steps done), 1
on an error (an env that raises: its traceback), 2 on bad usage or when the
broker refused this actor's spec.
"""
import argparse
import importlib
import os
import signal
import sys
import traceback

USAGE_ACTOR = """\
Steps N environments written in Python (Gymnasium's API: reset(seed=...) ->
(obs, info), step(a) -> (obs, reward, terminated, truncated, info)) with the
newest weights of a policy, running volley's policy in C, and pushes one
segment of T steps per environment to the broker. Gymnasium is not needed.
Spaces: Box float32/uint8, MultiBinary, a Dict of those; actions Discrete,
MultiDiscrete (an int64 array a step) or a one-dimensional Box of finite
bounds (a float32 array, volley's Gaussian draws clipped to the bounds).
"""


def _load_env_fn(text, cmd="actor"):
    mod, sep, attr = text.partition(":")
    if not sep or not mod or not attr:
        print(f"volley {cmd}: --env '{text}': expected package.module:function", file=sys.stderr)
        raise SystemExit(2)
    sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        print(f"volley {cmd}: --env '{text}': {e}", file=sys.stderr)
        raise SystemExit(2)
    return fn


def _spec_name(text):
    """The env's name in the spec: MOD:FN itself, so that the learner's run
    records how to make the env again (`volley eval RUN` plays it); None
    (the env's own name) when it does not fit the wire's 63 printable bytes."""
    return text if len(text) < 64 and text.isprintable() and text.isascii() else None


class _Stop(BaseException):
    pass


def _on_term(signum, frame):
    raise _Stop()


def actor_main(argv):
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
    a = ap.parse_args(argv)
    if a.envs < 1:
        ap.error("--envs must be >= 1")
    make = _load_env_fn(a.env)
    from . import actor as va
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with it ignored
    try:
        first = make()
        envs = first if va._is_vector(first) else [first] + [make() for _ in range(a.envs - 1)]
        n = va.run_actor(envs, broker=a.broker, policy=a.policy, horizon=a.horizon,
                         hidden=a.hidden, actor_id=a.actor_id or os.getpid(), seed=a.seed,
                         max_steps=a.steps or None, max_ahead=a.max_ahead, wait_ms=a.wait_ms,
                         name=_spec_name(a.env), obs_check=a.obs_check, model=a.model)
        print(f"volley actor: {n} env steps", file=sys.stderr)
        return 0
    except (KeyboardInterrupt, _Stop, va.ActorInterrupted):
        return 0
    except va.SpecRefused as e:
        print(f"volley actor: the broker refused this actor: {e}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        print("volley actor: stopped by the error above", file=sys.stderr)
        return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m volley actor --env pkg.mod:make_env --broker HOST[:PORT] ...\n"
              "  actor   Gymnasium-style envs from Python on volley (actor --help)\n"
              "  learner --torch  a PyTorch learner for volley's actors (learner --torch --help)\n"
              "  plot    learning curves of runs to PNG/SVG, as `volley plot` (plot --help)\n"
              "  eval    a kept policy on a Python env, as `volley eval --env MOD:FN` (eval --help)")
        return 0 if argv else 2
    if argv[0] == "actor":
        return actor_main(argv[1:])
    if argv[0] == "learner":
        if "--torch" not in argv[1:] and not {"-h", "--help"} & set(argv[1:]):
            print("python3 -m volley learner: give --torch (the C learner is `volley learner`)",
                  file=sys.stderr)
            return 2
        from .torch.learner import main as learner_main
        return learner_main(argv[1:])
    if argv[0] == "plot":
        from .plot import main as plot_main
        return plot_main(argv[1:])
    if argv[0] == "eval":
        from .evaluate import main as eval_main
        return eval_main(argv[1:])
    print(f"python3 -m volley: unknown command '{argv[0]}' (try --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
