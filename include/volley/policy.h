/*  volley/policy.h: a trained policy as a learner keeps it on disk (its
    checkpoint file, or a run directory of `volley up`), read back to act:
    the network's sizes come from its tensors, the env its run was trained
    on from the run's config.ini. `volley eval`, `volley export` and the
    Python package read policies through it. Everything read is checked; a
    refusal is one line in why. */
#ifndef VOLLEY_POLICY_H
#define VOLLEY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <volley/env.h>
#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vl_kept_s vl_kept_t;

/* Loads the policy kept at path: a checkpoint file, or a run directory
   (DIR/<policy>.ckpt where its config.ini records `checkpoint = DIR`, else
   RUN/checkpoints/<policy>.ckpt, else RUN/<policy>.ckpt as `--checkpoint
   DIR` leaves it; policy NULL means "default") and, for a run, its
   config.ini's env. Checks the file, the weights and that they form the
   network the checkpoint's spec names (volley's MLP before specs were
   kept); a torch:MOD:FN model, a PyTorch module only Python builds, is
   kept as its spec and tensors, unchecked, with no C network (see
   vl_kept_is_torch). Returns a new object (caller destroys), or NULL with a
   one-line reason in why[why_size]. */
VL_EXPORT vl_kept_t *vl_kept_load(const char *path, const char *policy, char *why, size_t why_size);

/* Frees the object and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_kept_destroy(vl_kept_t **self_p);

/* Writes the kept policy's action space into *action (volley/env.h's
   type: a checkpoint from before action spaces is DISCRETE). */
VL_EXPORT void vl_kept_action(const vl_kept_t *self, vl_env_action_t *action);

/* Writes the kept policy's sizes into dims (obs_dim, head outputs, hidden)
   and its weights' version into *version. Returns the env its run records
   ("" when unknown); self keeps it. */
VL_EXPORT const char *vl_kept_info(const vl_kept_t *self, uint32_t dims[3], uint64_t *version);

/* Returns the policy id of the kept weights; self keeps it. */
VL_EXPORT const char *vl_kept_policy_id(const vl_kept_t *self);

/* Writes the canonical text of the kept network's model spec into
   out[size]: its spec's (e.g. "torch:MOD:FN"), or volley's MLP of its
   hidden size for a checkpoint from before specs were kept. Returns out. */
VL_EXPORT const char *vl_kept_model(const vl_kept_t *self, char *out, size_t size);

/* Returns 1 when the kept model is torch:MOD:FN (a PyTorch module of the
   user's own: Python plays it from vl_kept_tensor_at's tensors, and the
   forward pass, step and pick functions fail), else 0. */
VL_EXPORT int vl_kept_is_torch(const vl_kept_t *self);

/* Writes observation field i of the kept policy (its spec's; one f32 field
   of obs_dim before specs were kept) into *field, with no range. Returns
   0, or -1 when there is no field i. */
VL_EXPORT int vl_kept_field(const vl_kept_t *self, uint32_t i, vl_env_field_t *field);

/* Returns the number of kept tensors. */
VL_EXPORT uint32_t vl_kept_tensor_count(const vl_kept_t *self);

/* Returns the name of kept tensor i and writes its rank into *ndim, its
   dimensions into dims[4] and its row-major floats into *data (self keeps
   name and data); NULL when there is no tensor i. */
VL_EXPORT const char *vl_kept_tensor_at(const vl_kept_t *self, uint32_t i, uint32_t dims[4],
                                        uint32_t *ndim, const float **data);

/* Writes the policy's head outputs [n][outputs] (the logits of every
   discrete dimension in turn, or a box's means) for n observations obs
   [n][obs_dim] (normalised first with the statistics the weights carry,
   when they carry them), through the C forward pass; a recurrent policy
   runs one step from the zero state (vl_kept_step carries it). Returns 0,
   or -1 on no memory or a torch: model. */
VL_EXPORT int vl_kept_logits(vl_kept_t *self, uint32_t n, const float *obs, float *logits);

/* Returns the floats of one env's recurrent state (2H for an lstm core: h
   then c), 0 for a memoryless policy or on no memory. */
VL_EXPORT uint32_t vl_kept_state_size(vl_kept_t *self);

/* One step of the policy for n envs, as vl_kept_logits, carrying each
   env's recurrent state: state [n][vl_kept_state_size] (the caller's,
   zeros at the start) is read and replaced by the state after the step;
   env i's is zeroed first where first [n] (NULL: none) is set, as at the
   start of its episode. A memoryless policy ignores state and first
   (either may be NULL). Returns 0, or -1 on no memory. */
VL_EXPORT int vl_kept_step(vl_kept_t *self, uint32_t n, const float *obs, float *state,
                           const uint8_t *first, float *logits);

/* Seeds state[4], the generator vl_kept_pick draws with (xoshiro256**, as
   actors and `volley eval` draw actions). */
VL_EXPORT void vl_kept_seed(uint64_t seed, uint64_t state[4]);

/* Writes actions [n][dims] (dims: the action space's values per action) for
   head outputs [n][outputs] (vl_kept_step's): greedy, each the most likely
   (each dimension's argmax, a box's mean clipped to its bounds); else drawn
   from the policy's distribution as actors draw them (a box's Gaussian of
   std exp(pi.logstd), unclipped), advancing state (vl_kept_seed's).
   Returns 0, or -1 on no memory. */
VL_EXPORT int vl_kept_pick(vl_kept_t *self, uint32_t n, const float *outputs, int greedy,
                           uint64_t state[4], float *actions);

/* Loads the policy kept at path (as vl_kept_load) and runs its forward
   pass on n observations obs [n][obs_dim]; writes logp [n][num_actions] (log-probabilities,
   each dimension's over its own choices for a multi-discrete policy; a box policy's means)
   and values [n] (either may be NULL). Returns 0, or -1 with why (also when obs_dim or num_actions
   differ from the kept policy's). */
VL_EXPORT int vl_kept_forward(const char *path, uint32_t n, uint32_t obs_dim, uint32_t num_actions,
                              const float *obs, float *logp, float *values, char *why,
                              size_t why_size);

/* Copies the floats of tensor name of the policy kept at path into out[n]
   (n must be its element count: rows x cols). Returns 0, or -1 with why. */
VL_EXPORT int vl_kept_tensor(const char *path, const char *name, float *out, size_t n, char *why,
                             size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
