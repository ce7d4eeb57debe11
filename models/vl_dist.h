/*  vl_dist: the action distribution a policy's head outputs stand for, one
    per action space (messages/vl_action.h):
    - DISCRETE and MULTI_DISCRETE: one categorical per dimension over its
      n[d] logits (the outputs dimension after dimension); the joint
      log-prob and the entropy are the sums over dimensions;
    - BOX: a diagonal Gaussian, mean = the outputs [dims], log-std a
      learned state-independent parameter [dims]; the log-prob is of the
      unclipped sample (clipping to the bounds happens when the env is
      stepped), the entropy sum(logstd + 0.5 log(2 pi e)).
    Sampling, greedy actions, log-probs, entropies and the loss's gradient
    through them, one sample at a time, as torch.distributions computes them. */
#ifndef VL_DIST_H
#define VL_DIST_H

#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_action.h"

/* Draws one action [dims] from the distribution of outputs z
   [vl_action_outputs(a)] (and logstd [dims] for a box, else NULL) with rng;
   writes its joint log-prob into *logp (vl_dist_logp's value, bit for bit).
   Takes one vl_rng_uniform per categorical dimension (inverse CDF) or one
   vl_rng_normal per box dimension, in dimension order, so a seed reproduces
   the draws. */
void vl_dist_sample(const vl_action_spec_t *a, const float *z, const float *logstd, vl_rng_t *rng,
                    float *action, float *logp);

/* Writes the most likely action [dims]: the argmax of each dimension's
   logits (the lowest index on ties), or a box's mean clipped to its
   bounds. */
void vl_dist_greedy(const vl_action_spec_t *a, const float *z, float *action);

/* Returns the joint log-prob of action [dims] (each in the space; a box's
   may be outside its bounds) under z and logstd. A discrete value outside
   its dimension's choices is read as the nearest choice (NaN as 0), never
   past the logits; vl_action_find_bad is what refuses such actions. */
float vl_dist_logp(const vl_action_spec_t *a, const float *z, const float *logstd,
                   const float *action);

/* Returns the entropy of the distribution of z and logstd. */
float vl_dist_entropy(const vl_action_spec_t *a, const float *z, const float *logstd);

/* The gradient of c_logp * logp(action) + c_ent * entropy: writes d/dz into
   dz [outputs] and, for a box, adds d/dlogstd into dlogstd [dims] (NULL for
   discrete kinds). Also writes logp(action) and the entropy (either pointer
   may be NULL). */
void vl_dist_grad(const vl_action_spec_t *a, const float *z, const float *logstd,
                  const float *action, float c_logp, float c_ent, float *dz, float *dlogstd,
                  float *logp, float *entropy);

#endif
