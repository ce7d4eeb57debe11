"""gymnasium.make_vec as Gymnasium's docs write it works with run_actor in every
vectorization mode: its default (the env's own vector class where one is
registered: CartPole-v1's CartPoleVectorEnv, whose reset resets every env
whatever options["reset_mask"] says), "sync" and "async", each in the autoreset
modes it offers (NEXT_STEP, SAME_STEP, DISABLED), for CartPole-v1 and
Pendulum-v1. What the actor records through a real broker and C learner is,
step for step, what the same env id's single envs (gymnasium.make, seeded as
the vector env seeds them) give for the same actions: observations (the next
episode's first where one ended), rewards, terminations, truncations and each
ended episode's final observation; no NEXT_STEP reset step among them."""
import signal
import threading
import time

import numpy as np
import pytest

import volley
from conftest import need
from procs import free_port, top_kind
from test_learner import mlp_weights

gym = need("gymnasium")

N, T, SEED = 3, 16, 5
STEPS = N * T * 8
# short time limits, so that truncations come as often as terminations
LIMITS = {"CartPole-v1": 20, "Pendulum-v1": 12}
MODES = ["NEXT_STEP", "SAME_STEP", "DISABLED"]
CASES = [(env_id, vec, mode) for env_id in LIMITS
         for vec, mode in [(None, None)] + [(v, m) for v in ("sync", "async") for m in MODES]]


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    """A broker for the module."""
    from procs import Procs
    p = Procs(tmp_path_factory.mktemp("gym_vec"))
    port = free_port()
    p.broker(port)
    yield port
    p.stop_all()


def make_vec(env_id, vec, mode):
    """gym.make_vec as a user writes it: only what differs from the defaults named."""
    kw = {"max_episode_steps": LIMITS[env_id]}
    if vec:
        kw["vectorization_mode"] = vec
    if mode and mode != "NEXT_STEP":
        kw["vector_kwargs"] = {"autoreset_mode": gym.vector.AutoresetMode[mode]}
    return gym.make_vec(env_id, num_envs=N, **kw)


def uniform(obs, weights):
    """Actions drawn at random (a policy that learns would end fewer CartPole
    episodes): CartPole's choices of 2, Pendulum's torques."""
    n = len(obs)
    if obs.shape[1] == 4:
        return RNG.integers(0, 2, n), np.full(n, np.log(0.5))
    return RNG.uniform(-2, 2, (n, 1)), np.full(n, -np.log(4.0))


RNG = np.random.default_rng(1)


def segments(port, venv, policy):
    """Runs venv through run_actor (on a thread, acting at random) into a
    volley.Learner of policy on the broker at port; returns each env's
    segments joined in order: {env: {array: [steps, ...]}}, and obs with
    one row more (the last bootstrap)."""
    failed = []

    def act():
        try:
            assert volley.run_actor(venv, broker=f"127.0.0.1:{port}", policy=policy, horizon=T,
                                    max_steps=STEPS, seed=SEED, policy_fn=uniform,
                                    max_ahead=0) == STEPS
        except BaseException as e:  # the main thread reports it
            failed.append(e)
    thread = threading.Thread(target=act, daemon=True)  # a failed case leaves it waiting
    thread.start()
    got = []
    with volley.Learner(f"127.0.0.1:{port}", policy=policy, capacity=64, timeout=30) as learner:
        weights = mlp_weights(D=learner.spec["obs_dim"], A=learner.spec["num_actions"])
        if learner.spec["action"].is_box:
            weights["pi.logstd"] = np.zeros(learner.spec["num_actions"], np.float32)
        learner.publish(weights, 1)
        deadline = time.monotonic() + 60  # a hang guard only
        while sum(len(b.seq) for b in got) < STEPS // T and time.monotonic() < deadline:
            b = learner.take(8, timeout=1.0, partial=True)
            if b is not None:
                got.append(b)
    thread.join(60)
    assert not failed, failed
    out = {}
    for b in got:
        for k in np.argsort(b.seq, kind="stable"):
            env = out.setdefault(int(b.env_id[k]), {})
            for name in ("obs", "actions", "rewards", "dones", "truncated", "final_obs"):
                rows = b[name][k][:T] if name == "obs" else b[name][k]
                env.setdefault(name, []).append(rows)
            env["last"] = b.obs[k][T]
    return {i: {**{n: np.concatenate(v) for n, v in e.items() if n != "last"},
                "obs": np.concatenate(e["obs"] + [e["last"][None]])} for i, e in out.items()}


