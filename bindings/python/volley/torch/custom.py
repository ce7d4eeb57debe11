"""volley.torch.custom: a PyTorch module of your own as a volley policy.

    python3 -m volley learner --torch --torch-model mypkg.nets:build ...
    python3 -m volley actor --env mypkg.envs:make_env --torch-model mypkg.nets:build ...

--torch-model MOD:FN names a function build(spec) -> nn.Module, imported
with the current directory first on sys.path. spec is a ModelSpec: the
policy's observation fields [(shape, encoding)], obs_dim, action (a
volley.ActionSpace) and horizon. The module it returns is called as

    outputs, values = module(obs)

  obs      float32 [B, obs_dim]: each field's values flattened in C order,
           the fields concatenated in order (spec.views(obs) gives each as
           [B, *shape]); u8, u2 and u1 fields as whole numbers (0..255,
           0..3, 0..1: scale them yourself), f32 fields as the env gives
           them, or normalised (clip((x - mean) / std, -10, 10)) where the
           learner normalises observations (--norm-obs; on by default for
           box actions);
  outputs  [B, spec.outputs], what volley's action heads read: logits [B, n]
           for a discrete space, each dimension's logits in turn for a
           multi-discrete one, a box's Gaussian means [B, dims] (its log-std
           is a learned vector independent of the state: the module's own
           parameter `logstd` [dims] when it has one, else one volley adds as
           pi.logstd);
  values   [B] (or [B, 1]): the state values.

The module is memoryless (no recurrent state) and deterministic given its
weights: the learner calls it in training mode, actors in eval mode (so
dropout or batch statistics would make them disagree). Its state_dict is
the policy's weights as published to actors and kept in checkpoints: at
most MAX_TENSORS tensors of ranks 0 to 4 (a rank-0 one travels as [1]),
names of at most 31 bytes, at most 2^24 values each. The model text the
policy's spec carries is "torch:MOD:FN" (model_text): Python actors with
the same --torch-model declare it, C actors refuse it in one line.

CustomNet wraps the module in the interface volley.torch.model.VolleyNet
offers the engine (dist, num_actions, state_size 0, set_norm); build_net
makes one and checks its outputs on a dummy batch, once.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ..action import ActionSpace, BOX
from ..model import action_of, model_fields
from .model import NORM_TENSORS, ActionDist, ObsNorm

__all__ = ["ModelSpec", "CustomNet", "spec_of", "load_build", "build_net", "model_text",
           "is_model_text", "PREFIX", "MAX_TENSORS"]

PREFIX = "torch:"  # models/vl_model_spec.c's S_TORCH
NAME_MAX = 127  # bytes of MOD:FN: models/vl_model_spec.h's VL_MODEL_TORCH_MAX
MAX_TENSORS = 64  # a weights message's most (VL_ENGINE_TENSORS_MAX), norm.* included
TENSOR_NAME_MAX = 31  # bytes of a tensor's name (VL_TENSOR_NAME_MAX less its NUL)
TENSOR_NDIM_MAX = 4
TENSOR_VALUES_MAX = 1 << 24  # a weights message's most per tensor (max_tensor_elems)
CHECK_BATCH = 5  # rows of the dummy batch the outputs are checked on: unlike most widths

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_NAME = re.compile(rf"^{_DOTTED}:{_DOTTED}$")  # the C parser's grammar of MOD:FN
_LOGSTD = "pi.logstd"


class ModelSpec(NamedTuple):
    """What build(spec) is given: the observation fields [(shape, encoding)]
    in order (encoding "f32", "u8", "u2" or "u1"), the action space and the
    steps per segment (0 where the caller does not know it)."""
    fields: Tuple[Tuple[Tuple[int, ...], str], ...]
    action: ActionSpace
    horizon: int = 0

    @property
    def obs_dim(self) -> int:
        """Floats per observation: every field's values."""
        return sum(int(np.prod(shape)) for shape, _ in self.fields)

    @property
    def outputs(self) -> int:
        """The module's outputs per row: the action space's head width."""
        return int(self.action.outputs)

    def views(self, obs: torch.Tensor) -> List[torch.Tensor]:
        """Each field of obs [B, obs_dim] as [B, *shape] (views, in order)."""
        sizes = [int(np.prod(shape)) for shape, _ in self.fields]
        parts = torch.split(obs, sizes, dim=1)
        return [p.reshape(p.shape[0], *shape) for p, (shape, _) in zip(parts, self.fields)]


