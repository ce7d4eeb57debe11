/*  vl_norm: running statistics a policy normalises with, as Stable-Baselines3's
    VecNormalize keeps them:
    - observations: per element mean and variance over every observation
      seen (Chan's parallel update, in double; count starts at 1e-4), used as
      clip((x - mean) / sqrt(var + 1e-8), -10, 10) on F32 elements (integer
      encodings such as screens are left as they are);
    - rewards: the variance of the discounted return G = gamma G + r (reset
      at each episode's end), kept per environment stream; rewards are
      divided by sqrt(var + 1e-8) (not centred).
    A learner updates both from what it trains on and publishes them with
    its weights as three tensors (norm.obs.mean [D], norm.obs.var [D],
    norm.state [4]: obs count, return count, return mean, return var), so an
    actor acting on weights normalises with those weights' statistics. */
#ifndef VL_NORM_H
#define VL_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"
#include "../messages/vl_obs.h"

#define VL_NORM_CLIP     10.0f
#define VL_NORM_EPS      1e-8
#define VL_NORM_TENSORS  3
#define VL_NORM_STREAMS  4096 // return streams (actor, env) kept; more share slots

typedef struct vl_norm_s vl_norm_t;

/* Creates statistics for observations of spec (its F32 elements are
   normalised) and discount gamma. Returns NULL on no memory, a spec that
   fails vl_obs_spec_check under the default limits, or gamma outside
   [0, 1]. Caller destroys. */
vl_norm_t *vl_norm_new(const vl_obs_spec_t *spec, float gamma);

/* Frees it and nulls the pointer; safe on NULL and twice. */
void vl_norm_destroy(vl_norm_t **self_p);

/* Returns the floats per observation. */
uint32_t vl_norm_dim(const vl_norm_t *self);

/* Adds n observations obs [n][dim] to the observation statistics. A batch
   with a non-finite F32 value is dropped whole. */
void vl_norm_update_obs(vl_norm_t *self, uint32_t n, const float *obs);

/* Writes n normalised observations into out [n][dim] (out may be obs);
   elements of integer-encoded fields are copied as they are. */
void vl_norm_obs(const vl_norm_t *self, uint32_t n, const float *obs, float *out);

/* Adds T rewards of the stream `stream` (e.g. actor_id << 16 ^ env_id) to
   the return statistics: G = gamma G + r[t], its variance updated, G reset
   after dones[t] != 0. G is carried across calls per stream (streams whose
   ids hash to the same of VL_NORM_STREAMS slots share it). A call with a
   non-finite reward changes nothing. */
void vl_norm_update_returns(vl_norm_t *self, uint64_t stream, uint32_t T, const float *rewards,
                            const float *dones);

/* Returns the factor rewards are multiplied by: 1 / sqrt(var(G) + eps). */
float vl_norm_reward_scale(const vl_norm_t *self);

/* Fills t (VL_NORM_TENSORS of them) with the statistics as named tensors whose
   data points into self (valid for its life, kept up to date by every
   update and load): norm.obs.mean, norm.obs.var, norm.state, floats of the
   double state saturated at +-FLT_MAX. Integer-encoded elements are
   published as mean 0, var 1. */
void vl_norm_tensors(vl_norm_t *self, vl_tensor_t *t);

/* Returns 1 if w holds the three tensors with the shapes of this dim. */
int vl_norm_present(const vl_weights_t *w, uint32_t dim);

/* Loads the statistics from w's tensors (variances must be >= 0, counts >
   0, all finite). Returns 0, or -1 (self unchanged) when they are absent
   or bad. Integer-encoded elements keep mean 0, var 1 whatever w holds for
   them; the per-stream returns G are not part of the tensors and stay. */
int vl_norm_load(vl_norm_t *self, const vl_weights_t *w);

#endif
