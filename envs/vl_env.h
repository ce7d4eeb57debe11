/*  vl_env: the environments an actor steps. Every environment, built in or
    loaded from a plugin, is a vl_env_t table (include/volley/env.h), checked
    once into a vl_env_ops_t; an actor steps its N environments through one
    vl_envs_t, which drives either form of the table (per env or vectorized)
    and checks everything the environment writes. One path for every env. */
#ifndef VL_ENV_H
#define VL_ENV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../include/volley/env.h"
#include "../messages/vl_action.h"
#include "../messages/vl_obs.h"

/* A checked environment table and what volley derives from it. Lives for
   the process (plugins are never unloaded). */
typedef struct {
    const vl_env_t *table;         // the built-in's or the plugin's table (a version 1
                                   // table: a version 2 copy of its spec, functions NULL)
    const vl_env_v1_t *v1;         // a version 1 plugin's own table, else NULL
    const char *name;              // table->name
    const char *summary;           // one line for --help
    const char *path;              // the plugin's path, NULL for a built-in
    uint32_t obs_dim;              // floats per observation: the values of obs_spec
    vl_obs_spec_t obs_spec;        // how observations travel (fields, shapes, encodings)
    float low[VL_OBS_FIELDS_MAX];  // each field's f32 range (low == high: none)
    float high[VL_OBS_FIELDS_MAX]; // (integer encodings: unused)
    vl_action_spec_t action;       // the action space
    int has_solved_return;         // 1: solved_return is meaningful
    float solved_return;           // mean return over 100 episodes that counts as solved
    int vectorized;                // 1: the table gives the vectorized form
    uint32_t n_figures;            // the env's own episode figures (0: none)
    const char *figure_names[VL_ENV_FIGURES_MAX];
} vl_env_ops_t;

/* Checks a table (ABI version, name, fields, actions, exactly one complete
   form). A version 1 table (vl_env_v1_t) is taken as a DISCRETE space of
   its num_actions, stepped through its own functions. Returns 0 and fills
   *ops (path NULL: the loader sets it), or -1, *ops untouched, and writes
   the reason into why (e.g. "built for env ABI version 3, this volley
   reads 1 and 2"). */
int vl_env_check(const vl_env_t *table, vl_env_ops_t *ops, char *why, size_t why_size);

/* Checks a table's spec only (ABI version, name, fields, actions; its
   functions are not looked at): the spec of an environment stepped by
   someone else. Returns 0 and fills *ops (vectorized 0), or -1 and the
   reason in why. */
int vl_env_check_spec(const vl_env_t *table, vl_env_ops_t *ops, char *why, size_t why_size);

/* Returns the built-in environment with this name, or NULL. */
const vl_env_ops_t *vl_env_find(const char *name);

/* Returns the built-in environment with this name, or, for a name with a
   '/' or ending in ".so", the plugin loaded from that path (dlopen, the
   `volley_env` symbol, vl_env_check). Returns NULL after printing
   "volley <cmd>: ..." with the reason to stderr. */
const vl_env_ops_t *vl_env_lookup(const char *cmd, const char *name);

/* Prints the --env help lines, one line per built-in and, where the
   default is the first built-in (dflt NULL), --env-arg's line; otherwise
   dflt names the default (e.g. for a learner, which creates no env). */
void vl_env_print_help(FILE *out, const char *dflt);

/* N environments stepped together. */
typedef struct vl_envs_s vl_envs_t;

/* What an F32 observation value outside its declared range does (--obs-check):
   stop, naming the element, its value and the range (error, the default);
   take it after one warning (warn); take it unchecked (off). A NaN, an
   infinity or an integer encoding's value out of range stops the actor in
   every mode: it cannot travel. */
typedef enum { VL_OBS_CHECK_ERROR = 0, VL_OBS_CHECK_WARN = 1, VL_OBS_CHECK_OFF = 2 } vl_obs_check_t;

/* Creates n environments of env (create or vec_create with arg), seeds
   environment i with seeds[i] and resets them all into obs [n][obs_dim].
   Returns NULL after logging why. Caller destroys. */
vl_envs_t *vl_envs_new(const vl_env_ops_t *env, uint32_t n, const char *arg, const uint64_t *seeds,
                       float *obs);

/* Frees the environments and nulls the pointer; safe on NULL and twice. */
void vl_envs_destroy(vl_envs_t **self_p);

/* Sets what an F32 value outside its declared range does (default error). */
void vl_envs_set_obs_check(vl_envs_t *self, vl_obs_check_t mode);

/* Steps every environment with actions [n][action.dims] (each in its
   space; a box action is clipped to its bounds here, the caller's array
   left as it is). Writes obs
   [n][obs_dim] (where an episode ended, the next episode's first
   observation), rewards [n], terminated [n] and truncated [n] (0 or 1, not
   both: terminated wins) and, where an episode ended, final_obs [n][obs_dim]
   (its last observation; rows of envs whose episode goes on are left
   unspecified, and final_obs must not be NULL). Checks what the environment
   wrote (finite, in its declared range, flags 0 or 1). Returns 0, or -1
   after logging why once; after -1 the arrays' contents are unspecified and
   the caller stops. */
int vl_envs_step(vl_envs_t *self, const float *actions, float *obs, float *rewards,
                 uint8_t *terminated, uint8_t *truncated, float *final_obs);

/* Returns the episode figures of the last vl_envs_step: [n][n_figures],
   read only where an episode ended; NaN where the env gave none, or an
   infinite value it gave. NULL when the env names no figures. */
const float *vl_envs_figures(const vl_envs_t *self);

/* The built-in tables, vl_cartpole_env, vl_catch_env and vl_catch_pixels_env,
   are public. */
#include "../include/volley/envs.h"

#endif
