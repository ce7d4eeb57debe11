"""run_actor records the same, correct steps from a list of envs, a
pre-1.0 vector env (info["final_observation"]) and a 1.0 SAME_STEP vector env
(info["final_obs"]): next_obs is the next episode's first observation where
one ended, final_obs the ended one's last (so truncation bootstraps from
it); a NEXT_STEP vector env whose reset ignores options["reset_mask"] and
one that hides its final observation are refused with a reason. A real broker and C learner take the segments."""
import numpy as np
import pytest

import volley
from actor_envs import Counter, NextStepVec, OldVec, SameStepVec, SilentVec
from procs import free_port

N, T, STEPS = 3, 8, 3 * 8 * 4


def record(monkeypatch, port, envs):
    """Runs envs through run_actor; returns every observe's arguments."""
    seen = []
    real = volley.Actor.observe

    def observe(self, rewards, terminated, truncated, next_obs, final_obs=None):
        seen.append((np.array(terminated, bool), np.array(truncated, bool),
                     np.array(next_obs, np.float32), np.array(final_obs, np.float32)))
        return real(self, rewards, terminated, truncated, next_obs, final_obs)
    monkeypatch.setattr(volley.Actor, "observe", observe)
    assert volley.run_actor(envs, broker=f"127.0.0.1:{port}", horizon=T,
                            max_steps=STEPS) == STEPS
    monkeypatch.undo()
    return seen


def check(seen):
    """Every step as Counter defines it; returns the truncations seen."""
    t, ep, truncs = np.zeros(N), np.zeros(N), 0
    for term, trunc, nxt, final in seen:
        t += 1
        for k in range(N):
            ended = t[k] == 3 + k
            assert term[k] == (ended and ep[k] % 2 == 0) and trunc[k] == (ended and ep[k] % 2 == 1)
            if ended:
                assert final[k].tolist() == [k, ep[k], t[k], 1], final[k]
                ep[k] += 1
                t[k] = 0
                truncs += int(trunc[k])
            assert nxt[k].tolist() == [k, ep[k], t[k], 0], (k, nxt[k])
    return truncs


def test_env_list_and_both_final_obs_styles_record_the_same_steps(procs, monkeypatch):
    port = free_port()
    procs.broker(port)
    procs.learner(port, "--batch", 3)
    runs = [record(monkeypatch, port, [lambda k=k: Counter(k) for k in range(N)]),
            record(monkeypatch, port, OldVec(N)),
            record(monkeypatch, port, SameStepVec(N))]
    assert check(runs[0]) > 5
    for run in runs[1:]:
        assert check(run) > 5
        for a, b in zip(runs[0], run):
            for x, y in zip(a[:3], b):
                assert np.array_equal(x, y)


def test_next_step_and_silent_autoreset_are_refused(procs):
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    with pytest.raises(ValueError, match="changed envs the mask left out"):
        volley.run_actor(NextStepVec(N), broker=f"127.0.0.1:{port}", horizon=T, max_steps=STEPS)
    with pytest.raises(ValueError, match="without info\\['final_observation'\\]"):
        volley.run_actor(SilentVec(N), broker=f"127.0.0.1:{port}", horizon=T, max_steps=STEPS)
