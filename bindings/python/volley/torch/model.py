"""volley.torch.model: volley's network as a PyTorch module, the same as the C engine's.

    module = volley.torch.build("cnn", [((4, 84, 84), "u8")], num_actions=6)
    logits, values = module(obs)          # obs float [n, obs_dim], raw field values
    module.state_dict()                   # the C model's tensors: names, shapes, order

A model spec is read once, in C: build and parse ask libvolley's
vl_model_new for the spec's canonical text (presets expanded, checked
against the observation) and read that machine-written text here, so the
grammar, the presets and the refusals are the C parser's.

The module computes what include/volley/model.h's engine computes:
  - a spec with conv layers (models/vl_net.h): each image field (three
    dimensions, channels first) scaled to [0, 1] by its encoding's largest
    value (u8 1/255, u2 1/3, u1 and f32 1) through its own copy of the conv
    layers (each with the activation the spec puts after it), flattened in
    (channel, row, column) order; other fields as their values; all
    concatenated in the fields' order; the linear layers ("torso"); heads
    pi (logits) and v (value). Tensors conv.K.J.*, torso.J.*, pi.*, v.*.
  - a spec without conv layers: two towers over every field's values
    (unscaled), pi and v, each the spec's linear layers with their
    activations and an output layer. Tensors pi.0.* .. pi.L.*, v.0.* .. v.L.*.
  - a spec ending in lstm(H) (models/vl_rnet.h): the linear layers with
    their activations (tensors torso.J.*), one LSTM layer (nn.LSTM's
    layout and gate order i, f, g, o: lstm.weight_ih [4H, in],
    lstm.weight_hh [4H, H], lstm.bias_ih, lstm.bias_hh), heads pi and v
    over its output. forward_seq runs B sequences of T steps from a state
    [B, 2H] (h then c) with per-step resets (on a GPU as one packed
    nn.LSTM call over the pieces between resets: SEQ_KERNEL); forward, n
    sequences of one step from the zero state; act carries a state per env.
The head pi has the action space's outputs (volley.ActionSpace), and
dist(outputs) is the distribution they stand for (models/vl_dist.h's):
  - discrete and multi-discrete: one Categorical per dimension over its
    n[d] logits (the outputs dimension after dimension); log_prob and
    entropy sum over dimensions; greedy, each dimension's argmax;
  - box: a diagonal Normal, mean = the outputs, std = exp(pi.logstd) (a
    parameter [dims], the last of the net's tensors); log_prob of the
    unclipped action and entropy sum over dimensions; greedy, the mean
    clipped to the bounds.
Weights that carry norm.obs.mean [D], norm.obs.var [D] and norm.state [4]
(a learner's running statistics, models/vl_norm.h) turn observation
normalisation on: each f32 field's values become clip((x - mean) /
sqrt(var + 1e-8), -10, 10) before the network; weights without them turn
it off (load_weights).
Initial weights are the C model's for a seed (copied from a volley.Model),
so both engines start from the same network.

Importing volley does not import torch; importing volley.torch does.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import (Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, cast)

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from .._lib import VolleyError
from .._types import BY_NAME
from ..action import ActionSpace, BOX, DISCRETE
from ..model import Model, model_fields, action_of

__all__ = ["Layer", "parse", "canonical", "build", "VolleyNet", "ActionDist", "load_weights",
           "state_dict_from", "numpy_weights", "NORM_TENSORS", "C_NAMES", "SEQ_KERNEL"]

NORM_TENSORS = ("norm.obs.mean", "norm.obs.var", "norm.state")  # models/vl_norm.h's
NORM_CLIP, NORM_EPS = 10.0, 1e-8

_ACTS = {"relu": torch.relu, "tanh": torch.tanh}

# forward_seq's default by device type (others: True): the LSTM as one packed
# call over the pieces between resets (True), or one call per run of steps
# between the steps where any sequence resets (False). A GPU waits on each
# call of the runs (5x to 10x slower there); on the CPU a packed nn.LSTM
# projects its input a step at a time, which Debian's torch 1.13 over the
# reference BLAS ran 4 to 18 % slower (torch 2.11 over OpenBLAS: 3 to 30 %
# faster). bench/torch_lstm_bench.py --forward-seq times both.
SEQ_KERNEL: Dict[str, bool] = {"cpu": False, "cuda": True}


class Layer(NamedTuple):
    """One layer of a canonical spec: kind "conv", "linear", "lstm", "relu" or
    "tanh"; out channels or units (0 for an activation); conv's kernel side,
    stride and zero padding (0 otherwise)."""
    kind: str
    out: int = 0
    kernel: int = 0
    stride: int = 0
    pad: int = 0


_TOKEN = re.compile(r"^(conv|linear|lstm)\((\d+(?:,\d+)*)\)$|^(relu|tanh)$")
_ARGS = {"conv": (3, 4), "linear": (1, 1), "lstm": (1, 1)}


def _read_canonical(text: str) -> List[Layer]:
    """The layers of a canonical spec text (vl_model_text's: one space between
    layers, no space inside one). ValueError on anything else: it is
    machine-written, so a surprise means the library and this package differ."""
    layers = []
    for tok in text.split(" "):
        m = _TOKEN.match(tok)
        if not m:
            raise ValueError(f"canonical spec {text!r}: token {tok!r} is not a layer this "
                             "package knows (libvolley newer than volley.torch?)")
        if m.group(3):
            layers.append(Layer(m.group(3)))
            continue
        kind, args = m.group(1), [int(a) for a in m.group(2).split(",")]
        lo, hi = _ARGS[kind]
        if not lo <= len(args) <= hi:
            raise ValueError(f"canonical spec {text!r}: {tok!r} has {len(args)} numbers")
        layers.append(Layer(kind, *args) if kind == "conv" else Layer(kind, args[0]))
    return layers


# Observations parse() tries when it is given none: a vector, then frames.
_PROBES = ([((1,), "f32")], [((1, 84, 84), "u8")], [((1, 512, 512), "u8")])


def canonical(spec: str, fields: Any = None, num_actions: Any = None) -> str:
    """spec's canonical text from libvolley (presets expanded), checked
    against fields (see volley.Model; None: the first of a vector and two
    frame sizes that the spec can read). VolleyError with C's reason when
    the spec is refused."""
    if fields is not None:
        try:
            action = action_of(fields, num_actions)
        except ValueError:
            action = ActionSpace.discrete(2)  # the text does not depend on it
        return Model(spec, fields, action=action, seed=0).spec_text
    last = None
    for probe in _PROBES:
        try:
            return Model(spec, probe, num_actions or 2, seed=0).spec_text
        except VolleyError as e:
            last = e
    raise VolleyError(f"{last} (give fields= the observation the spec will read)")


def parse(spec: str, fields: Any = None, num_actions: Optional[int] = None) -> List[Layer]:
    """spec's layers, presets expanded, as libvolley reads them (see
    canonical for fields)."""
    return _read_canonical(canonical(spec, fields, num_actions))


def _activations(layers: List[Layer], kinds: Iterable[str]) -> List[Optional[str]]:
    """For each layer of the given kinds, in order, the activation the spec puts
    right after it (None when none)."""
    out: List[Optional[str]] = []
    for i, layer in enumerate(layers):
        if layer.kind in kinds:
            nxt = layers[i + 1].kind if i + 1 < len(layers) else None
            out.append(nxt if nxt in _ACTS else None)
    return out


def _act(name: Optional[str], x: torch.Tensor) -> torch.Tensor:
    return x if name is None else _ACTS[name](x)


def _conv_out(layers: List[Layer], shape: Sequence[int]) -> Tuple[int, int, int]:
    """(channels, rows, cols) after the conv layers on a [c, h, w] field."""
    c, h, w = shape
    for layer in layers:
        if layer.kind == "conv":
            c = layer.out
            h = (h + 2 * layer.pad - layer.kernel) // layer.stride + 1
            w = (w + 2 * layer.pad - layer.kernel) // layer.stride + 1
    return c, h, w


class _Pieces(NamedTuple):
    """B sequences of T steps cut at their resets into pieces (the maximal
    runs of steps between resets) and laid out as one PackedSequence: the
    pieces longest first, each step's row time-major among the pieces
    still running (flat steps are b * T + t)."""
    at: np.ndarray  # int64: src [B*T], pos [B*T], rows [P], last [B], one array
    carry: np.ndarray  # [P] float32: 1 where a piece starts from its sequence's state
    batch_sizes: np.ndarray  # int64 [longest]: the pieces longer than k, at k
    pieces: int  # P


def _pack_pieces(reset: np.ndarray) -> _Pieces:
    """The packed layout of the pieces of reset [B, T] (bools). src: the flat
    step each packed row reads; pos: the packed row of each flat step; rows:
    each piece's sequence; last: each sequence's last piece."""
    B, T = reset.shape
    starts = reset.copy()
    starts[:, 0] = True
    flat = starts.ravel()
    begin = np.flatnonzero(flat)  # [P] the flat step each piece starts at
    piece = np.cumsum(flat) - 1  # [B*T] the piece of each flat step
    length = np.diff(np.append(begin, B * T))
    order = np.argsort(-length, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    batch_sizes = order.size - np.cumsum(np.bincount(length, minlength=length.max() + 1))[:-1]
    row_base = np.concatenate(([0], np.cumsum(batch_sizes)[:-1]))
    pos = row_base[np.arange(B * T) - begin[piece]] + rank[piece]
    src = np.empty_like(pos)
    src[pos] = np.arange(B * T)
    rows = begin[order] // T
    carry = (begin[order] % T == 0) & ~reset[rows, 0]
    last = rank[piece[T - 1::T]]
    at = np.concatenate((src, pos, rows, last)).astype(np.int64)
    return _Pieces(at, carry.astype(np.float32), batch_sizes.astype(np.int64), order.size)


class ActionDist:
    """The distribution a head's outputs [n, outputs] stand for in an action
    space (see the module's docstring); logstd [dims] for a box. Actions are
    [n, dims] (floats or integers; discrete choices as whole numbers)."""

    normal: torch.distributions.Normal  # a box's (cats None)
    cats: Optional[List[torch.distributions.Categorical]]  # each discrete dimension's

    def __init__(self, space: ActionSpace, outputs: torch.Tensor,
                 logstd: Optional[torch.Tensor] = None) -> None:
        self.space = space
        if space.kind == BOX:
            if logstd is None:
                raise ValueError("a box's distribution needs its log-stds (pi.logstd)")
            self.normal = torch.distributions.Normal(outputs, logstd.exp().expand_as(outputs))
            self.cats = None
        else:
            self.cats = [torch.distributions.Categorical(logits=z)
                         for z in torch.split(outputs, [int(k) for k in space.n], dim=-1)]

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """The joint log-prob [n] of actions [n, dims] (a box's may be outside its bounds)."""
        if self.cats is None:
            return self.normal.log_prob(actions.to(self.normal.mean.dtype)).sum(-1)
        a = actions.long()
        # sum from 0 over at least one dimension: a tensor
        return cast(torch.Tensor, sum(c.log_prob(a[..., d]) for d, c in enumerate(self.cats)))

    def entropy(self) -> torch.Tensor:
        """The entropy [n], summed over dimensions."""
        if self.cats is None:
            return self.normal.entropy().sum(-1)
        return cast(torch.Tensor, sum(c.entropy() for c in self.cats))  # as log_prob's

    def sample(self) -> torch.Tensor:
        """Actions [n, dims]: a box's unclipped Gaussian draws (float), else
        each dimension's choice (long)."""
        if self.cats is None:
            return self.normal.sample()
        return torch.stack([c.sample() for c in self.cats], dim=-1)

    def greedy(self) -> torch.Tensor:
        """The most likely actions [n, dims]: each dimension's argmax (the
        lowest index on ties), or a box's mean clipped to its bounds."""
        if self.cats is None:
            low = torch.as_tensor(self.space.low, dtype=self.normal.mean.dtype,
                                  device=self.normal.mean.device)
            high = torch.as_tensor(self.space.high, dtype=low.dtype, device=low.device)
            return torch.max(torch.min(self.normal.mean, high), low)
        return torch.stack([c.logits.argmax(-1) for c in self.cats], dim=-1)


class ObsNorm:
    """Observation normalisation a network carries for its actors: set_norm
    makes the statistics (norm.* once published) buffers of the module, and
    normalize applies them to the f32 values (norm_mask) of [n, obs_dim]
    observations. The network sets obs_dim, norm_mask and norm (False)."""

    obs_dim: int
    norm_mask: torch.Tensor
    norm_obs_mean: torch.Tensor  # buffers while normalisation is on
    norm_obs_var: torch.Tensor
    norm: bool
    register_buffer: Any

    def set_norm(self, on: bool) -> None:
        """Turns observation normalisation on (the statistics, norm.obs.mean
        0 and var 1 until loaded, become buffers of the module) or off."""
        if on and not self.norm:
            dev = self.norm_mask.device
            self.register_buffer("norm_obs_mean", torch.zeros(self.obs_dim, device=dev))
            self.register_buffer("norm_obs_var", torch.ones(self.obs_dim, device=dev))
            self.register_buffer("norm_state", torch.zeros(4, device=dev))
        elif not on and self.norm:
            for name in ("norm_obs_mean", "norm_obs_var", "norm_state"):
                delattr(self, name)
        self.norm = bool(on)

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [n, obs_dim] as the network sees it: the f32 values normalised
        with the statistics when normalisation is on, else obs itself."""
        if not self.norm:
            return obs
        z = ((obs - self.norm_obs_mean) / torch.sqrt(self.norm_obs_var + NORM_EPS))
        return torch.where(self.norm_mask, z.clamp(-NORM_CLIP, NORM_CLIP), obs)


class VolleyNet(ObsNorm, nn.Module):
    """volley's actor-critic network for a canonical layer list over fields
    [(shape, encoding)] acting in an action space (a volley.ActionSpace, or
    an int: that many discrete choices; see the module's docstring);
    forward(obs [n, obs_dim]) -> (outputs [n, num_actions], values [n]),
    num_actions being the head's outputs. build() is the usual way to make
    one. Its state_dict holds the C model's names in the C model's order
    (pi.logstd after the net's other tensors, then the norm.* tensors when
    normalisation is on)."""

    # The heads: Linear layers, or a memoryless MLP's towers (ModuleLists of them).
    pi: nn.Module
    v: nn.Module
    # Buffers: which observation values normalisation touches, and (while it is
    # on) the statistics it uses.
    norm_mask: torch.Tensor
    norm_obs_mean: torch.Tensor
    norm_obs_var: torch.Tensor
    norm_state: torch.Tensor

    def __init__(self, layers: List[Layer], fields: Iterable[Tuple[Sequence[int], str]],
                 num_actions: Any,
                 spec_text: str = "") -> None:
        super().__init__()
        self.action = ActionSpace.of(num_actions)
        self.layers, self.fields = list(layers), list(fields)
        self.num_actions = self.action.outputs
        self.spec_text = spec_text or " ".join(_layer_text(la) for la in layers)
        self.sizes = [int(np.prod(shape)) for shape, _ in self.fields]
        self.obs_dim = sum(self.sizes)
        self.has_conv = any(layer.kind == "conv" for layer in layers)
        lstms = [layer.out for layer in layers if layer.kind == "lstm"]
        self.hidden = lstms[-1] if lstms else 0  # the LSTM's H: a state of 2H per sequence
        widths = [layer.out for layer in layers if layer.kind == "linear"]
        self.linear_acts = _activations(layers, ("linear",))
        if self.hidden and (self.has_conv or len(lstms) > 1 or layers[-1].kind != "lstm"):
            raise ValueError(f"{self.spec_text}: an lstm is one layer, the last, after linear "
                             "layers alone (the C engine's recurrent net)")
        if self.hidden:
            self._build_recurrent(widths)
        elif self.has_conv:
            self._build_convnet(widths)
        else:
            self._build_towers(widths)
        # act()'s per-env state [n, 2H], a recurrent net's
        self._carried: Optional[torch.Tensor] = None
        if self.action.kind == BOX:
            self.logstd = nn.Parameter(torch.zeros(self.action.dims))
        # Which observation values normalisation touches: the f32 fields'.
        mask = np.concatenate([np.full(size, enc == "f32") for size, (_, enc) in
                               zip(self.sizes, self.fields)])
        self.register_buffer("norm_mask", torch.from_numpy(mask), persistent=False)
        self.norm = False
        self._register_state_dict_hook(_c_names)
        self._register_load_state_dict_pre_hook(_module_names)

    def _build_convnet(self, widths: List[int]) -> None:
        convs = [layer for layer in self.layers if layer.kind == "conv"]
        self.conv_acts = _activations(self.layers, ("conv",))
        self.images = [i for i, (shape, _) in enumerate(self.fields) if len(shape) == 3]
        if not self.images:
            raise ValueError(f"{self.spec_text}: conv layers need an image field (3 "
                             "dimensions, channels first)")
        self.conv = nn.ModuleList()
        features = 0
        for i, (shape, _) in enumerate(self.fields):
            if i not in self.images:
                features += self.sizes[i]
                continue
            chain, c = nn.ModuleList(), shape[0]
            for layer in convs:
                chain.append(nn.Conv2d(c, layer.out, layer.kernel, layer.stride, layer.pad))
                c = layer.out
            self.conv.append(chain)
            features += int(np.prod(_conv_out(self.layers, shape)))
        self.torso = nn.ModuleList()
        for w in widths:
            self.torso.append(nn.Linear(features, w))
            features = w
        self.pi = nn.Linear(features, self.num_actions)
        self.v = nn.Linear(features, 1)

    def _build_towers(self, widths: List[int]) -> None:
        dims = [self.obs_dim] + widths
        self.pi = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims, dims[1:])] +
                                [nn.Linear(dims[-1], self.num_actions)])
        self.v = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims, dims[1:])] +
                               [nn.Linear(dims[-1], 1)])

    def _build_recurrent(self, widths: List[int]) -> None:
        """The recurrent net (models/vl_rnet.h): torso.J linear layers, one
        nn.LSTM whose weight_ih_l0 .. bias_hh_l0 are lstm.weight_ih ..
        lstm.bias_hh, heads pi and v over its output."""
        features = self.obs_dim
        self.torso = nn.ModuleList()
        for w in widths:
            self.torso.append(nn.Linear(features, w))
            features = w
        self.lstm = nn.LSTM(features, self.hidden, batch_first=True)
        self.pi = nn.Linear(self.hidden, self.num_actions)
        self.v = nn.Linear(self.hidden, 1)

    @property
    def state_size(self) -> int:
        """Floats of one sequence's recurrent state: 2H (h then c) for a net
        ending in lstm(H), 0 for a memoryless one."""
        return 2 * self.hidden

    def _tower(self, head: nn.Module, x: torch.Tensor) -> torch.Tensor:
        tower = cast(nn.ModuleList, head)  # a memoryless MLP's heads are towers
        for lin, act in zip(tower[:-1], self.linear_acts):
            x = _act(act, lin(x))
        return tower[-1](x)

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        parts, image = torch.split(obs, self.sizes, dim=1), 0
        out: List[torch.Tensor] = []
        for i, x in enumerate(parts):
            if i in self.images:
                shape, enc = self.fields[i]
                x = x.reshape(x.shape[0], *shape) * BY_NAME[enc].scale
                for conv, act in zip(self.conv[image], self.conv_acts):
                    x = _act(act, conv(x))
                x, image = x.flatten(1), image + 1
            out.append(x)
        return out[0] if len(out) == 1 else torch.cat(out, dim=1)

    def forward(self, obs: Any) -> Tuple[torch.Tensor, torch.Tensor]:
        """(outputs [n, num_actions], values [n]) of obs [n, obs_dim] (a tensor,
        or anything torch.as_tensor takes): the logits of every discrete
        dimension in turn, or a box's means."""
        given = obs if torch.is_tensor(obs) else torch.as_tensor(obs, dtype=torch.float32)
        if given.dim() != 2 or given.shape[1] != self.obs_dim:
            raise ValueError(f"obs: expected shape [n, {self.obs_dim}], got {list(given.shape)}")
        if self.hidden:  # n sequences of one step from the zero state, as the C engine's
            outputs, values, _ = self.forward_seq(given[:, None, :])
            return outputs[:, 0], values[:, 0]
        seen = self.normalize(given)
        if not self.has_conv:
            return self._tower(self.pi, seen), self._tower(self.v, seen).squeeze(-1)
        x = self._features(seen)
        for lin, act in zip(self.torso, self.linear_acts):
            x = _act(act, lin(x))
        return self.pi(x), self.v(x).squeeze(-1)

    def forward_seq(self, obs: Any, state0: Any = None, reset: Any = None,
                    seq_kernel: Optional[bool] = None
                    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A recurrent net over B sequences of T steps: obs [B, T, obs_dim]
        from state0 [B, 2H] (h then c; None: zeros), the state zeroed before
        step t where reset [B, T] (None: nowhere) is true. Returns (outputs
        [B, T, num_actions], values [B, T], state1 [B, 2H]), what
        vl_model_forward_seq computes. seq_kernel picks how the LSTM runs
        across resets: True, one whole-sequence call over the pieces between
        them; False, one call per run of steps between the steps where any
        sequence resets (the reference); None, SEQ_KERNEL's choice for the
        device."""
        if not self.hidden:
            raise ValueError(f"forward_seq: {self.spec_text!r} has no recurrent core")
        given = obs if torch.is_tensor(obs) else torch.as_tensor(obs, dtype=torch.float32)
        if given.dim() != 3 or given.shape[2] != self.obs_dim:
            raise ValueError(f"obs: expected shape [B, T, {self.obs_dim}], "
                             f"got {list(given.shape)}")
        B, T, H = given.shape[0], given.shape[1], self.hidden
        x = self.normalize(given)
        for lin, act in zip(self.torso, self.linear_acts):
            x = _act(act, lin(x))
        h, c = self._state_parts(state0, B, x)
        if seq_kernel is None:
            seq_kernel = SEQ_KERNEL.get(x.device.type, True)
        if seq_kernel:
            y, (h, c) = self._lstm_pieces(x, h, c, self._reset_rows(reset, B, T))
        else:
            y, (h, c) = self._lstm_run(x, h, c, self._keep(reset, B, T, x))
        return self.pi(y), self.v(y).squeeze(-1), torch.cat([h[0], c[0]], dim=1).reshape(B, 2 * H)

    def _state_parts(self, state0: Any, B: int, like: torch.Tensor
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(h, c), each [1, B, H], of a state [B, 2H] (None: zeros)."""
        H = self.hidden
        if state0 is None:
            zero = like.new_zeros(1, B, H)
            return zero, zero
        s = torch.as_tensor(state0, dtype=like.dtype, device=like.device)
        if tuple(s.shape) != (B, 2 * H):
            raise ValueError(f"state0: expected shape [{B}, {2 * H}], got {list(s.shape)}")
        return s[None, :, :H], s[None, :, H:]

    @staticmethod
    def _reset_rows(reset: Any, B: int, T: int) -> Optional[np.ndarray]:
        """reset [B, T] as a host bool array (one copy from the device), None
        when nothing resets."""
        if reset is None:
            return None
        given = reset.detach().cpu().numpy() if torch.is_tensor(reset) else np.asarray(reset)
        if given.shape != (B, T):
            raise ValueError(f"reset: expected shape [{B}, {T}], got {list(given.shape)}")
        zeroed = given != 0
        return zeroed if zeroed.any() else None

    def _lstm_pieces(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
                     reset: Optional[np.ndarray]
                     ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        """The LSTM over x [B, T, F] from (h, c), each sequence split at its
        resets (reset [B, T] host bools, None: nowhere) into pieces that one
        nn.LSTM call runs packed: a sequence's first piece from its state
        (zeros where it resets at step 0), the others from zeros (exact: the
        same cell on the same steps, only the batching differs)."""
        if reset is None or not reset[:, 1:].any():
            if reset is not None:  # resets at step 0 alone: one call from the kept states
                keep = torch.from_numpy(~reset[:, 0]).to(x.device, h.dtype)[None, :, None]
                h, c = h * keep, c * keep
            return self.lstm(x, (h.contiguous(), c.contiguous()))
        B, T, F = x.shape
        p = _pack_pieces(reset)
        at = torch.from_numpy(p.at).to(x.device)
        src, pos, rows, last = torch.split(at, [B * T, B * T, p.pieces, B])
        keep = torch.from_numpy(p.carry).to(x.device, h.dtype)[None, :, None]
        data = x.reshape(B * T, F).index_select(0, src)
        packed = PackedSequence(data, torch.from_numpy(p.batch_sizes))
        y, (hn, cn) = self.lstm(packed, ((h[:, rows] * keep).contiguous(),
                                         (c[:, rows] * keep).contiguous()))
        out = y.data.index_select(0, pos).reshape(B, T, -1)
        return out, (hn[:, last], cn[:, last])

    @staticmethod
    def _keep(reset: Any, B: int, T: int, like: torch.Tensor) -> Optional[torch.Tensor]:
        """1 where the state carries into a step, 0 where reset [B, T] zeroes
        it first, as a [B, T] float of like's kind; None when nothing resets."""
        if reset is None:
            return None
        given = torch.as_tensor(reset, device=like.device)
        if tuple(given.shape) != (B, T):
            raise ValueError(f"reset: expected shape [{B}, {T}], got {list(given.shape)}")
        zeroed = given != 0
        return None if not bool(zeroed.any()) else (~zeroed).to(like.dtype)

    def _lstm_run(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
                  keep: Optional[torch.Tensor]
                  ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        """The LSTM over x [B, T, F] from (h, c), zeroing the state of
        sequence b before step t where keep[b, t] is 0: one nn.LSTM call per
        run of steps between the steps where some sequence resets (exact:
        the same products, the reset a multiplication by 0 or 1)."""
        if keep is None:
            return self.lstm(x, (h.contiguous(), c.contiguous()))
        T = x.shape[1]
        cuts = [t for t in range(T) if t == 0 or bool((keep[:, t] == 0).any())] + [T]
        ys: List[torch.Tensor] = []
        for a, b in zip(cuts, cuts[1:]):
            k = keep[None, :, a, None]
            y, (h, c) = self.lstm(x[:, a:b], ((h * k).contiguous(), (c * k).contiguous()))
            ys.append(y)
        return torch.cat(ys, dim=1), (h, c)

    def reset_state(self, envs: Any = None) -> None:
        """Zeroes act()'s carried state: every env's (envs None; the next act
        starts from zero for however many envs it is given), or those envs
        (a [n] mask or indices) whose episode starts at their next
        observation."""
        if envs is None or self._carried is None:
            self._carried = None
            return
        with torch.no_grad():
            self._carried[torch.as_tensor(envs, device=self._carried.device)] = 0

    def dist(self, outputs: torch.Tensor) -> ActionDist:
        """The action distribution of head outputs [n, num_actions] (forward's)."""
        return ActionDist(self.action, outputs, getattr(self, "logstd", None))

    def log_probs(self, obs: Any) -> torch.Tensor:
        """log pi(a|obs): [n, num_actions] for one discrete choice (every
        action's); for other spaces, use dist(forward(obs)[0]).log_prob(actions)."""
        if self.action.kind != DISCRETE:
            raise ValueError(f"log_probs: every action's log-prob is for one discrete choice; "
                             f"this policy's space is {self.action} (use dist().log_prob)")
        return torch.log_softmax(self.forward(obs)[0], dim=-1)

    def act(self, obs: Any, greedy: bool = False, first: Any = None) -> torch.Tensor:
        """Actions sampled from the policy, or its most likely (greedy): [n]
        for one discrete choice, else [n, dims] (a box's samples unclipped,
        its greedy mean clipped to the bounds). A recurrent net carries a
        state per env (row of obs) from call to call, zero at first and for
        the envs where first [n] (a mask: the observation opens an episode)
        is true, or after reset_state(); a different n starts every env
        from zero."""
        x = torch.as_tensor(obs, dtype=torch.float32)
        if self.hidden:
            return self._act_recurrent(x, greedy, first)
        d = self.dist(self.forward(x)[0])
        a = d.greedy() if greedy else d.sample()
        return a[:, 0] if self.action.kind == DISCRETE else a

    def _act_recurrent(self, obs: torch.Tensor, greedy: bool, first: Any) -> torch.Tensor:
        if obs.dim() != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"obs: expected shape [n, {self.obs_dim}], got {list(obs.shape)}")
        n = obs.shape[0]
        state = self._carried
        if state is None or state.shape[0] != n or state.device != obs.device:
            state = obs.new_zeros(n, self.state_size)
        reset = None if first is None else torch.as_tensor(first).reshape(n, 1)
        with torch.no_grad():
            outputs, _, self._carried = self.forward_seq(obs[:, None], state, reset)
            d = self.dist(outputs[:, 0])
            a = d.greedy() if greedy else d.sample()
        return a[:, 0] if self.action.kind == DISCRETE else a

    def extra_repr(self) -> str:
        return f"spec={self.spec_text!r}, fields={self.fields}"


# The module's names of the tensors the C model names otherwise (ours, theirs).
C_NAMES = (("lstm.weight_ih_l0", "lstm.weight_ih"), ("lstm.weight_hh_l0", "lstm.weight_hh"),
            ("lstm.bias_ih_l0", "lstm.bias_ih"), ("lstm.bias_hh_l0", "lstm.bias_hh"),
            ("logstd", "pi.logstd"), ("norm_obs_mean", NORM_TENSORS[0]),
            ("norm_obs_var", NORM_TENSORS[1]), ("norm_state", NORM_TENSORS[2]))


_LAST = 4  # of C_NAMES: the module's own tensors, which state_dict puts first


def _c_names(module: nn.Module, state: Dict[str, Any], prefix: str,
             local_metadata: Dict[str, Any]) -> Dict[str, Any]:
    """state_dict hook: the C model's names and order: the LSTM's without
    nn.LSTM's layer suffix, where they are; the box's log-stds as pi.logstd
    after the net's tensors, then the normalisation buffers as norm.*."""
    inplace = {prefix + a: prefix + b for a, b in C_NAMES[:_LAST]}
    items = list(state.items())
    state.clear()  # the same object, its _metadata kept, refilled in order
    for k, v in items:
        state[inplace.get(k, k)] = v
    for ours, theirs in C_NAMES[_LAST:]:
        if prefix + ours in state:
            state[prefix + theirs] = state.pop(prefix + ours)
    return state


def _module_names(state: Dict[str, Any], prefix: str, *args: Any) -> None:
    """load_state_dict pre-hook: the C model's names back to the module's."""
    for ours, theirs in C_NAMES:
        if prefix + theirs in state:
            state[prefix + ours] = state.pop(prefix + theirs)


def _layer_text(layer: Layer) -> str:
    if layer.kind == "conv":
        args = [layer.out, layer.kernel, layer.stride] + ([layer.pad] if layer.pad else [])
        return "conv(" + ",".join(map(str, args)) + ")"
    return f"{layer.kind}({layer.out})" if layer.out else layer.kind


def build(spec: str, fields: Any, num_actions: Any = None,
          seed: Optional[int] = 0, action: Any = None) -> VolleyNet:
    """The module for spec (text or preset) over fields (any form volley.Model
    takes: [(shape, encoding)], a volley.Spec, a spec dict, an obs_dim) acting
    in the action space action (or num_actions: an int of discrete choices,
    or a space; neither: the one fields carry). Its initial weights are
    the C model's for seed (None: PyTorch's own init). VolleyError with C's
    reason when the spec is refused; VolleyError when this module's tensors
    are not the C model's (a package and a libvolley that differ)."""
    fs, space = model_fields(fields), action_of(fields, num_actions, action)
    c_model = Model(spec, fs, action=space, seed=seed or 0)
    module = VolleyNet(_read_canonical(c_model.spec_text), fs, space, c_model.spec_text)
    ours = [(k, tuple(v.shape)) for k, v in module.state_dict().items()]
    theirs = list(c_model.shapes.items())
    if ours != theirs:
        diff = next(((a, b) for a, b in zip(ours, theirs) if a != b), None)
        raise VolleyError(f"volley.torch and libvolley differ on {c_model.spec_text!r}: "
                          f"module {diff[0] if diff else len(ours)} vs C "
                          f"{diff[1] if diff else len(theirs)} tensors")
    if seed is not None:
        load_weights(module, c_model.tensors())
    return module


def state_dict_from(mapping: Mapping[str, Any], dtype: torch.dtype = torch.float32
                    ) -> OrderedDict[str, torch.Tensor]:
    """name -> torch tensor (copies, dtype) of a mapping of names to arrays
    (what a Learner publishes, a checkpoint or an export holds)."""
    out: OrderedDict[str, torch.Tensor] = OrderedDict()
    for name, value in mapping.items():
        if isinstance(value, torch.Tensor):
            out[name] = value.detach().to(dtype=dtype, copy=True)
        else:
            out[name] = torch.tensor(np.asarray(value), dtype=dtype)
    return out


def load_weights(module: nn.Module, mapping: Mapping[str, Any], strict: bool = True) -> None:
    """Copies mapping's arrays into module's parameters by name, into each
    parameter's dtype and device. Every name must be the module's with its
    shape, and with strict every tensor of the module must be given;
    ValueError naming the first that is not (nothing is written then). A
    VolleyNet normalises observations when mapping holds the norm.* tensors
    and stops when it holds none of them (with strict)."""
    if isinstance(module, VolleyNet):
        have = [k in mapping for k in NORM_TENSORS]
        if all(have) or (strict and not any(have)):
            module.set_norm(all(have))
    own = module.state_dict()
    for name, value in mapping.items():
        if name not in own:
            raise ValueError(f"load_weights: {name!r} is not a tensor of the module; it has "
                             f"{', '.join(own)}")
        shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
        if tuple(shape) != tuple(own[name].shape):
            raise ValueError(f"load_weights: {name}: shape {list(shape)}, the module's is "
                             f"{list(own[name].shape)}")
    missing = [k for k in own if k not in mapping]
    if strict and missing:
        raise ValueError(f"load_weights: missing {', '.join(missing)}")
    with torch.no_grad():
        for name, value in mapping.items():
            # np.array copies: a read-only view (volley.Model.tensors) makes no torch tensor
            t = value if isinstance(value, torch.Tensor) else torch.from_numpy(np.array(value))
            own[name].copy_(t)


def numpy_weights(module: nn.Module) -> "OrderedDict[str, np.ndarray]":
    """module's state_dict as float32 NumPy copies: what volley.Model.set_tensors
    and Learner.publish take."""
    return OrderedDict((k, v.detach().cpu().to(torch.float32).numpy().copy())
                       for k, v in module.state_dict().items())