def _spaces(spec: Any) -> Optional[Tuple[Any, Any]]:
    """(observation space, action space) of an env, a vector env or such a
    pair; None for anything else."""
    if isinstance(spec, tuple) and len(spec) == 2 and hasattr(spec[0], "shape"):
        return spec
    for prefix in ("single_", ""):
        obs = getattr(spec, prefix + "observation_space", None)
        act = getattr(spec, prefix + "action_space", None)
        if obs is not None and act is not None:
            return obs, act
    return None


def spec_of(spec: Any, horizon: int = 0) -> ModelSpec:
    """A ModelSpec of spec: one already, a learner's engine Config, a
    volley.Spec, a spec dict (fields and action), or an env, a vector env or
    (observation_space, action_space) as volley.Actor reads them; horizon
    where spec carries none."""
    if isinstance(spec, ModelSpec):
        return spec
    spaces = _spaces(spec)
    if spaces is not None:
        from ..actor import spec_from_spaces
        spec = spec_from_spaces(*spaces)
    fields = tuple((tuple(int(d) for d in shape), str(enc)) for shape, enc in model_fields(
        spec.fields if hasattr(spec, "horizon") and hasattr(spec, "fields") else spec))
    got = spec.get("horizon") if isinstance(spec, dict) else getattr(spec, "horizon", None)
    return ModelSpec(fields, action_of(spec), int(got or horizon))


def is_model_text(text: str) -> bool:
    """True when text is a model spec naming a module of one's own (torch:MOD:FN)."""
    return text.strip().startswith(PREFIX)


def _name(text: str) -> str:
    """MOD:FN of "MOD:FN" or "torch:MOD:FN"; ValueError when it is neither."""
    name = text.strip()
    name = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if not _NAME.match(name):
        raise ValueError(f"--torch-model '{text}': expected package.module:function")
    if len(name.encode()) > NAME_MAX:
        raise ValueError(f"--torch-model '{text}': longer than {NAME_MAX} bytes")
    return name


def model_text(text: str) -> str:
    """The model spec text of --torch-model text (MOD:FN, or that text
    already): "torch:MOD:FN", what the policy's spec carries. ValueError
    when text is not package.module:function."""
    return PREFIX + _name(text)


def load_build(text: str) -> Tuple[Callable[[ModelSpec], nn.Module], str]:
    """(the build function text names, its MOD:FN), imported with the current
    directory first on sys.path. ValueError of one line naming text and why."""
    name = _name(text)
    mod, _, attr = name.partition(":")
    if not sys.path or sys.path[0] != os.getcwd():
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(mod)
    except ImportError as e:
        raise ValueError(f"--torch-model {name}: {e}") from None
    except Exception as e:  # the user's module raised while it was imported
        raise ValueError(f"--torch-model {name}: importing {mod} raised "
                         f"{type(e).__name__}: {_line(e)}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--torch-model {name}: {mod} has no {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"--torch-model {name}: {attr} is a {type(obj).__name__}, not a "
                         f"function build(spec) -> nn.Module")
    return obj, name


def _line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _flat(v: torch.Tensor) -> torch.Tensor:
    """A rank-0 tensor as [1] (the wire has no rank 0), others as they are."""
    return v.reshape(1) if v.dim() == 0 else v


