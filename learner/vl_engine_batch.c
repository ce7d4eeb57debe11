/*  vl_engine_batch: a batch of segments as an engine reads it: the
    segments' arrays (vl_segarray), normalised as the engine's statistics
    say, their stored states and importance weights, and the minibatch
    order drawn from the engine's RNG. vl_engine_batch_new makes one from
    the caller's arrays, encoded as actors encode them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_engine.h"
#include "vl_segarray.h"
#include "vl_trainer.h"

struct vl_engine_batch_s {
    uint32_t n, cap;
    uint32_t T, D;
    const vl_segment_t **segs; // [cap]
    const float *w;            // [n] importance weights, or NULL (1)
    const vl_norm_t *norm;     // OBS and FINAL_OBS are normalised by it (NULL: not)
    float reward_scale;        // REWARDS are multiplied by it
    vl_rng_t *rng;             // shuffle's: the engine's, else own_rng
    vl_rng_t own_rng;          // seeded as an engine's, for a batch no engine took
    // vl_engine_batch_new's storage
    vl_segment_t *owned; // [n]
    void *arrays;
    float *weights; // [n] or NULL
};

vl_engine_batch_t *vl_engine_batch_for(const vl_learner_config_t *c, uint32_t cap)
{
    vl_engine_batch_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cap = cap;
    self->T = c->horizon;
    self->D = c->obs_dim;
    self->reward_scale = 1.0f;
    vl_rng_seed(&self->own_rng, c->seed ^ VL_TRAINER_RNG_SALT);
    self->rng = &self->own_rng;
    self->segs = calloc(cap ? cap : 1, sizeof *self->segs);
    if (!self->segs)
        vl_engine_batch_destroy(&self);
    return self;
}

void vl_engine_batch_destroy(vl_engine_batch_t **self_p)
{
    vl_engine_batch_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->segs);
    free(self->owned);
    free(self->arrays);
    free(self->weights);
    free(self);
    *self_p = NULL;
}

void vl_engine_batch_point(vl_engine_batch_t *self, const vl_segment_t *const *segs, uint32_t n,
                           const float *w)
{
    self->n = n < self->cap ? n : self->cap;
    memcpy(self->segs, segs, self->n * sizeof *segs);
    self->w = w;
    vl_engine_batch_normalise(self, NULL, 1.0f);
}

const vl_segment_t *const *vl_engine_batch_segments(const vl_engine_batch_t *self)
{
    return self->segs;
}

const float *vl_engine_batch_weights(const vl_engine_batch_t *self)
{
    return self->w;
}

void vl_engine_batch_normalise(vl_engine_batch_t *self, const vl_norm_t *norm, float reward_scale)
{
    self->norm = norm;
    self->reward_scale = reward_scale;
}

void vl_engine_batch_use_rng(vl_engine_batch_t *self, vl_rng_t *rng)
{
    self->rng = rng ? rng : &self->own_rng;
}

uint32_t vl_engine_batch_size(const vl_engine_batch_t *batch)
{
    return batch ? batch->n : 0;
}

size_t vl_engine_batch_bytes(const vl_engine_batch_t *batch, int array)
{
    if (!batch || array < 0 || array >= VL_ENGINE_ARRAYS)
        return 0;
    if (array == VL_ENGINE_WEIGHTS)
        return (size_t)batch->n * sizeof(float);
    return vl_segarray_bytes(batch->segs, batch->n, array);
}

/* Normalises the truncated steps' rows of FINAL_OBS out [n][T][D] (the
   others stay 0). */
static void s_normalise_finals(const vl_engine_batch_t *self, float *out)
{
    for (uint32_t i = 0; i < self->n; i++)
        for (uint32_t t = 0; t < self->T; t++)
            if (self->segs[i]->truncated[t]) {
                float *row = out + ((size_t)i * self->T + t) * self->D;
                vl_norm_obs(self->norm, 1, row, row);
            }
}

/* Applies the engine's statistics to a gathered array in place. */
static void s_normalise(const vl_engine_batch_t *self, int array, void *out)
{
    float *f = out;
    if (array == VL_TRANSPORT_OBS && self->norm)
        vl_norm_obs(self->norm, self->n * (self->T + 1), f, f);
    else if (array == VL_TRANSPORT_FINAL_OBS && self->norm)
        s_normalise_finals(self, f);
    else if (array == VL_TRANSPORT_REWARDS && self->reward_scale != 1.0f)
        for (size_t k = 0; k < (size_t)self->n * self->T; k++)
            f[k] *= self->reward_scale;
}

