"""volley.env_fn: the env function a command line names as package.module:function
(`python3 -m volley actor --env MOD:FN`, `python3 -m volley eval --env MOD:FN`)."""
import importlib
import os
import sys
from typing import Any, Callable

__all__ = ["load_env_fn"]


def load_env_fn(text: str, cmd: str = "actor") -> Callable[[], Any]:
    """The function text names as package.module:function, imported with the
    current directory first on sys.path; SystemExit(2) after one line naming
    text and why (`volley CMD: --env 'TEXT': ...`) when it is not one."""
    mod, sep, attr = text.partition(":")
    if not sep or not mod or not attr:
        print(f"volley {cmd}: --env '{text}': expected package.module:function", file=sys.stderr)
        raise SystemExit(2)
    sys.path.insert(0, os.getcwd())
    try:
        fn: Callable[[], Any] = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        print(f"volley {cmd}: --env '{text}': {e}", file=sys.stderr)
        raise SystemExit(2)
    return fn
