"""The learner owns the model: a Python actor given no model (`python3 -m volley actor` without
--model, a volley.Actor without model=) acts with the network its policy's learner trains
(here linear(64) lstm(64), not the actor's default), whether it starts before or after the
learner; it is not refused and training moves (the learner's version and env steps, read with
`volley top --once --kv`, grow). A volley.Actor that names another model is still refused."""
import time

import pytest

import volley
from procs import free_port, top_kind
from volley.envs.cartpole import CartPoleEnv, make_env

ENV = "volley.envs.cartpole:make_env"
LSTM = "linear(64) lstm(64)"
FOLLOWS = f"acts with its learner's network: {LSTM}"


def progress(port):
    """(version, env_steps) of the learner at 127.0.0.1:port, (0, 0) before its first stats."""
    s = top_kind(port, "learner")
    return int(s.get("version", 0)), int(s.get("env_steps", 0))


def wait_training(procs, port, step=None, secs=60):
    """Waits until the learner's version reaches 2 and then grows with its env steps; step()
    (when given) is called between readings to drive an in-process actor."""
    first, now, end = None, (0, 0), time.monotonic() + secs
    while time.monotonic() < end:
        if step:
            step()
        else:
            time.sleep(0.5)
        now = progress(port)
        if now[0] >= 2 and first is None:
            first = now
        elif first and now[0] > first[0] and now[1] > first[1]:
            return first, now
    raise AssertionError(f"no training: {first} -> {now}\n{procs.dump()}")


@pytest.mark.parametrize("order", ["after", "before"])
def test_python_actor_without_model_acts_with_the_learners(procs, order):
    port = free_port()
    procs.broker(port)
    actor_argv = ("-m", "volley", "actor", "--env", ENV, "--broker", f"127.0.0.1:{port}",
                  "--envs", 4, "--actor-id", 1)
    learner_args = ("--env", "cartpole", "--model", LSTM)
    if order == "after":
        learner = procs.learner(port, *learner_args)
        time.sleep(0.5)
        actor = procs.python("actor", *actor_argv)
    else:
        actor = procs.python("actor", *actor_argv)
        assert procs.wait_for(procs.procs[0], "actor 1 (policy 'default') joined", 20), procs.dump()
        learner = procs.learner(port, *learner_args)
    assert procs.wait_for(actor, FOLLOWS, 30), procs.dump()
    wait_training(procs, port)
    assert actor.poll() is None and learner.poll() is None, procs.dump()
    assert "refused" not in procs.text(actor), procs.dump()


def test_volley_actor_without_model_follows_and_one_naming_another_is_refused(procs, capfd):
    port = free_port()
    procs.broker(port)
    broker = f"127.0.0.1:{port}"
    envs = [make_env() for _ in range(4)]
    obs = [e.reset(seed=k)[0] for k, e in enumerate(envs)]
    with volley.Actor(broker=broker, spec=CartPoleEnv(), num_envs=4, actor_id=7) as actor:
        time.sleep(0.5)  # declared, with the network open, before the learner comes
        procs.learner(port, "--env", "cartpole", "--model", LSTM)

        def step(n=64):
            nonlocal obs
            for _ in range(n):
                actions = actor.act(obs)
                out = [e.step(int(a)) for e, a in zip(envs, actions)]
                final = [o for o, *_ in out]
                for i, (_, _, te, tr, _) in enumerate(out):
                    if te or tr:
                        out[i] = (envs[i].reset()[0],) + out[i][1:]
                obs = [o for o, *_ in out]
                actor.observe([r for _, r, *_ in out], [o[2] for o in out],
                              [o[3] for o in out], obs, final_obs=final)

        wait_training(procs, port, step)
        assert actor.steps > 0
    err = capfd.readouterr().err
    assert FOLLOWS in err, err
    assert "refused" not in err, err
    with volley.Actor(broker=broker, spec=CartPoleEnv(), num_envs=2, actor_id=8,
                      model="linear(64) tanh linear(64) tanh") as other:
        with pytest.raises(volley.actor.SpecRefused, match="state size: policy 'default' has 128"):
            for _ in range(200):
                other.act([e.reset()[0] for e in envs[:2]])
                time.sleep(0.05)
