"""volley.torch: volley's network, update engine and learner in PyTorch.

    net = volley.torch.build("cnn", [((4, 84, 84), "u8")], num_actions=6)
    logits, values = net(obs)             # the C engine's network, the C model's tensors
    volley.torch.TorchLearner("127.0.0.1:7600", env="cartpole").run()

  volley.torch.model    the model spec's network as an nn.Module (build, parse,
                        VolleyNet, ActionDist, load_weights, numpy_weights)
  volley.torch.engine   TorchEngine: the learner's update on a torch device
  volley.torch.learner  TorchLearner and `python3 -m volley learner --torch`
  volley.torch.custom   a module of one's own (--torch-model MOD:FN): ModelSpec,
                        CustomNet, build_net, model_text
  volley.torch.actor    torch_policy: a volley.Actor policy_fn acting with it

Importing volley does not import torch; importing volley.torch does. Inside
this package `import torch` is PyTorch (imports are absolute).
"""
from .model import *  # noqa: F401,F403  (its __all__)
from .model import __all__ as _model_all
from .engine import TorchEngine, default_device
from .learner import TorchLearner
from .custom import CustomNet, ModelSpec, build_net, model_text
from .actor import torch_policy

__all__ = list(_model_all) + ["TorchEngine", "default_device", "TorchLearner", "CustomNet",
                              "ModelSpec", "build_net", "model_text", "torch_policy"]
