/*  vl_trainer: one learner update, the arithmetic only (no sockets, no
    threads, no clocks): given a batch of segments it recomputes values and
    log-probs with the current weights, computes V-trace targets and
    advantages, and takes clipped-surrogate PPO steps with Adam over shuffled
    minibatches. The same batches in the same order give the same weights. */
#ifndef VL_TRAINER_H
#define VL_TRAINER_H

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "../models/vl_policy.h"
#include "vl_learner_config.h"

typedef struct vl_trainer_s vl_trainer_t;

// The minibatch RNG is seeded with the run's seed xor this: apart from the weights' draws.
#define VL_TRAINER_RNG_SALT 0x5eed5eedULL

typedef struct {
    float policy_loss, value_loss, entropy, approx_kl, clip_frac; // means over the last epoch
    float mean_abs_adv;                                           // before normalisation
    float explained_var; // 1 - Var(v_target - V) / Var(v_target), V before the update (NAN:
                         // the targets do not vary)
} vl_update_stats_t;

/* Creates a trainer for observation size D and the config's action space,
   network, optimiser, batch sizes and normalisation (the policy's
   statistics are turned on when either is; each update adds its batch's
   observations and rewards to the ones that are on, then scales the
   rewards). Returns NULL on no memory. */
vl_trainer_t *vl_trainer_new(const vl_learner_config_t *config, uint32_t D);

/* Frees the trainer and nulls the pointer; safe on NULL and twice. */
void vl_trainer_destroy(vl_trainer_t **self_p);

/* Returns the trainer's minibatch RNG (for checkpoints). */
vl_rng_t *vl_trainer_rng(vl_trainer_t *self);

/* Sets the learning rate of the next updates (a schedule's). */
void vl_trainer_set_lr(vl_trainer_t *self, float lr);

/* Returns the policy being trained (owned by the trainer). */
vl_policy_t *vl_trainer_policy(vl_trainer_t *self);

/* One update on n (1 .. batch_segments) validated segments of the config's
   horizon. seg_w, if not NULL, gives each segment's importance weight (from
   prioritized sampling); adv_sums, if not NULL, receives each segment's
   sum of |V-trace advantage| computed with the weights before the update
   (its new priority). Fills stats if not NULL. Returns 0, or -1 on no
   memory. */
int vl_trainer_update(vl_trainer_t *self, const vl_segment_t *const *segs, int n,
                      const float *seg_w, float *adv_sums, vl_update_stats_t *stats);

/* Turns the single pass on (1, the default) or off (0): an update of one
   epoch whose one minibatch holds the whole batch takes its loss through
   the forward pass that recomputed its targets, rather than running that
   pass again with the same weights. Off, it runs it again (the same
   results up to the order of float sums). */
void vl_trainer_set_single_pass(vl_trainer_t *self, int on);
/* Writes boot [n][T]: the value each truncated step of n segments
   bootstraps from with the current weights, as an update computes it (a
   recurrent policy's after its episode's history alone), 0 at the other
   steps; adds nothing to the statistics. Returns 0, or -1 on bad n or no
   memory. */
int vl_trainer_boot(vl_trainer_t *self, const vl_segment_t *const *segs, int n, float *boot);

/* Adds n segments to norm as an update does before it trains: each
   segment's T acted-on rows of obs [n][T+1][D] (norm_obs on), its rewards
   to its stream's returns (actor_id << 32 | env_id; norm_reward on).
   Returns the factor rewards are then scaled by (1 with norm_reward off). */
float vl_trainer_norm_add(vl_norm_t *norm, int norm_obs, int norm_reward,
                          const vl_segment_t *const *segs, int n, uint32_t T, uint32_t D,
                          const float *obs);

#endif
