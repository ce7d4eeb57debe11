"""volley.vtrace against a plain NumPy transcription of V-trace's defining
formulas (IMPALA, Espeholt et al. 2018), with and without truncation's bootstrap, and its
reduction to GAE."""
import math
import tracemalloc

import numpy as np
import pytest

import volley

TOL = 2e-4  # float32 kernel (and its vector exp) against a float64 reference


def reference(values, rewards, dones, log_rhos, gamma, lam, rho_bar, c_bar, pg_rho_bar,
              boot=None):
    """V-trace by its definition, one step at a time in float64."""
    v = values.astype(np.float64)
    n, T = rewards.shape
    boot = np.zeros((n, T)) if boot is None else boot.astype(np.float64)
    ratio = np.exp(log_rhos.astype(np.float64))
    rho, c, pg_rho = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio), \
        np.minimum(pg_rho_bar, ratio)
    disc = gamma * (1.0 - dones)
    vs = np.zeros((n, T + 1))
    vs[:, T] = v[:, T]
    for t in range(T - 1, -1, -1):
        # a truncated step (done, boot = V(x_final)) bootstraps but cuts the trace
        delta = rho[:, t] * (rewards[:, t] + disc[:, t] * v[:, t + 1] + gamma * boot[:, t]
                             - v[:, t])
        vs[:, t] = v[:, t] + delta + disc[:, t] * c[:, t] * (vs[:, t + 1] - v[:, t + 1])
    pg = pg_rho * (rewards + disc * vs[:, 1:] + gamma * boot - v[:, :T])
    return vs[:, :T], pg


def inputs(n, T, seed, truncate=False):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, T + 1), dtype=np.float32)
    rewards = rng.standard_normal((n, T), dtype=np.float32)
    dones = (rng.random((n, T)) < 0.1).astype(np.float32)
    log_rhos = rng.uniform(-1, 1, (n, T)).astype(np.float32)
    boot = None
    if truncate:
        boot = np.where((dones == 1) & (rng.random((n, T)) < 0.5),
                        rng.standard_normal((n, T)), 0).astype(np.float32)
    return values, rewards, dones, log_rhos, boot


def close(got, want):
    return np.max(np.abs(got - want) / np.maximum(1, np.abs(want)))


@pytest.mark.parametrize("n,T", [(1, 1), (37, 23), (64, 128)])  # 37, 23: no multiple of 4 or 8
def test_matches_reference(n, T):
    values, rewards, dones, log_rhos, _ = inputs(n, T, seed=n * 1000 + T)
    params = dict(gamma=0.97, lam=0.9, rho_bar=1.0, c_bar=0.9, pg_rho_bar=1.2)
    vs, pg = volley.vtrace(values, rewards, dones, log_rhos, **params)
    ref_vs, ref_pg = reference(values, rewards, dones, log_rhos, **params)
    assert vs.shape == pg.shape == (n, T) and vs.dtype == pg.dtype == np.float32
    assert close(vs, ref_vs) < TOL and close(pg, ref_pg) < TOL


def test_boot_matches_reference():
    values, rewards, dones, log_rhos, boot = inputs(41, 33, seed=7, truncate=True)
    assert boot.any()
    params = dict(gamma=0.99, lam=0.95, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0)
    vs, pg = volley.vtrace(values, rewards, dones, log_rhos, boot=boot, **params)
    ref_vs, ref_pg = reference(values, rewards, dones, log_rhos, boot=boot, **params)
    assert close(vs, ref_vs) < TOL and close(pg, ref_pg) < TOL
    # the bootstrap changes something, and zeros give vl_vtrace's output bit for bit
    plain = volley.vtrace(values, rewards, dones, log_rhos, **params)
    assert not np.array_equal(vs, plain[0])
    zero = volley.vtrace(values, rewards, dones, log_rhos, boot=np.zeros_like(boot), **params)
    assert np.array_equal(zero[0], plain[0]) and np.array_equal(zero[1], plain[1])


