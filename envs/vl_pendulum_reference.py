"""Prints the Pendulum-v1 trajectory that vl_pendulum_test.c compares with.

Run with Gymnasium installed (python3 vl_pendulum_reference.py): it makes
Gymnasium's own Pendulum-v1 (gymnasium.make, so under its TimeLimit of 200
steps), puts it in a fixed state and steps it with a fixed sequence of
float32 torques, some outside [-2, 2] (the env clips them), for its 200
steps.
It prints, as C initializers, each step's float32 observation and its
reward (float64, printed to 17 digits), the steps at which terminated and
truncated were first set, and the library versions, which matter: NumPy 2
keeps the torque terms in float32.
"""

import math

import gymnasium as gym
import numpy as np

START = (2.5, -0.7)  # theta, theta_dot
STEPS = 200


def action(t):
    """The torque at step t: a sweep to +-3 plus a few fixed values beyond the bounds."""
    fixed = {10: 5.0, 11: -7.5, 120: 2.0, 121: -2.0, 150: 1e6, 151: -1e6}
    return np.float32(fixed.get(t, 3.0 * math.sin(0.37 * t)))


def main():
    env = gym.make("Pendulum-v1")
    env.reset(seed=0)
    env.unwrapped.state = np.array(START, dtype=np.float64)
    print(f"// gymnasium {gym.__version__}, numpy {np.__version__}")
    print(f"// start {START}; actions: see action() in vl_pendulum_reference.py")
    obs, rewards, first_term, first_trunc = [], [], -1, -1
    for t in range(STEPS):
        o, r, term, trunc, _ = env.step(np.array([action(t)], dtype=np.float32))
        obs.append(o)
        rewards.append(float(r))
        if term and first_term < 0:
            first_term = t + 1
        if trunc and first_trunc < 0:
            first_trunc = t + 1
    print("static const float s_gym_actions[%d] = {" % STEPS)
    print(",\n".join("    %.8ef" % action(t) for t in range(STEPS)) + "};")
    print("static const float s_gym_obs[%d][3] = {" % STEPS)
    print(",\n".join("    {%.8ef, %.8ef, %.8ef}" % tuple(o) for o in obs) + "};")
    print("static const double s_gym_rewards[%d] = {" % STEPS)
    print(",\n".join("    %.17g" % r for r in rewards) + "};")
    print(f"// first terminated at step {first_term}, first truncated at step {first_trunc}")


if __name__ == "__main__":
    main()
