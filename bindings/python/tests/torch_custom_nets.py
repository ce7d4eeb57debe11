"""Modules of a user's own for test_torch_custom.py, named by --torch-model
torch_custom_nets:FN (the tests put this folder first on sys.path)."""
import torch
from torch import nn


class TwoHeads(nn.Module):
    """A shared ReLU trunk and two heads: not a network volley's model spec can say."""

    def __init__(self, obs_dim: int, outputs: int, width: int = 64) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, width), nn.ReLU(),
                                   nn.Linear(width, width), nn.ReLU())
        self.pi = nn.Linear(width, outputs)
        self.v = nn.Linear(width, 1)
        self.register_buffer("calls", torch.zeros(()))  # a rank-0 buffer: travels as [1]

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h)  # values [B, 1]: volley takes [B] or [B, 1]


def build(spec):
    """CartPole's (or any flat observation's) policy."""
    return TwoHeads(spec.obs_dim, spec.outputs)


class SmallCNN(nn.Module):
    """Two convs over the first field (C, H, W, scaled from its encoding), a
    linear torso, heads pi and v."""

    def __init__(self, spec) -> None:
        super().__init__()
        self.spec = spec
        (c, h, w), enc = spec.fields[0]
        self.scale = {"u8": 1 / 255, "u2": 1 / 3}.get(enc, 1.0)
        self.conv = nn.Sequential(nn.Conv2d(c, 8, 3, 2), nn.ReLU(), nn.Conv2d(8, 16, 3, 1),
                                  nn.ReLU(), nn.Flatten())
        n = self.conv(torch.zeros(1, c, h, w)).shape[1]
        self.torso = nn.Sequential(nn.Linear(n, 64), nn.ReLU())
        self.pi = nn.Linear(64, spec.outputs)
        self.v = nn.Linear(64, 1)

    def forward(self, obs):
        x = self.torso(self.conv(self.spec.views(obs)[0] * self.scale))
        return self.pi(x), self.v(x).squeeze(-1)


def build_cnn(spec):
    return SmallCNN(spec)


def build_own_logstd(spec):
    """A box policy that keeps its own log-std."""
    net = TwoHeads(spec.obs_dim, spec.outputs)
    net.logstd = nn.Parameter(torch.full((spec.action.dims,), -0.5))
    return net


def build_wrong(spec):
    """Outputs one column too many."""
    return TwoHeads(spec.obs_dim, spec.outputs + 1)


def build_raises(spec):
    raise RuntimeError("no GPU here")


def build_not_module(spec):
    return "a string"
