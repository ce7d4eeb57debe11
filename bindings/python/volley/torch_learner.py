"""volley.torch_learner: the former path of volley.torch.learner (TorchLearner, main,
split_argv, TORCH_HELP), kept for scripts that import it."""
from .torch.learner import *  # noqa: F401,F403  (its __all__)
from .torch.learner import __all__  # noqa: F401
