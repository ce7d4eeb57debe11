/*  vl_engine: the learner's update engine behind one table of operations
    (include/volley/engine.h), either volley's own (vl_trainer) or an
    outside one (a vl_engine_ops_t). Both publish, checkpoint and resume
    through the same calls; an outside engine's observation and reward
    statistics and minibatch RNG are kept here, as vl_trainer keeps its
    own. */
#ifndef VL_ENGINE_INTERNAL_H
#define VL_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "../models/vl_norm.h"
#include "vl_learner_config.h"
#include "volley/engine.h"

#define VL_ENGINE_TENSORS_MAX 64 // tensors an engine publishes, norm.* included

/* A backend: what the C engine and an outside one each implement. */
typedef struct {
    /* One update at lr on batch; fills stats and adv_sums (may be NULL). */
    int (*update)(void *be, vl_engine_batch_t *batch, float lr, float *adv_sums,
                  vl_engine_stats_t *stats, char *why, size_t why_size);
    /* Fills out[max] with the published tensors; returns their count. */
    uint32_t (*tensors)(void *be, vl_tensor_t *out, uint32_t max);
    /* The optimiser's state as bytes, valid until the next call. */
    int (*optimizer)(void *be, const void **data, size_t *size, char *why, size_t why_size);
    /* Loads weights w and (opt not NULL) optimiser bytes; nothing changes
       on -1. */
    int (*load)(void *be, const vl_weights_t *w, const void *opt, size_t opt_size, char *why,
                size_t why_size);
    /* The minibatch RNG (checkpointed). */
    vl_rng_t *(*rng)(void *be);
    void (*destroy)(void **be);
} vl_engine_backend_t;

/* The C backend (vl_engine_c.c): a vl_trainer for c. Returns it, or NULL. */
void *vl_engine_c_new(const vl_learner_config_t *c, const vl_engine_backend_t **ops);

/* The outside backend (vl_engine_outside.c) over ops (taken: closed on
   failure too). Returns it, or NULL with why. */
void *vl_engine_outside_new(const vl_learner_config_t *c, const vl_engine_ops_t *ops,
                            const vl_engine_backend_t **be_ops, char *why, size_t why_size);

/* Returns the device vl_engine_set_device named ("cpu" until then). */
const char *vl_engine_device(void);

/* Makes the engine for the learner's config c: ops NULL the C engine, else
   an outside one (ops.self taken: closed by destroy, or at once on
   failure). Returns it (caller destroys), or NULL with why. */
vl_engine_t *vl_engine_new_learner(const vl_learner_config_t *c, const vl_engine_ops_t *ops,
                                   char *why, size_t why_size);

/* Makes the engine for c through open (NULL: the C engine), open given the
   engine config c settles to. Returns it, or NULL with why. */
vl_engine_t *vl_engine_open(const vl_learner_config_t *c, vl_engine_open_fn open, void *ctx,
                            char *why, size_t why_size);

/* Sets the learning rate of the next updates (a schedule's). */
void vl_engine_set_lr(vl_engine_t *self, float lr);

/* One update on n segments with importance weights w (NULL: 1), as
   vl_engine_update. Returns 0, or -1 with why. */
int vl_engine_update_segments(vl_engine_t *self, const vl_segment_t *const *segs, uint32_t n,
                              const float *w, float *adv_sums, vl_engine_stats_t *stats, char *why,
                              size_t why_size);

/* Fills out[max] with the published tensors (norm.* included, data valid
   until the next update or load). Returns their count. */
uint32_t vl_engine_tensors(vl_engine_t *self, vl_tensor_t *out, uint32_t max);

/* Points *data at the optimiser's state (valid until the next call) and
   sets *size. Returns 0, or -1 with why. */
int vl_engine_optimizer(vl_engine_t *self, const void **data, size_t *size, char *why,
                        size_t why_size);

/* Loads a checkpoint's weights w and optimiser bytes (opt NULL: weights
   only). Returns 0, or -1 with why (nothing changed). */
int vl_engine_load_weights(vl_engine_t *self, const vl_weights_t *w, const void *opt,
                           size_t opt_size, char *why, size_t why_size);

/* Returns the engine's minibatch RNG (checkpointed and resumed). */
vl_rng_t *vl_engine_rng(vl_engine_t *self);

/* ---- the engine config and the learner's (vl_engine_config.c) ---- */

/* Fills out from the learner's settled config c. */
void vl_engine_config_from(const vl_learner_config_t *c, vl_engine_config_t *out);

/* Sets c's spec (fields, actions, horizon, hidden, model) and policy from
   in. Returns 0, or -1 after writing why. */
int vl_engine_config_spec_to(vl_learner_config_t *c, const vl_transport_spec_t *in, char *why,
                             size_t why_size);

/* Fills spec from c (obs_dim, row_bytes, canonical model). */
void vl_engine_config_spec_from(const vl_learner_config_t *c, vl_transport_spec_t *spec);

/* Makes the learner config config describes (the defaults, then its spec
   and hyperparameters). Returns 0, or -1 after writing why. */
int vl_engine_config_to(const vl_engine_config_t *config, vl_learner_config_t *c, char *why,
                        size_t why_size);

/* ---- the batch's insides (vl_engine_batch.c) ---- */

/* Makes a batch of at most cap segments for c, pointed at none yet.
   Returns it (caller destroys), or NULL on no memory. */
vl_engine_batch_t *vl_engine_batch_for(const vl_learner_config_t *c, uint32_t cap);

/* Points the batch at segs[0 .. n) (n <= its cap) with weights w (NULL:
   1); forgets any normalisation. */
void vl_engine_batch_point(vl_engine_batch_t *self, const vl_segment_t *const *segs, uint32_t n,
                           const float *w);

/* The batch's segments and weights (NULL: 1). */
const vl_segment_t *const *vl_engine_batch_segments(const vl_engine_batch_t *self);
const float *vl_engine_batch_weights(const vl_engine_batch_t *self);

/* Has gather normalise OBS and FINAL_OBS by norm (NULL: not) and scale
   REWARDS by reward_scale. */
void vl_engine_batch_normalise(vl_engine_batch_t *self, const vl_norm_t *norm, float reward_scale);

/* Has shuffle draw from rng (the engine's). */
void vl_engine_batch_use_rng(vl_engine_batch_t *self, vl_rng_t *rng);

#endif
