"""volley.envs.cartpole is CartPole-v1 as envs/vl_cartpole.c (itself
Gymnasium's, bit for bit): from the same states and actions, the NumPy env
returns the same float32 observations, rewards and flags as the C env called
through libvolley, to the time limit of 500; the vectorized NumPy version
agrees with the single one (to rounding: np.cos on arrays is not math.cos) and its SAME_STEP autoreset hands out the final
observation."""
import ctypes

import numpy as np

from volley import _lib
from volley._types import EnvTable
from volley.envs.cartpole import CartPoleEnv, CartPoleVectorEnv

# env ABI 2: step takes the action as floats (`dims` of them; a discrete choice as a whole number)
STEP = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                        ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_int),
                        ctypes.POINTER(ctypes.c_int))
CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)
DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def c_env():
    t = EnvTable.in_dll(_lib.lib, "vl_cartpole_env")
    # vl_env_t's functions: create, destroy, seed, reset, step, then the vectorized five.
    return CREATE(t.fn0), DESTROY(t.fn1), STEP(t.fn4)


def test_numpy_cartpole_is_the_c_cartpole_bit_for_bit():
    create, destroy, step = c_env()
    _lib.lib.vl_cartpole_set_state.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
    rng = np.random.default_rng(5)
    env = CartPoleEnv()
    c = create(None)
    obs = (ctypes.c_float * 4)()
    term, trunc = ctypes.c_int(), ctypes.c_int()
    compared = ends = 0
    for episode in range(20):
        env.reset(seed=episode)
        # the C env counts its own steps for the time limit: a fresh one per episode
        destroy(c)
        c = create(None)
        _lib.lib.vl_cartpole_set_state(c, (ctypes.c_double * 4)(*env.state))
        for t in range(500):
            a = int(rng.integers(0, 2)) if episode % 2 else int(env.state[2] + env.state[3] > 0)
            o, r, te, tr, _ = env.step(a)
            rc = step(c, (ctypes.c_float * 1)(a), obs, ctypes.byref(term), ctypes.byref(trunc))
            assert np.array_equal(o, np.array(obs, np.float32)), (episode, t)
            assert (r, te, tr) == (rc, bool(term.value), bool(trunc.value)), (episode, t)
            compared += 1
            if te or tr:
                ends += 1
                break
    destroy(c)
    assert compared > 2000 and ends == 20


def test_vector_cartpole_agrees_and_autoresets():
    n = 6
    venv = CartPoleVectorEnv(n)
    obs, _ = venv.reset(seed=3)
    singles = [CartPoleEnv() for _ in range(n)]
    for i, e in enumerate(singles):
        e.state = venv.state[i].copy()
    finals = 0
    rng = np.random.default_rng(9)
    for t in range(200):
        actions = rng.integers(0, 2, n)
        outs = [e.step(a) for e, a in zip(singles, actions)]
        obs, r, te, tr, info = venv.step(actions)
        for i, (o, ri, tei, tri, _) in enumerate(outs):
            assert (bool(te[i]), bool(tr[i])) == (tei, tri)
            if tei or tri:
                assert info["_final_obs"][i]
                np.testing.assert_allclose(info["final_obs"][i], o, rtol=0, atol=1e-4)
                singles[i].state = venv.state[i].copy()
                singles[i].steps = 0
                finals += 1
            else:
                np.testing.assert_allclose(obs[i], o, rtol=0, atol=1e-4)
    assert finals > 0
