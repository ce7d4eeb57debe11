"""python3 -m volley eval RUN|CHECKPOINT [--env MOD:FN] ...   (what `volley eval` runs for a
Python env)

Plays a kept policy on an env written in Python (a function returning one env
with Gymnasium's API, as `python3 -m volley actor --env` takes) and prints, as
its last line, the mean ± std of the episodes' return and length, in
`volley eval`'s words. The policy's forward pass is libvolley's (the C policy
of the checkpoint; a recurrent one carries each env's state, zeroed at each
episode's start), or for a run trained with --torch-model MOD:FN (model
torch:MOD:FN) the user's module, built as the learner built it and fed the
checkpoint's tensors (volley.torch.actor.torch_policy, on the CPU); Python
steps the envs. Episodes are spread evenly over up
to 16 envs (a vector env: over its own num_envs), each playing its own fixed
number (taking the first N to end would favour short ones). Exit 0 after the
episodes, 1 when the env fails, 2 on bad usage or input.
"""
import argparse
import ctypes
import os
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from .action import ActionSpace, CAction, BOX
from .env_fn import load_env_fn
from ._types import ENCODING_NAMES, MODEL_MAX, NDIM_MAX, EnvField

MAX_ENVS = 16
SEED_STRIDE = 0x9E3779B97F4A7C15  # env i's seed: seed + i * stride, as `volley eval`'s
U32x3 = ctypes.c_uint32 * 3
U32x4 = ctypes.c_uint32 * 4
_P = ctypes.c_void_p  # every pointer crosses as an address

_lib.bind({
    "vl_kept_load": (_P, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.c_size_t]),
    "vl_kept_destroy": (None, [ctypes.POINTER(_P)]),
    "vl_kept_info": (ctypes.c_char_p, [_P, ctypes.POINTER(U32x3),
                                       ctypes.POINTER(ctypes.c_uint64)]),
    "vl_kept_policy_id": (ctypes.c_char_p, [_P]),
    "vl_kept_logits": (ctypes.c_int, [_P, ctypes.c_uint32, _P, _P]),
    "vl_kept_state_size": (ctypes.c_uint32, [_P]),
    "vl_kept_step": (ctypes.c_int, [_P, ctypes.c_uint32, _P, _P, _P,
                                    _P]),
    "vl_kept_action": (None, [_P, ctypes.POINTER(CAction)]),
    "vl_kept_seed": (None, [ctypes.c_uint64, _P]),
    "vl_kept_pick": (ctypes.c_int, [_P, ctypes.c_uint32, _P, ctypes.c_int, _P, _P]),
    "vl_kept_tensor": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, _P, ctypes.c_size_t,
                                      ctypes.c_char_p, ctypes.c_size_t]),
    "vl_kept_model": (ctypes.c_char_p, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "vl_kept_is_torch": (ctypes.c_int, [_P]),
    "vl_kept_field": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(EnvField)]),
    "vl_kept_tensor_count": (ctypes.c_uint32, [_P]),
    "vl_kept_tensor_at": (ctypes.c_char_p, [_P, ctypes.c_uint32, ctypes.POINTER(U32x4),
                                            ctypes.POINTER(ctypes.c_uint32),
                                            ctypes.POINTER(ctypes.POINTER(ctypes.c_float))]),
})


