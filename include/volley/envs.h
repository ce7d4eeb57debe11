/*  volley/envs.h: volley's built-in environments as env tables (volley/env.h),
    for a caller that steps them itself (the Python package's tests compare
    its NumPy CartPole with the C one step for step). CartPole is Gymnasium's
    CartPole-v1 exactly; Catch has 10 balls fall on a 16x16 2-bit screen;
    catch-pixels is Catch observed through that screen alone; Pendulum is
    Gymnasium's Pendulum-v1 exactly, a box action (one torque); reach moves
    an agent across a 9x9 grid to a goal with a multi-discrete action (dx,
    dy). Two need a policy with memory: cartpole-masked is CartPole observed
    through (x, theta) alone, and memory asks at its last step which cue its
    first step showed. */
#ifndef VOLLEY_ENVS_H
#define VOLLEY_ENVS_H

#include <volley/env.h>
#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CartPole-v1, per-env form: its state holds (x, x_dot, theta, theta_dot). */
VL_EXPORT extern const vl_env_t vl_cartpole_env;

/* cartpole-masked, per-env form: CartPole-v1 whose observation is (x, theta)
   alone, one f32 field of 2; its state is CartPole's. */
VL_EXPORT extern const vl_env_t vl_cartpole_masked_env;

/* Catch, per-env form. */
VL_EXPORT extern const vl_env_t vl_catch_env;

/* catch-pixels, per-env form: Catch whose observation is its screen alone,
   one u2 field [1][16][16]. */
VL_EXPORT extern const vl_env_t vl_catch_pixels_env;

/* Pendulum-v1, per-env form: its state holds (theta, theta_dot). */
VL_EXPORT extern const vl_env_t vl_pendulum_env;

/* reach, per-env form: a 9x9 grid, action multi_discrete(3, 3). */
VL_EXPORT extern const vl_env_t vl_reach_env;

/* memory, per-env form: one f32 field of 4 (a cue of 2, a blank flag, a
   query flag), discrete(2); each episode is 12 steps. */
VL_EXPORT extern const vl_env_t vl_memory_env;

/* Sets the physical state (x, x_dot, theta, theta_dot) of a state made by
   vl_cartpole_env.create or vl_cartpole_masked_env.create, and clears its
   ended flag; the step counter is kept. */
VL_EXPORT void vl_cartpole_set_state(void *state, const double s[4]);

/* Copies the physical state (x, x_dot, theta, theta_dot) of a state made by
   vl_cartpole_env.create or vl_cartpole_masked_env.create into s. */
VL_EXPORT void vl_cartpole_get_state(const void *state, double s[4]);

/* Sets the state (theta, theta_dot) of a state made by
   vl_pendulum_env.create; the step counter is kept. */
VL_EXPORT void vl_pendulum_set_state(void *state, const double s[2]);

/* Copies the state (theta, theta_dot) of a state made by
   vl_pendulum_env.create into s. */
VL_EXPORT void vl_pendulum_get_state(const void *state, double s[2]);

#ifdef __cplusplus
}
#endif

#endif