int vl_engine_batch_gather(const vl_engine_batch_t *batch, int array, void *out, size_t out_size)
{
    if (!batch || !out || array < 0 || array >= VL_ENGINE_ARRAYS ||
        out_size < vl_engine_batch_bytes(batch, array))
        return -1;
    if (array == VL_ENGINE_WEIGHTS) {
        float *w = out;
        for (uint32_t i = 0; i < batch->n; i++)
            w[i] = batch->w ? batch->w[i] : 1.0f;
        return 0;
    }
    if (vl_segarray_gather(batch->segs, batch->n, array, out, out_size) != 0)
        return -1;
    s_normalise(batch, array, out);
    return 0;
}

void vl_engine_batch_shuffle(vl_engine_batch_t *batch, uint32_t N, uint32_t *perm)
{
    vl_rng_shuffle(batch->rng, N, perm);
}

/* Fills segment i's step arrays from the caller's. Returns 0, or -1 after
   writing why (a truncated step without final observations). */
static int s_fill_steps(vl_segment_t *s, uint32_t i, const vl_engine_arrays_t *a, char *why,
                        size_t why_size)
{
    size_t T = s->horizon, D = s->obs_dim, W = s->action.dims, row = s->obs_row_bytes;
    vl_obs_to_rows(&s->obs_spec, T + 1, a->obs + i * (T + 1) * D, s->obs);
    memcpy(s->actions, a->actions + i * T * W, T * W * sizeof(float));
    memcpy(s->rewards, a->rewards + i * T, T * sizeof(float));
    memcpy(s->dones, a->dones + i * T, T * sizeof(float));
    memcpy(s->logp, a->logp + i * T, T * sizeof(float));
    s->n_truncated = 0;
    for (size_t t = 0; t < T; t++) {
        s->truncated[t] = a->truncated ? a->truncated[i * T + t] != 0 : 0;
        if (!s->truncated[t])
            continue;
        if (!a->final_obs) {
            snprintf(why, why_size, "segment %u: step %zu is truncated but final_obs is NULL", i,
                     t);
            return -1;
        }
        vl_obs_to_rows(&s->obs_spec, 1, a->final_obs + (i * T + t) * D,
                       s->final_obs + s->n_truncated++ * row);
    }
    if (s->state_size && a->state)
        memcpy(s->state, a->state + (size_t)i * s->state_size, s->state_size * sizeof(float));
    return 0;
}

/* Makes n segments of c's spec in self->owned and fills them from a.
   Returns 0, or -1 after writing why. */
static int s_segments(vl_engine_batch_t *self, const vl_learner_config_t *c, uint32_t n,
                      const vl_engine_arrays_t *a, char *why, size_t why_size)
{
    uint32_t S = vl_learner_config_state_size(c);
    size_t size = vl_segment_arrays_size(c->horizon, &c->obs_spec, c->action.dims, S);
    if (size == SIZE_MAX) {
        snprintf(why, why_size, "the spec's segments are too large (or its state, %u floats)", S);
        return -1;
    }
    size = (size + 63) & ~(size_t)63;
    self->owned = calloc(n, sizeof *self->owned);
    self->arrays = calloc(n, size);
    if (!self->owned || !self->arrays) {
        snprintf(why, why_size, "no memory");
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        vl_segment_t *s = &self->owned[i];
        *s = (vl_segment_t){.horizon = c->horizon,
                            .action = c->action,
                            .state_size = S,
                            .actor_id = a->actor_id ? a->actor_id[i] : 0,
                            .env_id = i};
        snprintf(s->policy_id, sizeof s->policy_id, "%s", c->policy);
        vl_segment_set_spec(s, &c->obs_spec);
        vl_segment_bind(s, (uint8_t *)self->arrays + i * size);
        if (s_fill_steps(s, i, a, why, why_size) != 0)
            return -1;
        self->segs[i] = s;
    }
    self->n = n;
    return 0;
}

vl_engine_batch_t *vl_engine_batch_new(const vl_engine_config_t *config, uint32_t n,
                                       const vl_engine_arrays_t *arrays, char *why, size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    vl_learner_config_t c;
    if (!config || !arrays || vl_engine_config_to(config, &c, why, why_size) != 0)
        return NULL;
    if (n < 1 || n > c.batch_segments || !arrays->obs || !arrays->actions || !arrays->rewards ||
        !arrays->dones || !arrays->logp) {
        snprintf(why, why_size,
                 "n %u (1 .. %u segments), and obs, actions, rewards, dones and logp are required",
                 n, c.batch_segments);
        return NULL;
    }
    vl_engine_batch_t *self = vl_engine_batch_for(&c, n);
    if (!self || s_segments(self, &c, n, arrays, why, why_size) != 0) {
        if (!self)
            snprintf(why, why_size, "no memory");
        vl_engine_batch_destroy(&self);
        return NULL;
    }
    if (arrays->weights && !(self->weights = malloc(n * sizeof(float)))) {
        snprintf(why, why_size, "no memory");
        vl_engine_batch_destroy(&self);
        return NULL;
    }
    if (arrays->weights)
        memcpy(self->weights, arrays->weights, n * sizeof(float));
    self->w = self->weights;
    return self;
}