class Kept:
    """A kept policy (checkpoint file or run directory) loaded by libvolley:
    obs_dim, num_actions (the head's outputs), hidden, version, policy_id,
    env (the run's, "" when unknown), action (its ActionSpace), logstd (a
    box's pi.logstd [dims], else None), state_size (floats of one env's
    recurrent state, 0 for a memoryless policy), recurrent (state_size > 0),
    model (the model spec's text), torch (True for torch:MOD:FN: a module of
    one's own, which only fields() and tensors() serve; the C forward pass
    and pick fail on it),
    logits(obs [n, obs_dim]) by the C forward pass (observations normalised
    as the weights say; one step from the zero state) and step(obs, state,
    first), the same carrying each env's state; pick(outputs, greedy, rng),
    the actions the C distribution heads choose. Raises VolleyError with
    libvolley's reason."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], policy: Optional[str] = None) -> None:
        self._h = None
        why = _lib.why_buffer()
        self._h = _lib.lib.vl_kept_load(os.fsencode(os.fspath(path)),
                                        policy.encode() if policy else None, why, len(why))
        if not self._h:
            raise _lib.VolleyError(why.value.decode(errors="replace"))
        dims, version = U32x3(), ctypes.c_uint64()
        env = _lib.lib.vl_kept_info(self._h, ctypes.byref(dims), ctypes.byref(version))
        self.obs_dim, self.num_actions, self.hidden = (int(d) for d in dims)
        self.version = int(version.value)
        self.env = env.decode(errors="replace")
        self.policy_id = _lib.lib.vl_kept_policy_id(self._h).decode(errors="replace")
        self.action, self.logstd = ActionSpace.discrete(max(self.num_actions, 2)), None
        if _lib.has("vl_kept_action"):
            c = CAction()
            _lib.lib.vl_kept_action(self._h, ctypes.byref(c))
            try:
                self.action = ActionSpace.from_c(c)
            except ValueError as e:
                raise _lib.VolleyError(f"{path}: action space: {e}") from None
        if self.action.outputs != self.num_actions:
            raise _lib.VolleyError(f"{path}: {self.num_actions} head outputs for the action "
                                   f"space {self.action}")
        self.model, self.torch = "", False
        if _lib.has("vl_kept_is_torch"):
            text = ctypes.create_string_buffer(MODEL_MAX)
            self.model = _lib.lib.vl_kept_model(self._h, text, len(text)).decode(errors="replace")
            self.torch = bool(_lib.lib.vl_kept_is_torch(self._h))
        if self.action.kind == BOX and not self.torch:  # a module's log-std is its own tensor
            self.logstd = self._tensor(path, "pi.logstd", self.action.dims)
        if not _lib.has("vl_kept_pick"):
            raise _lib.VolleyError(f"{_lib.path} is older than this package (no vl_kept_pick): "
                                   f"point VOLLEY_LIB at this build's libvolley.so")
        self.state_size = int(_lib.lib.vl_kept_state_size(self._h))
        self.recurrent = self.state_size > 0

    def _tensor(self, path: Union[str, "os.PathLike[str]"], name: str, n: int) -> np.ndarray:
        out = np.empty(n, np.float32)
        why = _lib.why_buffer()
        if _lib.lib.vl_kept_tensor(os.fsencode(os.fspath(path)), name.encode(), out.ctypes.data,
                                   n, why, len(why)) != 0:
            raise _lib.VolleyError(f"{name}: {why.value.decode(errors='replace')}")
        if not np.all(np.isfinite(out)):
            raise _lib.VolleyError(f"{path}: {name} holds a value that is not finite")
        return out

    def fields(self) -> List[Tuple[Tuple[int, ...], str]]:
        """The observation fields the policy reads: [(shape, encoding name)]."""
        out: List[Tuple[Tuple[int, ...], str]] = []
        f = EnvField()
        while _lib.lib.vl_kept_field(self._h, len(out), ctypes.byref(f)) == 0:
            ndim = min(int(f.ndim), NDIM_MAX)
            out.append((tuple(int(d) for d in f.shape[:ndim]), ENCODING_NAMES[int(f.encoding)]))
        return out

    def tensors(self) -> Dict[str, np.ndarray]:
        """The kept tensors, {name: float32 array of its shape} (copies), in
        the checkpoint's order: a torch:MOD:FN policy's module state_dict."""
        out: Dict[str, np.ndarray] = {}
        dims, ndim = U32x4(), ctypes.c_uint32()
        data = ctypes.POINTER(ctypes.c_float)()
        for i in range(int(_lib.lib.vl_kept_tensor_count(self._h))):
            name = _lib.lib.vl_kept_tensor_at(self._h, i, ctypes.byref(dims), ctypes.byref(ndim),
                                              ctypes.byref(data))
            shape = tuple(int(d) for d in dims[:int(ndim.value)])
            flat = np.ctypeslib.as_array(data, (int(np.prod(shape)),))
            out[name.decode(errors="replace")] = flat.reshape(shape).copy()
        return out

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Head outputs [n, num_actions] for obs [n, obs_dim], one step from the zero state."""
        obs = np.ascontiguousarray(obs, dtype=np.float32).reshape(-1, self.obs_dim)
        out = np.empty((len(obs), self.num_actions), np.float32)
        if _lib.lib.vl_kept_logits(self._h, len(obs), obs.ctypes.data, out.ctypes.data) != 0:
            raise MemoryError("volley eval: no memory for the forward pass")
        return out

    def new_state(self, n: int) -> np.ndarray:
        """The zero state of n envs: float32 [n, state_size]."""
        return np.zeros((n, self.state_size), np.float32)

    def step(self, obs: np.ndarray, state: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Head outputs [n, num_actions] for obs [n, obs_dim], carrying state
        (new_state(n)'s array, advanced in place by libvolley) and zeroing
        env i's first where first [n] is set, at its episode's start."""
        obs = np.ascontiguousarray(obs, dtype=np.float32).reshape(-1, self.obs_dim)
        n = len(obs)
        if state.shape != (n, self.state_size) or state.dtype != np.float32 or \
                not state.flags.c_contiguous:
            raise ValueError(f"state: expected a C-ordered float32 [{n}, {self.state_size}] "
                             f"array, got {state.dtype} {state.shape}")
        first = np.ascontiguousarray(first, dtype=np.uint8).reshape(n)
        out = np.empty((n, self.num_actions), np.float32)
        if _lib.lib.vl_kept_step(self._h, n, obs.ctypes.data, state.ctypes.data,
                                 first.ctypes.data, out.ctypes.data) != 0:
            raise MemoryError("volley eval: no memory for the forward pass")
        return out

    def new_rng(self, seed: int) -> np.ndarray:
        """The generator pick draws with, seeded: uint64 [4] (vl_kept_seed's)."""
        rng = np.empty(4, np.uint64)
        _lib.lib.vl_kept_seed(seed % 2**64, rng.ctypes.data)
        return rng

    def pick(self, outputs: np.ndarray, greedy: bool, rng: np.ndarray) -> np.ndarray:
        """Actions float32 [n, dims] for head outputs [n, num_actions] (step's),
        by libvolley's distribution heads (vl_kept_pick): the most likely
        (greedy) or drawn as actors draw them with rng (new_rng's, advanced in
        place); a box's draws unclipped (clipped when the env is stepped)."""
        outputs = np.ascontiguousarray(outputs, dtype=np.float32).reshape(-1, self.num_actions)
        if rng.shape != (4,) or rng.dtype != np.uint64 or not rng.flags.c_contiguous:
            raise ValueError(f"rng: expected new_rng's uint64 [4], got {rng.dtype} {rng.shape}")
        out = np.empty((len(outputs), self.action.dims), np.float32)
        if _lib.lib.vl_kept_pick(self._h, len(outputs), outputs.ctypes.data, int(bool(greedy)),
                                 rng.ctypes.data, out.ctypes.data) != 0:
            raise MemoryError("volley eval: no memory for the policy")
        return out

    def close(self) -> None:
        if getattr(self, "_h", None):
            h = _P(self._h)
            _lib.lib.vl_kept_destroy(ctypes.byref(h))
            self._h = None

    __del__ = close


def _stepper(make_env: Callable[[], Any], n: int, seed: int) -> Tuple[Any, Any, str, int]:
    """The envs make_env makes, reset: (stepper, spec, env name, envs). A
    vector env is one (its own num_envs, reset with seed), else n single
    envs, env i reset with seed + i * SEED_STRIDE as `volley eval` seeds
    them; stepper.obs is their observations, stepper.step(actions) steps
    them all, resetting each ended one, as the actors step them."""
    from .actor import _EnvList, _VectorEnv, _as_spec, env_name, is_vector
    first = make_env()
    spec = _as_spec(first)
    if is_vector(first):
        return _VectorEnv(first, spec, seed), spec, env_name(first), int(first.num_envs)
    envs = [first] + [make_env() for _ in range(n - 1)]
    seeds = [(seed + i * SEED_STRIDE) % 2**63 for i in range(n)]
    return _EnvList(envs, spec, seeds), spec, env_name(first), n


# acts(obs [n, obs_dim], first [n]) -> actions float32 [n, dims]: a policy's choices for n envs
Acts = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _c_acts(kept: Kept, n: int, greedy: bool, seed: int) -> Acts:
    """The C policy acting for n envs, carrying each env's recurrent state
    (zeroed where first is set) and drawing as `volley eval` draws."""
    rng = kept.new_rng(seed ^ 0x5DEECE66D)  # as `volley eval` seeds its draws
    state = kept.new_state(n)

    def acts(obs: np.ndarray, first: np.ndarray) -> np.ndarray:
        return kept.pick(kept.step(obs, state, first), greedy, rng)

    return acts


def _torch_acts(kept: Kept, spec: Any, greedy: bool, seed: int) -> Acts:
    """The torch:MOD:FN module of kept, built for its observation fields
    and actions as the learner built it, holding kept's tensors, acting on
    the CPU with draws from a torch generator seeded by seed. ValueError of
    one line when the env's fields are not the policy's, or the module
    cannot be built or does not take the tensors."""
    import torch
    from .model import model_fields
    from .torch.actor import torch_policy
    from .torch.custom import ModelSpec
    fields = kept.fields()
    if model_fields(spec) != fields:
        raise ValueError(f"the policy reads observation fields {fields}; the env gives "
                         f"{model_fields(spec)}")
    policy_fn = torch_policy(kept.model, ModelSpec(tuple(fields), kept.action), "cpu", greedy)
    weights = kept.tensors()
    rng_state = torch.Generator().manual_seed(seed ^ 0x5DEECE66D).get_state()

    def acts(obs: np.ndarray, first: np.ndarray) -> np.ndarray:
        nonlocal rng_state
        with torch.random.fork_rng(devices=[]):  # the draws' own stream, the caller's untouched
            torch.random.set_rng_state(rng_state)
            a, _ = policy_fn(obs, weights)
            rng_state = torch.random.get_rng_state()
        return np.asarray(a, np.float32).reshape(len(obs), -1)

    return acts


def play(kept: Kept, make_env: Callable[[], Any], episodes: int, seed: int = 1,
         greedy: bool = False) -> Tuple[np.ndarray, np.ndarray, str]:
    """Plays episodes on up to MAX_ENVS envs made by make_env (a vector env:
    on its own num_envs); returns (returns, lengths, env name). Raises
    ValueError when the env's spaces do not fit the policy; what an env
    raises passes through. A recurrent policy carries each env's state,
    zeroed at each of its episodes' start; a torch:MOD:FN policy acts with
    its module (ValueError also when it cannot be built)."""
    envs, spec, name, n = _stepper(make_env, min(episodes, MAX_ENVS), seed)
    try:
        if spec.obs_dim != kept.obs_dim or spec.action != kept.action:
            raise ValueError(f"the policy takes {kept.obs_dim} observations and acts in "
                             f"{kept.action}; the env gives {spec.obs_dim} and acts in "
                             f"{spec.action}")
        act = _torch_acts(kept, spec, greedy, seed) if kept.torch else \
            _c_acts(kept, n, greedy, seed)
        returns, lengths = _episodes(envs, act, n, episodes)
    finally:
        envs.close()  # a vector env the stepper made again (the one make_env made stays open)
    return returns, lengths, name


def _episodes(envs: Any, act: Acts, n: int, episodes: int) -> Tuple[np.ndarray, np.ndarray]:
    """(returns, lengths) of episodes played by act on the n envs, each env
    playing its share."""
    quota = [episodes // n + (i < episodes % n) for i in range(n)]
    obs = envs.obs
    ret, length = np.zeros(n), np.zeros(n, np.int64)
    first = np.ones(n, np.uint8)
    returns, lengths = [], []
    while any(quota):
        acts = act(obs, first)
        obs, rewards, terminated, truncated, _ = envs.step(acts)
        ended = np.asarray(terminated, bool) | np.asarray(truncated, bool)
        first[:] = ended  # a recurrent policy's state starts again with each episode
        for i in np.flatnonzero(np.asarray(quota) > 0):
            ret[i] += float(rewards[i])
            length[i] += 1
            if ended[i]:
                returns.append(ret[i])
                lengths.append(int(length[i]))
                quota[i] -= 1
                ret[i], length[i] = 0, 0
    return np.array(returns), np.array(lengths)


def _report(kept: Kept, env_text: str, a: argparse.Namespace, returns: np.ndarray,
            lengths: np.ndarray) -> None:
    # as `volley eval` says it: the kept network's model spec (a libvolley without
    # vl_kept_model leaves it empty: then its hidden size, all such a policy had)
    net = f"model {kept.model}" if kept.model else f"hidden {kept.hidden}"
    print(f"eval: {env_text}, policy {kept.policy_id} version {kept.version} "
          f"(obs {kept.obs_dim}, {net}, actions {kept.action}), "
          f"{len(returns)} episodes, {'greedy' if a.greedy else 'sampled'} actions, seed {a.seed}")
    print(f"return {returns.mean():.2f} ± {returns.std():.2f} (min {returns.min():.2f}, max "
          f"{returns.max():.2f})  length {lengths.mean():.1f} ± {lengths.std():.1f} "
          f"(min {lengths.min()}, max {lengths.max()})")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python3 -m volley eval ...` (argv after `eval`); returns the exit code."""
    ap = argparse.ArgumentParser(prog="volley eval", description=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", metavar="RUN|CHECKPOINT",
                    help="a run directory or a learner's checkpoint file")
    ap.add_argument("--env", metavar="MOD:FN",
                    help="package.module:function returning one env (default: the run's)")
    ap.add_argument("--env-arg", metavar="TEXT", help="not taken by Python envs")
    ap.add_argument("--episodes", type=int, default=100, help="episodes to play (100)")
    ap.add_argument("--greedy", action="store_true", help="the most probable action")
    ap.add_argument("--seed", type=int, default=1, help="seeds the envs and the sampling (1)")
    ap.add_argument("--policy", help="which policy of a run (default: default)")
    ap.add_argument("--render", action="store_true", help="not available for Python envs")
    ap.add_argument("--fps", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    for bad, what in ((a.render, "--render"), (a.env_arg is not None, "--env-arg")):
        if bad:
            print(f"volley eval: {what} is not available for a Python env", file=sys.stderr)
            return 2
    if not 1 <= a.episodes <= 100000 or not 0 <= a.seed <= 0x7fffffff:
        print("volley eval: --episodes wants 1..100000 and --seed 0..2147483647", file=sys.stderr)
        return 2
    if not _lib.has("vl_kept_pick"):
        print(f"volley eval: {_lib.path} is older than this package (no vl_kept_pick); point "
              f"VOLLEY_LIB at this build's libvolley.so", file=sys.stderr)
        return 2
    try:
        kept = Kept(a.source, a.policy)
    except _lib.VolleyError as e:
        print(f"volley eval: {e}", file=sys.stderr)
        return 2
    env_text = a.env or kept.env
    if ":" not in (env_text or ""):
        print(f"volley eval: which Python env? {a.source} records {env_text or 'none'}: "
              f"--env package.module:function", file=sys.stderr)
        return 2
    make = load_env_fn(env_text, "eval")
    try:
        returns, lengths, _ = play(kept, make, a.episodes, a.seed, a.greedy)
    except ValueError as e:
        print(f"volley eval: {env_text}: {e}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        print(f"volley eval: the env {env_text} failed (above)", file=sys.stderr)
        return 1
    _report(kept, env_text, a, returns, lengths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