def test_on_policy_unclipped_is_gae():
    values, rewards, dones, _, _ = inputs(16, 50, seed=3)
    gamma, lam = 0.99, 0.95
    zeros = np.zeros_like(rewards)  # pi = mu
    inf = dict(rho_bar=math.inf, c_bar=math.inf, pg_rho_bar=math.inf)
    vs, pg = volley.vtrace(values, rewards, dones, zeros, gamma=gamma, lam=lam, **inf)
    gae = np.zeros(rewards.shape)
    acc = np.zeros(rewards.shape[0])
    for t in range(rewards.shape[1] - 1, -1, -1):
        disc = gamma * (1 - dones[:, t])
        acc = rewards[:, t] + disc * values[:, t + 1] - values[:, t] + disc * lam * acc
        gae[:, t] = acc
    assert close(vs - values[:, :-1], gae) < TOL
    # with lambda = 1 the policy-gradient advantage is GAE(1) as well
    vs1, pg1 = volley.vtrace(values, rewards, dones, zeros, gamma=gamma, lam=1.0, **inf)
    assert close(pg1, vs1 - values[:, :-1]) < TOL


def test_pg_rho_bar_defaults_to_rho_bar():
    values, rewards, dones, log_rhos, _ = inputs(8, 16, seed=5)
    a = volley.vtrace(values, rewards, dones, log_rhos, rho_bar=0.7)
    b = volley.vtrace(values, rewards, dones, log_rhos, rho_bar=0.7, pg_rho_bar=0.7)
    assert np.array_equal(a[1], b[1])


def test_converts_other_layouts():
    values, rewards, dones, log_rhos, _ = inputs(9, 12, seed=11)
    want = volley.vtrace(values, rewards, dones, log_rhos)
    # float64, Fortran order, a strided view, a bool dones: converted, same result
    wide = np.zeros((9, 26), np.float32)
    wide[:, ::2] = values
    got = volley.vtrace(wide[:, ::2], np.asfortranarray(rewards.astype(np.float64)),
                        dones.astype(bool), log_rhos.tolist())
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_no_copy_of_float32_c_contiguous():
    values, rewards, dones, log_rhos, boot = inputs(256, 128, seed=13, truncate=True)
    out = (np.empty_like(rewards), np.empty_like(rewards))
    volley.vtrace(values, rewards, dones, log_rhos, boot=boot, out=out)  # warm up
    tracemalloc.start()
    vs, pg = volley.vtrace(values, rewards, dones, log_rhos, boot=boot, out=out)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert vs is out[0] and pg is out[1]
    assert peak < rewards.nbytes // 4, f"{peak} bytes allocated: an input was copied"


def test_shape_errors_name_the_argument():
    values, rewards, dones, log_rhos, _ = inputs(4, 6, seed=17)
    with pytest.raises(ValueError, match=r"values: expected a 2-D array \[n, T\+1\], got shape \(7,\)"):
        volley.vtrace(values[0], rewards, dones, log_rhos)
    with pytest.raises(ValueError, match=r"rewards: expected shape \(4, 6\).*got \(4, 7\)"):
        volley.vtrace(values, np.zeros((4, 7)), dones, log_rhos)
    with pytest.raises(ValueError, match=r"dones: expected shape \(4, 6\).*got \(3, 6\)"):
        volley.vtrace(values, rewards, dones[:3], log_rhos)
    with pytest.raises(ValueError, match=r"log_rhos: expected shape"):
        volley.vtrace(values, rewards, dones, log_rhos.T)
    with pytest.raises(ValueError, match=r"boot: expected shape \(4, 6\)"):
        volley.vtrace(values, rewards, dones, log_rhos, boot=np.zeros(6))
    with pytest.raises(TypeError, match=r"rewards: expected an array of floats"):
        volley.vtrace(values, "abc", dones, log_rhos)
    with pytest.raises(ValueError, match=r"out vs: overlaps rewards"):
        volley.vtrace(values, rewards, dones, log_rhos, out=(rewards, np.empty_like(rewards)))
    with pytest.raises(TypeError, match=r"out pg_adv: expected a writeable float32"):
        volley.vtrace(values, rewards, dones, log_rhos,
                      out=(np.empty_like(rewards), np.empty((4, 6))))


