/*  vl_kept: a trained policy as it is kept on disk, for `volley eval` and
    `volley export`: the weights of a learner's checkpoint (a file, or a
    run directory's checkpoints/<policy>.ckpt), the network's sizes read off
    its tensors, and the env it was trained on when the run says (its
    config.ini). Everything read is checked; a refusal is one line. */
#ifndef VL_KEPT_H
#define VL_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "../envs/vl_env.h"
#include "../models/vl_policy.h"

#define VL_KEPT_PATH_MAX 4096

typedef struct {
    vl_weights_t *weights;             // owned: the checkpoint's "weights" section, decoded
    char checkpoint[VL_KEPT_PATH_MAX]; // the file the weights came from
    char env[VL_KEPT_PATH_MAX];        // the run's env (config.ini), "" when unknown
    char env_arg[VL_KEPT_PATH_MAX];    // the run's --env-arg, "" when none
    uint32_t obs_dim;                  // floats per observation (pi.0.weight's columns)
    uint32_t num_actions;              // logits (pi.2.weight's rows)
    uint32_t hidden;                   // units per hidden layer (pi.0.weight's rows)
    vl_policy_t *policy;               // owned, made by the first vl_kept_logits
} vl_kept_t;

/* Loads the policy kept at path: a checkpoint file, or a run directory
   (DIR/<policy>.ckpt where its config.ini records `checkpoint = DIR`, else
   RUN/checkpoints/<policy>.ckpt, else RUN/<policy>.ckpt as `--checkpoint
   DIR` leaves it; policy NULL means "default") and, for a run, its
   config.ini's env. Checks the file, the weights and that they form
   volley's MLP. Returns a new object (caller destroys), or NULL with a
   one-line reason in why[why_size]. */
vl_kept_t *vl_kept_load(const char *path, const char *policy, char *why, size_t why_size);

/* Returns the env to run a kept policy on: --env's (given, loaded as
   named), else the built-in its run's config.ini names. A plugin named
   only by a run's config.ini is not loaded (running a .so is the user's
   word, not a file's): NULL after saying "--env PATH" is needed. NULL with
   *none 1 when neither names one. Prints why as "volley CMD: ...". */
const vl_env_ops_t *vl_kept_env(const char *cmd, const char *given, const vl_kept_t *kept,
                                int *none);

/* Returns 1 if name is a Python env, "package.module:function" (a function
   returning a Gymnasium-style env, played by the Python package), else 0. */
int vl_kept_is_python_env(const char *name);

/* Returns the Python env to play a kept policy on: --env's (given) when it
   is one, else, with no --env, the one the run's config.ini records; NULL
   when the env is not a Python env. */
const char *vl_kept_python_env(const char *given, const vl_kept_t *kept);

/* Frees the object and nulls the pointer; safe on NULL and twice. */
void vl_kept_destroy(vl_kept_t **self_p);

/* For the Python package: the kept policy's sizes into dims (obs_dim,
   num_actions, hidden) and its weights' version into *version. Returns the
   env its run records ("" when unknown); self keeps it. */
const char *vl_kept_info(const vl_kept_t *self, uint32_t dims[3], uint64_t *version);

/* For the Python package: the policy id of the kept weights; self keeps it. */
const char *vl_kept_policy_id(const vl_kept_t *self);

/* For the Python package: the policy's logits [n][num_actions] for n
   observations obs [n][obs_dim], through the C forward pass. Returns 0, or
   -1 on no memory. */
int vl_kept_logits(vl_kept_t *self, uint32_t n, const float *obs, float *logits);

/* Reads obs_dim, num_actions and hidden off w's tensors (pi.0.weight
   [hidden][obs_dim], pi.2.weight [num_actions][hidden]) and checks that
   every tensor of volley's MLP of those sizes is there with its shape.
   Returns 0, or -1 with why. */
int vl_kept_arch(const vl_weights_t *w, uint32_t *obs_dim, uint32_t *num_actions, uint32_t *hidden,
                 char *why, size_t why_size);

/* Returns a new policy holding the kept weights (caller destroys), or NULL
   on no memory. */
vl_policy_t *vl_kept_policy(const vl_kept_t *self);

/* For the Python package's tests and tools: loads the policy kept at path
   (as vl_kept_load) and runs its forward pass on n observations obs
   [n][obs_dim]; writes log-probabilities logp [n][num_actions] and values
   [n] (either may be NULL). Returns 0, or -1 with why (also when obs_dim or
   num_actions differ from the kept policy's). */
int vl_kept_forward(const char *path, uint32_t n, uint32_t obs_dim, uint32_t num_actions,
                    const float *obs, float *logp, float *values, char *why, size_t why_size);

/* For the Python package's tests: copies the floats of tensor name of the
   policy kept at path into out[n] (n must be its element count: rows x
   cols). Returns 0, or -1 with why. */
int vl_kept_tensor(const char *path, const char *name, float *out, size_t n, char *why,
                   size_t why_size);

#endif
