"""volley.PrioritizedSampler over store/vl_sampler.c."""
import threading

import numpy as np
import pytest

import volley


def test_zero_priority_slots_never_drawn():
    s = volley.PrioritizedSampler(100, seed=3)
    slots = np.arange(100)
    s.set(slots, np.where(slots % 3 == 0, 1.0 + slots, 0.0))
    assert s.count == 34 and s.total == pytest.approx(sum(1.0 + i for i in range(0, 100, 3)))
    drawn, _ = s.sample(20000, beta=0.5)
    assert drawn.dtype == np.uint32 and np.all(drawn % 3 == 0)
    s.set(0, 0.0)  # taken out again
    assert 0 not in s.sample(5000, beta=0.5)[0] and s.count == 33


def test_proportions():
    s = volley.PrioritizedSampler(8, seed=5)
    s.set([1, 2, 5, 7], [1.0, 2.0, 3.0, 4.0])
    drawn, _ = s.sample(100000, beta=0.0)
    share = np.bincount(drawn, minlength=8) / drawn.size
    want = np.array([0, 1, 2, 0, 0, 3, 0, 4]) / 10
    assert np.abs(share - want).max() < 0.005  # stratified draws: far tighter than iid


def test_weights_max_one():
    s = volley.PrioritizedSampler(16, seed=7)
    s.set(np.arange(16), np.linspace(0.5, 8.0, 16))
    for beta in (0.0, 0.4, 1.0):
        drawn, w = s.sample(64, beta)
        assert w.dtype == np.float32 and w.max() == 1.0 and np.all(w > 0)
        # w_i = (N P(i))^-beta / max w over the draw
        p = s.get(drawn) / s.total
        raw = (s.count * p) ** -beta
        assert np.allclose(w, raw / raw.max(), rtol=1e-5)
        if beta == 0.0:
            assert np.all(w == 1.0)


def test_get_set_round_trip_and_errors():
    s = volley.PrioritizedSampler(4)
    s.set([0, 3], 2.5)
    assert list(s.get([0, 1, 2, 3])) == [2.5, 0.0, 0.0, 2.5] and s.get(3) == 2.5
    with pytest.raises(IndexError, match=r"slots: 4 is out of range \[0, 4\)"):
        s.set(4, 1.0)
    with pytest.raises(IndexError, match=r"slots: -1 is out of range"):
        s.get([-1])
    with pytest.raises(ValueError, match=r"priorities: expected >= 0 and finite, got -1.0"):
        s.set([1], [-1.0])
    with pytest.raises(ValueError, match=r"priorities: .* got nan"):
        s.set([1], [np.nan])
    with pytest.raises(ValueError, match=r"capacity: expected 1 .. 2\^30, got 0"):
        volley.PrioritizedSampler(0)
    with pytest.raises(ValueError, match=r"no slot has priority"):
        volley.PrioritizedSampler(4).sample(1, 1.0)


def test_priority_and_beta_helpers():
    adv = np.array([[1.0, -2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    p = volley.PrioritizedSampler.priority(adv, 0.5)
    assert p[0] == pytest.approx(6.0 ** 0.5) and p[1] == pytest.approx(1e-6)
    assert volley.PrioritizedSampler.priority(adv[0], 0.0) == 1.0
    assert volley.PrioritizedSampler.beta(0.4, 50, 100) == pytest.approx(0.7)
    assert volley.PrioritizedSampler.beta(0.4, 200, 100) == 1.0


def test_shared_between_threads():
    s = volley.PrioritizedSampler(1024, seed=9)
    errors = []

    def work(k):
        try:
            for i in range(50):
                s.set(np.arange(k, 1024, 4), float(i + 1))
                drawn, w = s.sample(32, 0.5)
                assert w.max() == 1.0 and drawn.max() < 1024
        except Exception as e:  # reported below, with the thread's
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and s.count == 1024 and s.total == pytest.approx(1024 * 50)
