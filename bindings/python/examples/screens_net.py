"""A user's own CNN for Game-Boy-shaped screens (volley.envs.screens: 1x72x80, four
shades), named by `--torch-model screens_net:build` with this folder on PYTHONPATH: the
PyTorch learner trains it and Python actors act with it (docs/pixels.md)."""
import torch
from torch import nn


class ScreenNet(nn.Module):
    """Three strided convs over the screen scaled to 0..1, a linear torso, heads pi and v."""

    def __init__(self, spec, width: int = 256) -> None:
        super().__init__()
        self.spec = spec
        (c, h, w), enc = spec.fields[0]
        self.scale = {"u8": 1 / 255, "u2": 1 / 3, "u1": 1.0}.get(enc, 1.0)
        self.conv = nn.Sequential(nn.Conv2d(c, 16, 8, 4), nn.ReLU(), nn.Conv2d(16, 32, 4, 2),
                                  nn.ReLU(), nn.Conv2d(32, 32, 3, 1), nn.ReLU(), nn.Flatten())
        n = self.conv(torch.zeros(1, c, h, w)).shape[1]
        self.torso = nn.Sequential(nn.Linear(n, width), nn.ReLU())
        self.pi = nn.Linear(width, spec.outputs)
        self.v = nn.Linear(width, 1)

    def forward(self, obs):
        x = self.torso(self.conv(self.spec.views(obs)[0] * self.scale))
        return self.pi(x), self.v(x)


def build(spec):
    """The policy for spec's first field, a (C, H, W) screen."""
    return ScreenNet(spec)