def single_env_steps(env_id, spec, i, actions):
    """Env i of N, as a single env of env_id reset with SEED + i (as a vector
    env's reset(seed=SEED) seeds it), then unseeded after each end, stepped
    with actions: its observations (one row more), rewards, terminated,
    truncated and final observations (zero where none ended)."""
    e = gym.make(env_id, max_episode_steps=LIMITS[env_id])
    obs = [spec.flatten(e.reset(seed=SEED + i)[0])]
    rew, term, trunc = np.zeros(len(actions)), np.zeros(len(actions), bool), \
        np.zeros(len(actions), bool)
    final = np.zeros((len(actions), spec.obs_dim), np.float32)
    for t, raw in enumerate(actions):
        o, rew[t], term[t], trunc[t], _ = e.step(spec.action.to_env_one(raw))
        if term[t] or trunc[t]:
            final[t] = spec.flatten(o)
            o, _ = e.reset()
        obs.append(spec.flatten(o))
    e.close()
    return np.stack(obs), rew, term, trunc, final


@pytest.mark.parametrize("env_id,vec,mode", CASES)
def test_make_vec_segments_carry_what_single_envs_give(port, env_id, vec, mode):
    venv = make_vec(env_id, vec, mode)
    try:
        if mode:
            assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode[mode]
        got = segments(port, venv, f"{env_id}-{vec or 'default'}-{mode or 'own'}")  # a policy each
    finally:
        venv.close()
    spec = volley.spec_from_spaces(venv.single_observation_space, venv.single_action_space)
    assert sorted(got) == list(range(N)), sorted(got)
    terms = truncs = 0
    for i, seg in got.items():
        assert len(seg["rewards"]) == STEPS // N, (i, len(seg["rewards"]))
        obs, rew, term, trunc, final = single_env_steps(env_id, spec, i, seg["actions"])
        where = f"{env_id} {vec or 'default'} {mode or ''}: env {i}"
        assert np.array_equal(seg["obs"], obs), (where, seg["obs"], obs)
        assert np.array_equal(seg["rewards"], rew.astype(np.float32)), (where, seg["rewards"])
        assert np.array_equal(seg["dones"], (term | trunc).astype(np.float32)), where
        cut = trunc & ~term  # an episode both ends at once: terminated, no bootstrap
        assert np.array_equal(seg["truncated"], cut.astype(np.uint8)), \
            (where, np.flatnonzero(seg["truncated"]), np.flatnonzero(cut))
        # the final observation of each truncated episode: what its last value bootstraps from
        assert np.array_equal(seg["final_obs"][cut], final[cut]), where
        terms, truncs = terms + int(term.sum()), truncs + int(cut.sum())
    assert truncs > N, (terms, truncs)
    if env_id == "CartPole-v1":
        assert terms > N, ("random CartPole actions end some episodes before 20 steps",
                           terms, truncs)


MAKE_VEC = '''import gymnasium as gym
def make_env():
    return gym.make_vec("CartPole-v1", num_envs=8)
'''


def test_python_actor_takes_make_vec_as_the_docs_write_it(procs, tmp_path):
    """`python -m volley actor --env MOD:FN` with FN returning gym.make_vec("CartPole-v1",
    num_envs=8): CartPole's own vector class runs (as make_vec's "sync" one, said once),
    the learner takes its segments, and the actor ends cleanly."""
    (tmp_path / "gym_vec_env.py").write_text(MAKE_VEC)
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    steps = 8 * 64 * 4
    actor = procs.python("actor", "-m", "volley", "actor", "--env", "gym_vec_env:make_env",
                         "--broker", f"127.0.0.1:{port}", "--steps", steps, cwd=tmp_path)
    try:
        rc = actor.wait(120)  # a hang guard only
    except Exception:
        procs.stop(actor, signal.SIGINT)
        raise
    text = procs.text(actor)
    assert rc == 0 and "Traceback" not in text, procs.dump()
    assert f"{steps} env steps" in text and text.count("CartPoleVectorEnv") == 1, text
    deadline = time.monotonic() + 30  # a hang guard only
    while time.monotonic() < deadline and int(top_kind(port, "learner").get("env_steps", 0)) == 0:
        time.sleep(0.3)
    assert int(top_kind(port, "learner").get("env_steps", 0)) > 0, procs.dump()
