"""volley.torch_engine: the former path of volley.torch.engine (TorchEngine, packed_layout,
obs_from_packed, unpack_u2, unpack_u1, default_device, OPT_MAGIC), kept for scripts that
import it."""
from .torch.engine import *  # noqa: F401,F403  (its __all__)
from .torch.engine import OPT_MAGIC, __all__  # noqa: F401
