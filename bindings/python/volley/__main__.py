"""python3 -m volley COMMAND ...: the package's commands, each in its own module.

  actor    volley.actor_cmd       Gymnasium-style envs from Python on volley's actors
  learner  volley.torch.learner   `learner --torch`: the C learner with the PyTorch engine
  plot     volley.plot            learning curves of runs to PNG/SVG
  eval     volley.evaluate        a kept policy on a Python env
"""
import importlib
import sys
from typing import Optional, Sequence

USAGE = """\
usage: python3 -m volley actor --env pkg.mod:make_env --broker HOST[:PORT] ...
  actor   Gymnasium-style envs from Python on volley (actor --help)
  learner --torch  a PyTorch learner for volley's actors (learner --torch --help)
  plot    learning curves of runs to PNG/SVG, as `volley plot` (plot --help)
  eval    a kept policy on a Python env, as `volley eval --env MOD:FN` (eval --help)"""

# command -> the module whose main(argv) runs it (imported only when named)
COMMANDS = {"actor": ".actor_cmd", "learner": ".torch.learner", "plot": ".plot",
            "eval": ".evaluate"}


def _learner_without_torch(args: Sequence[str]) -> bool:
    """True when `learner` is given without --torch (and without asking for help)."""
    return "--torch" not in args and not {"-h", "--help"} & set(args)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command argv names (default: sys.argv[1:]); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"python3 -m volley: unknown command '{name}' (try --help)", file=sys.stderr)
        return 2
    if name == "learner" and _learner_without_torch(args):
        print("python3 -m volley learner: give --torch (the C learner is `volley learner`)",
              file=sys.stderr)
        return 2
    rc: int = importlib.import_module(COMMANDS[name], __package__).main(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
