#!/usr/bin/env python3
"""vl_policy_reference: the PPO loss of a small box(2) policy and its gradient
with respect to every tensor, as PyTorch autograd computes them, for
vl_policy_space_test.c to check vl_policy_loss_grad against.

The network is volley's towers over 3 observations with mlp(4): pi and v are
each linear(4) tanh linear(4) tanh linear(out), weights [out][in] as
PyTorch's, plus pi.logstd [2]. Every parameter, in volley's tensor order, is
0.5 sin(0.7 k + 0.3) for its flat index k; the minibatch is built from
closed forms as well, so the C test rebuilds all of it without a file. Inputs
are rounded to float32 (what the C code holds) and the reference computed in
float64. Prints C initializers to paste into the test.

    /usr/bin/python3 models/vl_policy_reference.py
"""
import math

import torch
from torch.distributions import Normal

OBS, HIDDEN, DIMS, N = 3, 4, 2, 4
CLIP, VF_COEF, ENT_COEF = 0.2, 0.5, 0.1

# volley's tensor order: pi's layers, v's layers, then the log-std
SHAPES = [
    ("pi.0.weight", (HIDDEN, OBS)), ("pi.0.bias", (HIDDEN,)),
    ("pi.1.weight", (HIDDEN, HIDDEN)), ("pi.1.bias", (HIDDEN,)),
    ("pi.2.weight", (DIMS, HIDDEN)), ("pi.2.bias", (DIMS,)),
    ("v.0.weight", (HIDDEN, OBS)), ("v.0.bias", (HIDDEN,)),
    ("v.1.weight", (HIDDEN, HIDDEN)), ("v.1.bias", (HIDDEN,)),
    ("v.2.weight", (1, HIDDEN)), ("v.2.bias", (1,)),
    ("pi.logstd", (DIMS,)),
]


def f32(values):
    """Rounds values to float32, then widens them so autograd runs in float64."""
    return torch.tensor(values, dtype=torch.float32).double()


def params():
    """Returns the tensors by name, leaves that require a gradient."""
    out, k = {}, 0
    for name, shape in SHAPES:
        size = math.prod(shape)
        vals = [0.5 * math.sin(0.7 * (k + j) + 0.3) for j in range(size)]
        out[name] = f32(vals).reshape(shape).requires_grad_()
        k += size
    return out


def batch():
    """Returns obs [N][OBS], actions [N][DIMS], old_logp, adv, v_target, w [N]."""
    obs = f32([[2.0 * math.cos(1.3 * (i * OBS + j)) for j in range(OBS)] for i in range(N)])
    act = f32([[1.5 * math.sin(0.9 * (i * DIMS + d) + 1.0) for d in range(DIMS)]
               for i in range(N)])
    old = f32([-2.0 - 0.3 * i for i in range(N)])
    adv = f32([(-1.0) ** i * (0.5 + 0.25 * i) for i in range(N)])
    vt = f32([0.3 * i - 0.5 for i in range(N)])
    w = f32([1.0 - 0.15 * i for i in range(N)])
    return obs, act, old, adv, vt, w


def tower(p, prefix, x):
    """Runs tower prefix (pi or v) over x."""
    h = torch.tanh(x @ p[prefix + ".0.weight"].T + p[prefix + ".0.bias"])
    h = torch.tanh(h @ p[prefix + ".1.weight"].T + p[prefix + ".1.bias"])
    return h @ p[prefix + ".2.weight"].T + p[prefix + ".2.bias"]


def loss(p):
    """Returns vl_policy_loss_grad's weighted loss (see vl_policy.h)."""
    obs, act, old, adv, vt, w = batch()
    dist = Normal(tower(p, "pi", obs), p["pi.logstd"].exp())
    logp = dist.log_prob(act).sum(-1)
    ratio = (logp - old).exp()
    surr = torch.min(ratio * adv, ratio.clamp(1 - CLIP, 1 + CLIP) * adv)
    v = tower(p, "v", obs).squeeze(-1)
    per = -surr + VF_COEF * 0.5 * (v - vt) ** 2 - ENT_COEF * dist.entropy().sum(-1)
    return (w * per).mean(), ratio


def main():
    p = params()
    total, ratio = loss(p)
    total.backward()
    print("/* From models/vl_policy_reference.py (PyTorch %s): ratios %s. */"
          % (torch.__version__, ", ".join("%.3f" % r for r in ratio.tolist())))
    print("static const double s_ref_loss = %.17g;" % total.item())
    grads = []
    for name, _ in SHAPES:
        grads += p[name].grad.reshape(-1).tolist()
    print("static const double s_ref_grad[%d] = {" % len(grads))
    for i in range(0, len(grads), 4):
        print("    " + ", ".join("%.17g" % g for g in grads[i:i + 4]) + ",")
    print("};")


if __name__ == "__main__":
    main()
