"""volley.torch.actor: actors acting with a PyTorch module of one's own.

    fn = torch_policy("mypkg.nets:build", spec, device="cuda")
    volley.run_actor(envs, policy_fn=fn, model=model_text("mypkg.nets:build"), ...)

torch_policy builds the module as the learner does (volley.torch.custom:
build(spec), checked once) and returns a volley.Actor policy_fn: it loads
the newest published weights into the module whenever they change, runs it
on the observations of every env at once under torch.no_grad on the device,
and samples the actions and their log-probs from volley's distribution
heads. The actor must declare the model text torch:MOD:FN (model_text),
the model the learner trained with --torch-model MOD:FN announces.
"""
from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Tuple

import numpy as np
import torch

from ..action import DISCRETE
from .custom import CustomNet, build_net, model_text
from .model import NORM_TENSORS, load_weights

__all__ = ["torch_policy", "load_published", "model_text"]

# policy_fn(obs [N, D] float32, weights) -> (actions, logps [N]), as volley.actor.PolicyFn
PolicyFn = Callable[[np.ndarray, Any], Tuple[np.ndarray, np.ndarray]]


def load_published(net: CustomNet, weights: Mapping[str, Any]) -> None:
    """Copies published weights (name -> float32 array) into net: its own
    tensors, and the norm.* statistics, which turn its observation
    normalisation on (off when they are absent). ValueError of one line
    when they are not net's tensors (another module's)."""
    norm = all(k in weights for k in NORM_TENSORS)
    net.set_norm(norm)
    try:
        load_weights(net, weights, strict=True)
    except ValueError as e:
        raise ValueError(f"--torch-model {net.name}: the published weights are not this "
                         f"module's ({e})") from None


def torch_policy(text: str, spec: Any, device: str = "cpu", greedy: bool = False) -> PolicyFn:
    """A volley.Actor policy_fn acting with the module --torch-model text
    (MOD:FN or torch:MOD:FN) builds for spec (a volley.Spec, a
    volley.torch.custom.ModelSpec or anything spec_of takes) on device:
    policy_fn(obs [N, D] float32, weights) -> (actions [N] or [N, dims],
    logps [N]), the weights loaded when their version (or the mapping)
    changes, actions sampled (greedy: the most likely; a box's mean clipped
    to its bounds), a box's samples unclipped. ValueError of one line when
    the module cannot be built or checked."""
    dev = torch.device(device)
    net = build_net(text, spec, device=dev).eval()
    held: List[Optional[Tuple[int, int]]] = [None]  # (version, id) of the weights net holds

    def policy_fn(obs: np.ndarray, weights: Any) -> Tuple[np.ndarray, np.ndarray]:
        key = (int(getattr(weights, "version", -1)), id(weights))
        if weights and key != held[0]:
            load_published(net, weights)
            held[0] = key
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)).to(dev)
        with torch.no_grad():
            d = net.dist(net(x)[0].float())
            a = d.greedy() if greedy else d.sample()
            logp = d.log_prob(a)
        actions = a.cpu().numpy()
        if net.action.kind == DISCRETE:
            actions = actions[:, 0]
        return actions, logp.double().cpu().numpy()

    return policy_fn
