"""volley: the Python package over libvolley, volley's C core.

A thin ctypes layer (as czmq's bindings/python is): every function here calls
the C library, which does the work; nothing is re-implemented in Python.
NumPy arrays cross without a copy when they are already C-contiguous and of
the dtype the C side takes (otherwise they are converted first), and ctypes
releases the GIL for the length of every foreign call, so other Python
threads run while C works.

    volley.vtrace(values, rewards, dones, log_rhos, ...)  IMPALA's V-trace
    volley.PrioritizedSampler(capacity, seed=1)            prioritized slot sampling
    volley.ReplayBuffer(capacity, fields, seed=1)         the replay buffer
    volley.Actor, volley.run_actor                        actors for Python envs (volley.actor)
    volley.Learner                                        a learner's transport (volley.learner)
    volley.ActionSpace                                    discrete, multi-discrete, box actions
    volley.Model(spec, fields, action)                    a model spec's network in C
    volley.torch.build(spec, fields, action)              the same in PyTorch (volley.torch)
    volley.load_safetensors, volley.TorchPolicy           exported weights in NumPy / PyTorch
    volley.__version__                                    vl_version() of the library loaded
    volley.lib_path                                       which libvolley.so was loaded

The library is found through $VOLLEY_LIB, then the copy installed with the
package, then <checkout>/build/libvolley.so, then the system's (see
volley._lib); its structs' sizes are checked against the package's mirrors.
"""
from . import _lib, _types
from ._lib import VolleyError
from .replay import ReplayBuffer
from .sampler import PrioritizedSampler
from .vtrace import vtrace, vtrace_path
from .model import Model
from .action import ActionSpace
from . import actor as _actor
from . import learner as _learner
from . import export as _export
from .actor import *  # noqa: F401,F403  (its __all__)
from .learner import *  # noqa: F401,F403  (its __all__)
from .export import *  # noqa: F401,F403  (its __all__)

_lib.check_abi({"vl_vtrace_params_t": _lib.vtrace_params, "vl_rbuf_field_t": _lib.rbuf_field,
                **_types.MIRRORS})

__version__ = _lib.lib.vl_version().decode()
lib_path = _lib.path
HAVE_REPLAY = _lib.has("vl_rbuf_new")  # False until store/vl_rbuf.c is in the library

__all__ = (["vtrace", "vtrace_path", "PrioritizedSampler", "ReplayBuffer", "VolleyError",
            "Model", "ActionSpace", "__version__", "lib_path", "HAVE_REPLAY"] +
           list(_actor.__all__) + list(_learner.__all__) + list(_export.__all__))