def test_version_is_the_library_s():
    parts = volley.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)


def test_results_held_are_never_reused():
    """vtrace reuses result arrays the caller has let go of (a learner's loop saves their page
    faults); arrays the caller still holds, or holds a view of, are never written again."""
    rng = np.random.default_rng(5)
    n, T = 3, 7
    args = [rng.random((n, T + 1), dtype=np.float32)] + \
        [rng.random((n, T), dtype=np.float32) for _ in range(3)]
    first = volley.vtrace(*args)
    want = (first[0].copy(), first[1].copy())
    view = first[1][1:]
    held = [volley.vtrace(*[a * (k + 2) for a in args]) for k in range(4)]  # new results, held
    assert np.array_equal(first[0], want[0]) and np.array_equal(first[1], want[1])
    assert np.array_equal(view, want[1][1:])
    ids = {id(first[0])} | {id(h[0]) for h in held}
    assert len(ids) == 5  # every held result is its own array
    for _ in range(6):  # a loop that rebinds its names: results still right every time
        vs, adv = volley.vtrace(*args)
        assert np.array_equal(vs, want[0]) and np.array_equal(adv, want[1])



def test_threads_never_share_results(monkeypatch):
    """Several threads calling vtrace on one shape (so the reused result arrays are in
    play) each get their own answer: no thread's results are another's arrays, and none
    is overwritten while its caller holds it. The check "this cached pair is free" is
    made slow here, so that another thread runs between it and taking the pair, as the
    interpreter's thread switches rarely but sometimes do."""
    import sys
    import time
    vt = sys.modules["volley.vtrace"]  # the module (volley.vtrace is the function)
    free = vt._free

    def slow_free(pair, shape):
        got = free(pair, shape)
        time.sleep(0.0002)
        return got
    monkeypatch.setattr(vt, "_free", slow_free)
    _assert_threads_get_their_own_results()


def test_threads_never_share_results_after_the_lock(monkeypatch):
    """As above, with the other window made slow: a thread switch right after a pair was
    taken and the lock let go, before the caller has bound the arrays to its names. The
    taken pair must already be held then, or another thread finds it free and takes it."""
    import sys
    import threading
    import time
    vt = sys.modules["volley.vtrace"]  # the module (volley.vtrace is the function)

    class SlowRelease:
        def __init__(self):
            self.lock = threading.Lock()

        def __enter__(self):
            self.lock.acquire()

        def __exit__(self, *exc):
            self.lock.release()
            time.sleep(0.0002)  # another thread runs before the caller unpacks the pair
            return False
    monkeypatch.setattr(vt, "_spare_lock", SlowRelease())
    _assert_threads_get_their_own_results()


def _assert_threads_get_their_own_results():
    """Four threads call volley.vtrace 200 times each on their own inputs; each result must
    be what that thread's inputs give, never another thread's."""
    import threading
    import time
    n, T, rounds = 4, 8, 200
    data = [inputs(n, T, seed)[:4] for seed in range(4)]
    want = [tuple(a.copy() for a in volley.vtrace(*d)) for d in data]
    bad, start = [], threading.Barrier(len(data))

    def work(k):
        start.wait()
        for _ in range(rounds):
            vs, adv = volley.vtrace(*data[k])
            time.sleep(0)  # another thread's call while this one holds its results
            if not (np.array_equal(vs, want[k][0]) and np.array_equal(adv, want[k][1])):
                bad.append(k)
            del vs, adv

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad, f"{len(bad)} results of {len(data) * rounds} were another thread's"
