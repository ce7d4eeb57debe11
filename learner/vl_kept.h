/*  vl_kept: a trained policy as it is kept on disk, for `volley eval` and
    `volley export`: the weights of a learner's checkpoint (a file, or a
    run directory's checkpoints/<policy>.ckpt), the network its spec section
    names (observation fields, actions, model; a checkpoint from before
    specs were kept is volley's MLP, its sizes read off its tensors), and
    the env it was trained on when the run says (its config.ini). Everything read is checked; a
   refusal is one line. What the Python package calls is public (volley/policy.h); the rest is the
    program's. */
#ifndef VL_KEPT_H
#define VL_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_file_id.h"
#include "../envs/vl_env.h"
#include "../messages/vl_spec.h"
#include "../models/vl_policy.h"
#include "volley/policy.h"

#define VL_KEPT_PATH_MAX 4096

struct vl_kept_s {
    vl_weights_t *weights;             // owned: the checkpoint's "weights" section, decoded
    char checkpoint[VL_KEPT_PATH_MAX]; // the file the weights came from
    char env[VL_KEPT_PATH_MAX];        // the run's env (config.ini), "" when unknown
    char env_arg[VL_KEPT_PATH_MAX];    // the run's --env-arg, "" when none
    int has_env_id;                    // env is a plugin its run recorded as env_id:
    vl_file_id_t env_id;               // its size and CRC-32C when trained on
    uint32_t obs_dim;                  // floats per observation (pi.0.weight's columns)
    uint32_t num_actions;              // head outputs (pi.2.weight's rows)
    vl_action_spec_t action;           // the action space (the spec's; else discrete)
    uint32_t hidden;                   // units per hidden layer (pi.0.weight's rows)
    vl_policy_t *policy;               // owned: the network load checked, or the first
                                       // vl_kept_step made (vl_kept_policy hands it over)
    int has_spec;                      // the checkpoint carries its policy's spec:
    vl_spec_t spec;                    // its fields, actions and model rebuild the network
    int torch;                         // its model is torch:MOD:FN, a PyTorch module only
                                       // Python builds: no C network, policy stays NULL
};

/* Checks that env gives what the kept policy reads: its observation size
   and actions, and when the checkpoint keeps its spec, the same observation
   fields (a conv net reads an image field's shape and encoding, not only
   its size). Returns 0, or -1 after writing one line to why naming both. */
int vl_kept_fits(const vl_kept_t *kept, const vl_env_ops_t *env, char *why, size_t why_size);

/* Returns the env to run a kept policy on: --env's (given, loaded as
   named), else the one its run's config.ini names: a built-in, or a plugin
   at the absolute path `volley up` recorded, loaded only while it is the
   file trained on (the size and CRC-32C of its [env]); a plugin missing,
   changed or recorded without them gives NULL after one line naming it and
   what was expected. NULL with *none 1 when neither names one. Prints why
   as "volley CMD: ...". */
const vl_env_ops_t *vl_kept_env(const char *cmd, const char *given, const vl_kept_t *kept,
                                int *none);

/* Returns 1 if name is a Python env, "package.module:function" (a function
   returning a Gymnasium-style env, played by the Python package), else 0. */
int vl_kept_is_python_env(const char *name);

/* Returns the Python env to play a kept policy on: --env's (given) when it
   is one, else, with no --env, the one the run's config.ini records; NULL
   when the env is not a Python env. */
const char *vl_kept_python_env(const char *given, const vl_kept_t *kept);

/* Reads obs_dim, num_actions and hidden off w's tensors (pi.0.weight
   [hidden][obs_dim], pi.2.weight [num_actions][hidden]) and checks that
   every tensor of volley's MLP of those sizes is there with its shape.
   Returns 0, or -1 with why. */
int vl_kept_arch(const vl_weights_t *w, uint32_t *obs_dim, uint32_t *num_actions, uint32_t *hidden,
                 char *why, size_t why_size);

/* Returns a policy holding the kept weights (caller destroys): the one
   vl_kept_load checked them against, handed over once, else a new one.
   NULL on no memory, and always for a torch: model (no C network). */
vl_policy_t *vl_kept_policy(vl_kept_t *self);

#endif