class CustomNet(ObsNorm, nn.Module):
    """module (build(spec)'s) with what volley's engine and actors ask of a
    network: forward(obs [n, obs_dim]) -> (outputs [n, num_actions], values
    [n]), dist(outputs), num_actions, state_size 0, set_norm and normalize
    (the norm.* statistics actors get with the weights), spec_text
    "torch:MOD:FN". Its state_dict is module's (rank-0 tensors as [1]),
    then pi.logstd for a box without the module's own logstd, then norm.*
    while normalisation is on."""

    norm_mask: torch.Tensor
    norm_obs_mean: torch.Tensor
    norm_obs_var: torch.Tensor
    norm_state: torch.Tensor

    def __init__(self, module: nn.Module, spec: ModelSpec, name: str) -> None:
        super().__init__()
        self.net = module
        self.spec, self.action, self.name = spec, spec.action, name
        self.spec_text = PREFIX + name
        self.fields = list(spec.fields)
        self.obs_dim, self.num_actions = spec.obs_dim, spec.outputs
        self.hidden = 0
        own = getattr(module, "logstd", None)
        self.own_logstd = isinstance(own, torch.Tensor)
        if self.action.kind == BOX and not self.own_logstd:
            self.logstd = nn.Parameter(torch.zeros(self.action.dims))
        mask = np.concatenate([np.full(int(np.prod(shape)), enc == "f32")
                               for shape, enc in self.fields])
        self.register_buffer("norm_mask", torch.from_numpy(mask), persistent=False)
        self.norm = False
        self._register_state_dict_hook(_published_names)
        self._register_load_state_dict_pre_hook(_module_names)

    @property
    def state_size(self) -> int:
        """0: a module of one's own is memoryless."""
        return 0

    def forward(self, obs: Any) -> Tuple[torch.Tensor, torch.Tensor]:
        """(outputs [n, num_actions], values [n]) of obs [n, obs_dim]."""
        x = obs if torch.is_tensor(obs) else torch.as_tensor(obs, dtype=torch.float32)
        outputs, values = self.net(self.normalize(x))
        return outputs, values.reshape(-1)

    def forward_seq(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a module of one's own carries no recurrent state."""
        raise ValueError(f"{self.spec_text}: a module of your own is memoryless; volley has "
                         "no sequence pass for it")

    def dist(self, outputs: torch.Tensor) -> ActionDist:
        """The action distribution of outputs [n, num_actions] (forward's)."""
        logstd = getattr(self.net if self.own_logstd else self, "logstd", None)
        return ActionDist(self.action, outputs, logstd)

    def check(self) -> None:
        """Runs the module once on a dummy batch and checks what volley needs
        of it; ValueError of one line naming the expected shapes."""
        n, A = CHECK_BATCH, self.num_actions
        dev = next(self.net.parameters(), self.norm_mask).device
        want = f"(outputs [{n}, {A}], values [{n}])"
        with torch.no_grad():
            try:
                got = self.net(torch.zeros(n, self.obs_dim, device=dev))
            except Exception as e:
                raise ValueError(f"--torch-model {self.name}: forward(obs [{n}, {self.obs_dim}])"
                                 f" raised {type(e).__name__}: {_line(e)}; expected {want}") \
                    from None
        self._check_outputs(got, want)
        if self.action.kind == BOX and self.own_logstd:
            shape = list(getattr(self.net, "logstd").shape)
            if shape != [self.action.dims]:
                raise ValueError(f"--torch-model {self.name}: its logstd is {shape}, expected "
                                 f"[{self.action.dims}] (one log-std a dimension of {self.action})")
        self._check_tensors()

    def _check_outputs(self, got: Any, want: str) -> None:
        n, A = CHECK_BATCH, self.num_actions
        pair = isinstance(got, (tuple, list)) and len(got) == 2 and \
            all(torch.is_tensor(t) for t in got)
        if not pair:
            said = type(got).__name__
        else:
            shapes = [list(t.shape) for t in got]
            if shapes[0] == [n, A] and shapes[1] in ([n], [n, 1]) and \
                    all(t.is_floating_point() for t in got):
                return
            said = f"({', '.join(f'{t.dtype} {s}' for t, s in zip(got, shapes))})"
        raise ValueError(f"--torch-model {self.name}: forward(obs [{n}, {self.obs_dim}]) returned "
                         f"{said}; expected float {want} for {self.action} over obs_dim "
                         f"{self.obs_dim}")

    def _check_tensors(self) -> None:
        """ValueError naming the first tensor a weights message cannot carry."""
        taken = [k for k in self.net.state_dict() if k.startswith("norm.") or
                 (k == _LOGSTD and not self.own_logstd)]
        if taken:
            raise ValueError(f"--torch-model {self.name}: tensor {taken[0]!r} has a name "
                             f"volley's own tensors use (norm.*, {_LOGSTD})")
        sd = self.state_dict()
        room = MAX_TENSORS - len(NORM_TENSORS)
        if len(sd) > room:
            raise ValueError(f"--torch-model {self.name}: {len(sd)} tensors in its state_dict; "
                             f"volley's weights carry at most {room}")
        for k, v in sd.items():
            why = _unpublishable(k, v)
            if why:
                raise ValueError(f"--torch-model {self.name}: tensor {k!r} {why}")


def _unpublishable(name: str, v: torch.Tensor) -> Optional[str]:
    """Why tensor name cannot travel in a weights message, None when it can."""
    if len(name.encode()) > TENSOR_NAME_MAX or not name.isascii() or not name.isprintable():
        return f"has a name of over {TENSOR_NAME_MAX} bytes or not printable ASCII"
    if v.is_complex() or v.dtype == torch.bool:
        return f"is {v.dtype}; weights travel as float32"
    if not 1 <= v.dim() <= TENSOR_NDIM_MAX or 0 in v.shape or v.numel() > TENSOR_VALUES_MAX:
        return (f"has shape {list(v.shape)}; a weights tensor has ranks 0 to {TENSOR_NDIM_MAX}, "
                f"no dimension of 0 and at most {TENSOR_VALUES_MAX} values")
    return None


def _published_names(module: nn.Module, state: Dict[str, Any], prefix: str,
                     local_metadata: Dict[str, Any]) -> Dict[str, Any]:
    """state_dict hook: the user's module's tensors under their own names
    (rank 0 as [1]), then pi.logstd, then the normalisation buffers as norm.*."""
    net, own = prefix + "net.", {prefix + "logstd": prefix + _LOGSTD,
                                 prefix + "norm_obs_mean": prefix + NORM_TENSORS[0],
                                 prefix + "norm_obs_var": prefix + NORM_TENSORS[1],
                                 prefix + "norm_state": prefix + NORM_TENSORS[2]}
    items = list(state.items())
    state.clear()  # the same object, refilled in order
    for k, v in items:
        if k.startswith(net):
            state[prefix + k[len(net):]] = _flat(v)
        elif k not in own:
            state[k] = v
    for k, v in items:
        if k in own:
            state[own[k]] = v
    return state


def _module_names(state: Dict[str, Any], prefix: str, *args: Any) -> None:
    """load_state_dict pre-hook: published names back to the module's."""
    own = {prefix + _LOGSTD: prefix + "logstd", prefix + NORM_TENSORS[0]: prefix + "norm_obs_mean",
           prefix + NORM_TENSORS[1]: prefix + "norm_obs_var",
           prefix + NORM_TENSORS[2]: prefix + "norm_state"}
    for k in [k for k in state if k.startswith(prefix)]:
        state[own.get(k, prefix + "net." + k[len(prefix):])] = state.pop(k)


def build_net(text: str, spec: Any, seed: Optional[int] = None,
              device: Any = None) -> CustomNet:
    """The CustomNet of --torch-model text (MOD:FN or torch:MOD:FN) for spec
    (anything spec_of takes), built on device (None: where build leaves it)
    with torch's generator seeded by seed (None: as it is), its outputs
    checked once. ValueError of one line: text not found, build raising or
    returning no nn.Module, wrong outputs or unpublishable tensors."""
    build, name = load_build(text)
    ms = spec_of(spec)
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(int(seed))
        try:
            module = build(ms)
        except Exception as e:
            raise ValueError(f"--torch-model {name}: build(spec) raised {type(e).__name__}: "
                             f"{_line(e)}") from None
    if not isinstance(module, nn.Module):
        raise ValueError(f"--torch-model {name}: build(spec) returned a {type(module).__name__}, "
                         f"expected an nn.Module")
    net = CustomNet(module, ms, name)
    if device is not None:
        net.to(torch.device(device))
    net.check()
    return net

