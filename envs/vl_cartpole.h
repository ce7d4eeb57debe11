/*  vl_cartpole: test hooks into the CartPole environment (vl_cartpole_env in
    vl_env.h). Actors never need these; tests use them to step from a known
    state. */
#ifndef VL_CARTPOLE_H
#define VL_CARTPOLE_H

/* Sets the physical state (x, x_dot, theta, theta_dot) of a state made by
   vl_cartpole_env.create, and clears its ended flag; the step counter is kept. */
void vl_cartpole_set_state(void *state, const double s[4]);

/* Copies the physical state (x, x_dot, theta, theta_dot) into s. */
void vl_cartpole_get_state(const void *state, double s[4]);

#endif
