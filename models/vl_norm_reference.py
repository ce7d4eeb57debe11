"""The numbers models/vl_norm_test.c checks vl_norm against: Stable-Baselines3's
RunningMeanStd and VecNormalize (observation normalisation and reward scaling)
redone in NumPy on the inputs the C test feeds, printed as C constants.

Run: /usr/bin/python3 models/vl_norm_reference.py

The inputs are integer formulas scaled by powers of two, so the C test builds
the very same float32 values without a table.
"""
import numpy as np

EPS = 1e-8
CLIP = 10.0
GAMMA = float(np.float32(0.99))  # vl_norm_new takes gamma as a float


class RunningMeanStd:
    """SB3's running statistics: a pseudo-sample (count 1e-4, mean 0, var 1)
    and batches merged by Chan et al.'s parallel formula, in float64."""

    def __init__(self, shape=()):
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = 1e-4

    def update(self, batch):
        batch = np.asarray(batch, np.float64)
        b_mean, b_var, b_count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_count
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        self.mean = self.mean + delta * b_count / total
        self.var = m2 / total
        self.count = total


# Observations: fields f32 [3], u8 [2], f32 [2, 1], dim 7; elements 0, 1, 2, 5, 6 are f32.
DIM = 7
F32 = [0, 1, 2, 5, 6]
BATCHES = [3, 1, 4]  # observations per vl_norm_update_obs call


def obs_value(k, j):
    """Element j of the k-th observation fed (k counts across batches)."""
    return np.float32((((k * 7 + j * 13) % 17) - 8) * 0.25 * (j + 1) + j)


def probe_value(j):
    """Element j of the observation normalised after the updates: element 1
    lies far above the mean and element 6 far below, so both clip."""
    return np.float32({0: 1.5, 1: 1000.0, 2: -0.75, 3: 200.0, 4: 3.0, 5: 5.25, 6: -1000.0}[j])


# Returns: two streams of T steps, rewards and dones by formula.
T = 8


def reward(s, t):
    return np.float32((((t * 5 + s * 3) % 7) - 2) * 0.5)


def done(s, t):
    return 1.0 if (s == 0 and t in (2, 6)) or (s == 1 and t == 4) else 0.0


def check_pooled(rms, batches):
    """Chan's merges must give the moments of everything seen pooled with
    the starting pseudo-sample (count 1e-4, mean 0, var 1): a check of the
    formula above independent of how it is written."""
    x = np.concatenate([np.asarray(b, np.float64) for b in batches])
    count = 1e-4 + x.shape[0]
    mean = x.sum(axis=0) / count
    var = (1e-4 * 1.0 + (x**2).sum(axis=0)) / count - mean**2
    assert np.isclose(rms.count, count)
    assert np.allclose(rms.mean, mean, rtol=1e-12, atol=1e-12)
    assert np.allclose(rms.var, var, rtol=1e-10, atol=1e-12)


def c_array(name, values):
    body = ", ".join("%.17g" % v for v in values)
    return "static const double %s[%d] = {%s};" % (name, len(values), body)


def observations():
    rms = RunningMeanStd(shape=(len(F32),))
    k, seen = 0, []
    for n in BATCHES:
        batch = np.array([[obs_value(k + i, j) for j in F32] for i in range(n)], np.float32)
        rms.update(batch)
        seen.append(batch)
        k += n
    check_pooled(rms, seen)
    probe = np.array([probe_value(j) for j in F32], np.float32)
    normed = np.clip((probe - rms.mean) / np.sqrt(rms.var + EPS), -CLIP, CLIP).astype(np.float32)
    print("#define S_REF_OBS_COUNT %.17g" % rms.count)
    print(c_array("s_ref_obs_mean", rms.mean))
    print(c_array("s_ref_obs_var", rms.var))
    print(c_array("s_ref_obs_normed", normed))


def returns():
    """VecNormalize over two environments stepped together: each step updates
    the return statistics with the batch of both streams' G."""
    rms = RunningMeanStd()
    g, seen = np.zeros(2), []
    for t in range(T):
        r = np.array([reward(0, t), reward(1, t)], np.float32)
        g = g * GAMMA + r
        rms.update(g)
        seen.append(g.copy())
        g[[done(0, t) != 0, done(1, t) != 0]] = 0
    check_pooled(rms, seen)
    print("#define S_REF_RET_COUNT %.17g" % rms.count)
    print("#define S_REF_RET_MEAN %.17g" % rms.mean)
    print("#define S_REF_RET_VAR %.17g" % rms.var)
    print("#define S_REF_REWARD_SCALE %.17g" % (1.0 / np.sqrt(rms.var + EPS)))


if __name__ == "__main__":
    observations()
    returns()
