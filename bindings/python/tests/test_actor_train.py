"""Python actors only (`python3 -m volley actor --env volley.envs.cartpole:make_env`,
two processes) with a C broker and a C learner train the NumPy CartPole to
solved, as `volley up` judges it (a mean return >= 475 over a window of 100
episodes in the learner's stats, read with `volley top --once --kv`); then
SIGINT stops one actor and SIGTERM the other, each with exit code 0, as
`volley actor` does. Training is bounded by env steps (STEP_BUDGET; about
260k measured, 15 s on 2 busy cores); HANG_S only ends a run that hangs."""
import signal
import time

from procs import free_port, top_kind

ENV = "volley.envs.cartpole:make_env"
STEP_BUDGET = 1_000_000
HANG_S = 240



def test_python_actors_solve_cartpole(procs):
    port = free_port()
    procs.broker(port)
    procs.learner(port)
    actors = [procs.python(f"actor{k}", "-m", "volley", "actor", "--env", ENV, "--broker",
                           f"127.0.0.1:{port}", "--envs", 8, "--actor-id", k, "--seed", k)
              for k in (1, 2)]
    solved, stats, start = False, {}, time.monotonic()
    while not solved and int(stats.get("env_steps", 0)) <= STEP_BUDGET:
        assert time.monotonic() - start < HANG_S, f"hung: {stats}\n{procs.dump()}"
        time.sleep(1)
        assert all(a.poll() is None for a in actors), procs.dump()
        stats = top_kind(port, "learner")
        solved = int(stats.get("window", 0)) >= 100 and float(stats.get("mean_return", 0)) >= 475
    print(f"{'solved' if solved else 'not solved'} in {time.monotonic() - start:.0f} s:",
          {k: stats.get(k) for k in ("env_steps", "mean_return", "window", "version")})
    assert solved, f"not solved within {STEP_BUDGET} env steps: {stats}\n{procs.dump()}"
    assert ENV in procs.text(procs.procs[1]), "the learner took the Python actors' spec (named by --env)"
    assert procs.stop(actors[0], signal.SIGINT) == 0, procs.dump()
    assert procs.stop(actors[1], signal.SIGTERM) == 0, procs.dump()
    for a in actors:
        assert "Traceback" not in procs.text(a), procs.dump()
