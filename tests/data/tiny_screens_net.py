"""A user's own small nn.Module for volley.envs.screens (1x72x80, u2), named by
`--torch-model tiny_screens_net:build` with tests/data on PYTHONPATH: one strided
conv and a linear(32) torso, small enough to train on two CPU cores
(multihost_pixels_test.sh, slurm_multihost_test.sh's case d)."""
import torch
from torch import nn


class TinyScreenNet(nn.Module):
    """conv(8, 8, 4) over the screen scaled to 0..1, linear(32), heads pi and v."""

    def __init__(self, spec) -> None:
        super().__init__()
        self.spec = spec
        (c, h, w), enc = spec.fields[0]
        self.scale = {"u8": 1 / 255, "u2": 1 / 3, "u1": 1.0}.get(enc, 1.0)
        self.conv = nn.Sequential(nn.Conv2d(c, 8, 8, 4), nn.ReLU(), nn.Flatten())
        n = self.conv(torch.zeros(1, c, h, w)).shape[1]
        self.torso = nn.Sequential(nn.Linear(n, 32), nn.ReLU())
        self.pi = nn.Linear(32, spec.outputs)
        self.v = nn.Linear(32, 1)

    def forward(self, obs):
        x = self.torso(self.conv(self.spec.views(obs)[0] * self.scale))
        return self.pi(x), self.v(x)


def build(spec):
    """The policy for spec's first field, a (C, H, W) screen."""
    return TinyScreenNet(spec)
