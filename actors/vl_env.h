/*  vl_env: the environment interface an actor steps. An environment is a
    table of operations (vl_env_ops_t) over an opaque state; built-in
    environments are found by name. */
#ifndef VL_ENV_H
#define VL_ENV_H

#include <stdint.h>
#include <stdio.h>

#include "../messages/vl_obs.h"

typedef struct {
    const char *name;       // what --env takes, e.g. "cartpole"
    const char *summary;    // one line for --help
    uint32_t obs_dim;       // floats per observation: the values of obs_spec
    vl_obs_spec_t obs_spec; // how observations travel (fields, shapes, encodings)
    uint32_t num_actions;   // discrete actions 0 .. num_actions - 1
    float solved_return;    // mean return over 100 episodes that counts as solved
    /* Returns a new state, or NULL on no memory. Caller destroys. */
    void *(*create)(void);
    /* Frees the state; safe on NULL. */
    void (*destroy)(void *state);
    /* Seeds the state's own RNG; the next reset draws from it. */
    void (*seed)(void *state, uint64_t seed);
    /* Starts an episode; writes obs_dim floats of the first observation. */
    void (*reset)(void *state, float *obs);
    /* Applies action (in range: the caller checks); writes the next
       observation and returns the reward. *terminated is set when the episode
       ended by the task's rule, *truncated when it hit its time limit. */
    float (*step)(void *state, int32_t action, float *obs, int *terminated, int *truncated);
} vl_env_ops_t;

/* Returns the built-in environment with this name, or NULL. */
const vl_env_ops_t *vl_env_find(const char *name);

/* Returns the built-in environment with this name, or NULL after printing
   "volley <cmd>: unknown --env ..." to stderr. */
const vl_env_ops_t *vl_env_lookup(const char *cmd, const char *name);

/* Prints the --env help line and one line per built-in environment. */
void vl_env_print_help(FILE *out);

extern const vl_env_ops_t vl_cartpole_ops;
extern const vl_env_ops_t vl_catch_ops;

#endif
