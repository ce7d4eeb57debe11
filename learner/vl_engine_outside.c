/*  vl_engine_outside: an outside engine (a vl_engine_ops_t) behind the
    engine's backend table. What the C engine keeps inside its trainer is
    kept here for it: the observation and reward statistics, updated from
    each batch exactly as vl_trainer updates its own and applied to the
    batch's arrays, and the minibatch RNG, seeded as vl_trainer seeds its
    own. Its published tensors are its weights and then the statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_engine.h"
#include "vl_trainer.h"

typedef struct {
    vl_engine_ops_t ops;
    vl_norm_t *norm; // NULL when neither normalisation is on
    int norm_obs, norm_reward;
    uint32_t T, D;
    float *obs; // [batch_segments][T+1][D]: the batch's observations, for the statistics
    vl_rng_t rng;
    vl_transport_tensor_t theirs[VL_ENGINE_TENSORS_MAX];
} s_outside_t;

/* Adds the batch to the statistics (vl_trainer_norm_add, as a C engine
   does) and has its gather normalise with them. */
static void s_update_norm(s_outside_t *self, vl_engine_batch_t *batch)
{
    if (!self->norm) {
        vl_engine_batch_normalise(batch, NULL, 1.0f);
        return;
    }
    const vl_segment_t *const *segs = vl_engine_batch_segments(batch);
    uint32_t n = vl_engine_batch_size(batch), T = self->T, D = self->D;
    for (uint32_t i = 0; self->norm_obs && i < n; i++)
        vl_obs_from_rows(&segs[i]->obs_spec, (size_t)T + 1, segs[i]->obs,
                         self->obs + (size_t)i * (T + 1) * D);
    float scale = vl_trainer_norm_add(self->norm, self->norm_obs, self->norm_reward, segs, (int)n,
                                      T, D, self->obs);
    vl_engine_batch_normalise(batch, self->norm_obs ? self->norm : NULL, scale);
}

static int s_update(void *be, vl_engine_batch_t *batch, float lr, float *adv_sums,
                    vl_engine_stats_t *stats, char *why, size_t why_size)
{
    s_outside_t *self = be;
    vl_engine_stats_t ignored;
    s_update_norm(self, batch);
    vl_engine_batch_use_rng(batch, &self->rng);
    return self->ops.update(self->ops.self, batch, lr, adv_sums, stats ? stats : &ignored, why,
                            why_size) == 0
               ? 0
               : -1;
}

/* Returns 1 if name is one of the statistics' tensors (norm.*). */
static int s_is_norm(const char *name)
{
    return name && strncmp(name, "norm.", 5) == 0;
}

/* The outside engine's weights (norm.* left out), then the statistics. */
static uint32_t s_tensors(void *be, vl_tensor_t *out, uint32_t max)
{
    s_outside_t *self = be;
    uint32_t n = 0, k = 0;
    char why[256];
    if (self->ops.weights(self->ops.self, self->theirs, VL_ENGINE_TENSORS_MAX, &n, why,
                          sizeof why) != 0)
        return 0;
    for (uint32_t i = 0; i < n && i < VL_ENGINE_TENSORS_MAX && k < max; i++) {
        const vl_transport_tensor_t *t = &self->theirs[i];
        if (s_is_norm(t->name))
            continue;
        memset(&out[k], 0, sizeof out[k]);
        snprintf(out[k].name, sizeof out[k].name, "%s", t->name ? t->name : "");
        out[k].data = (float *)(uintptr_t)t->data;
        if (vl_tensor_set_shape(&out[k], t->ndim, t->shape) == 0)
            k++;
    }
    if (self->norm && k + VL_NORM_TENSORS <= max) {
        vl_norm_tensors(self->norm, out + k);
        k += VL_NORM_TENSORS;
    }
    return k;
}

static int s_optimizer(void *be, const void **data, size_t *size, char *why, size_t why_size)
{
    s_outside_t *self = be;
    return self->ops.optimizer(self->ops.self, data, size, why, why_size) == 0 ? 0 : -1;
}

/* Loads the statistics (which must be there when normalisation is on) and
   the outside engine's weights and optimiser bytes. */
static int s_load(void *be, const vl_weights_t *w, const void *opt, size_t opt_size, char *why,
                  size_t why_size)
{
    s_outside_t *self = be;
    if (self->norm && !vl_norm_present(w, self->D)) {
        snprintf(why, why_size, "its weights lack the normalisation statistics (norm.*)");
        return -1;
    }
    if (w->n_tensors > VL_ENGINE_TENSORS_MAX) {
        snprintf(why, why_size, "%u tensors, at most %d", w->n_tensors, VL_ENGINE_TENSORS_MAX);
        return -1;
    }
    for (uint32_t i = 0; i < w->n_tensors; i++) {
        vl_transport_tensor_t *t = &self->theirs[i];
        t->name = w->tensors[i].name;
        t->ndim = vl_tensor_dims(&w->tensors[i], t->shape);
        t->data = w->tensors[i].data;
    }
    if (self->ops.load(self->ops.self, self->theirs, w->n_tensors, opt, opt ? opt_size : 0, why,
                       why_size) != 0)
        return -1;
    if (self->norm && vl_norm_load(self->norm, w) != 0) {
        snprintf(why, why_size, "its normalisation statistics are bad (a negative variance?)");
        return -1;
    }
    return 0;
}

static vl_rng_t *s_rng(void *be)
{
    return &((s_outside_t *)be)->rng;
}

static void s_destroy(void **be_p)
{
    s_outside_t *self = *be_p;
    if (!self)
        return;
    if (self->ops.close)
        self->ops.close(self->ops.self);
    vl_norm_destroy(&self->norm);
    free(self->obs);
    free(self);
    *be_p = NULL;
}

static const vl_engine_backend_t s_ops = {.update = s_update,
                                          .tensors = s_tensors,
                                          .optimizer = s_optimizer,
                                          .load = s_load,
                                          .rng = s_rng,
                                          .destroy = s_destroy};

/* Sets up the statistics the config turns on. Returns 0, or -1. */
static int s_norm_setup(s_outside_t *self, const vl_learner_config_t *c)
{
    self->norm_obs = vl_learner_config_norm_obs(c);
    self->norm_reward = vl_learner_config_norm_reward(c);
    if (!self->norm_obs && !self->norm_reward)
        return 0;
    self->norm = vl_norm_new(&c->obs_spec, c->gamma);
    self->obs = malloc((size_t)c->batch_segments * (c->horizon + 1) * c->obs_dim * sizeof(float));
    return self->norm && self->obs ? 0 : -1;
}

void *vl_engine_outside_new(const vl_learner_config_t *c, const vl_engine_ops_t *ops,
                            const vl_engine_backend_t **be_ops, char *why, size_t why_size)
{
    *be_ops = &s_ops;
    if (!ops->update || !ops->weights || !ops->optimizer || !ops->load) {
        snprintf(why, why_size, "the engine's update, weights, optimizer and load must be set");
        if (ops->close)
            ops->close(ops->self);
        return NULL;
    }
    s_outside_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(why, why_size, "no memory");
        if (ops->close)
            ops->close(ops->self);
        return NULL;
    }
    self->ops = *ops;
    self->T = c->horizon;
    self->D = c->obs_dim;
    vl_rng_seed(&self->rng, c->seed ^ VL_TRAINER_RNG_SALT); // as vl_trainer seeds its own
    if (s_norm_setup(self, c) != 0) {
        snprintf(why, why_size, "no memory for the normalisation statistics");
        void *p = self;
        s_destroy(&p);
        return NULL;
    }
    return self;
}
