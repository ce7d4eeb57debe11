/*  vl_engine: one engine over two backends (vl_engine_c, vl_engine_outside):
    the learner's batch, its learning rate, and the calls that publish,
    checkpoint and resume. */
#include "vl_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_proc.h"

static char s_device[64] = "cpu"; // where this process's updates run

void vl_engine_set_device(const char *name)
{
    snprintf(s_device, sizeof s_device, "%s", name && *name ? name : "cpu");
}

const char *vl_engine_device(void)
{
    return s_device;
}

int vl_learner_stopping(void)
{
    return vl_interrupted != 0;
}

struct vl_engine_s {
    const vl_engine_backend_t *ops;
    void *be;
    vl_engine_batch_t *batch;                     // the learner's batches, pointed at its segments
    float lr;                                     // of the next update
    vl_tensor_t published[VL_ENGINE_TENSORS_MAX]; // vl_engine_tensor's last fill
    uint32_t n_published;
    int stale; // published is older than the last update or load
};

vl_engine_t *vl_engine_new_learner(const vl_learner_config_t *c, const vl_engine_ops_t *ops,
                                   char *why, size_t why_size)
{
    vl_engine_t *self = calloc(1, sizeof *self);
    if (!self) {
        if (ops && ops->close)
            ops->close(ops->self);
        snprintf(why, why_size, "no memory");
        return NULL;
    }
    self->be = ops ? vl_engine_outside_new(c, ops, &self->ops, why, why_size)
                   : vl_engine_c_new(c, &self->ops);
    self->batch = vl_engine_batch_for(c, c->batch_segments);
    self->lr = c->lr;
    self->stale = 1;
    if (!self->be || !self->batch) {
        if (self->be || !ops)
            snprintf(why, why_size, "no memory for the engine (or its model does not build)");
        vl_engine_destroy(&self);
    }
    return self;
}

vl_engine_t *vl_engine_open(const vl_learner_config_t *c, vl_engine_open_fn open, void *ctx,
                            char *why, size_t why_size)
{
    if (!open)
        return vl_engine_new_learner(c, NULL, why, why_size);
    vl_engine_config_t config;
    vl_engine_ops_t ops;
    memset(&ops, 0, sizeof ops);
    vl_engine_config_from(c, &config);
    if (open(ctx, &config, &ops, why, why_size) != 0)
        return NULL;
    return vl_engine_new_learner(c, &ops, why, why_size);
}

vl_engine_t *vl_engine_new(const vl_engine_config_t *config, const vl_engine_ops_t *ops, char *why,
                           size_t why_size)
{
    vl_learner_config_t c;
    if (!config || vl_engine_config_to(config, &c, why, why_size) != 0) {
        if (!config)
            snprintf(why, why_size, "no config given");
        if (ops && ops->close)
            ops->close(ops->self);
        return NULL;
    }
    return vl_engine_new_learner(&c, ops, why, why_size);
}

void vl_engine_destroy(vl_engine_t **self_p)
{
    vl_engine_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->be)
        self->ops->destroy(&self->be);
    vl_engine_batch_destroy(&self->batch);
    free(self);
    *self_p = NULL;
}

void vl_engine_set_lr(vl_engine_t *self, float lr)
{
    self->lr = lr;
}

int vl_engine_update(vl_engine_t *self, vl_engine_batch_t *batch, float *adv_sums,
                     vl_engine_stats_t *stats, char *why, size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    if (!batch || vl_engine_batch_size(batch) < 1) {
        snprintf(why, why_size, "an empty batch");
        return -1;
    }
    self->stale = 1;
    return self->ops->update(self->be, batch, self->lr, adv_sums, stats, why, why_size);
}

int vl_engine_update_segments(vl_engine_t *self, const vl_segment_t *const *segs, uint32_t n,
                              const float *w, float *adv_sums, vl_engine_stats_t *stats, char *why,
                              size_t why_size)
{
    vl_engine_batch_point(self->batch, segs, n, w);
    return vl_engine_update(self, self->batch, adv_sums, stats, why, why_size);
}

uint32_t vl_engine_tensors(vl_engine_t *self, vl_tensor_t *out, uint32_t max)
{
    return self->ops->tensors(self->be, out, max);
}

/* Fills the published tensors again when an update or load changed them. */
static void s_refresh(vl_engine_t *self)
{
    if (!self->stale)
        return;
    self->n_published = vl_engine_tensors(self, self->published, VL_ENGINE_TENSORS_MAX);
    self->stale = 0;
}

uint32_t vl_engine_tensor_count(vl_engine_t *self)
{
    s_refresh(self);
    return self->n_published;
}

int vl_engine_tensor(vl_engine_t *self, uint32_t i, vl_transport_tensor_t *t)
{
    s_refresh(self);
    if (i >= self->n_published)
        return -1;
    const vl_tensor_t *mine = &self->published[i];
    memset(t, 0, sizeof *t);
    t->name = mine->name;
    t->ndim = vl_tensor_dims(mine, t->shape);
    t->data = mine->data;
    return 0;
}

int vl_engine_optimizer(vl_engine_t *self, const void **data, size_t *size, char *why,
                        size_t why_size)
{
    return self->ops->optimizer(self->be, data, size, why, why_size);
}

int vl_engine_load_weights(vl_engine_t *self, const vl_weights_t *w, const void *opt,
                           size_t opt_size, char *why, size_t why_size)
{
    self->stale = 1;
    return self->ops->load(self->be, w, opt, opt_size, why, why_size);
}

int vl_engine_load(vl_engine_t *self, const vl_transport_tensor_t *tensors, uint32_t n, char *why,
                   size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    vl_tensor_t *copies = calloc(n ? n : 1, sizeof *copies);
    if (!copies) {
        snprintf(why, why_size, "no memory");
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        snprintf(copies[i].name, sizeof copies[i].name, "%s",
                 tensors[i].name ? tensors[i].name : "");
        copies[i].data = (float *)(uintptr_t)tensors[i].data;
        rc = vl_tensor_set_shape(&copies[i], tensors[i].ndim, tensors[i].shape);
        if (rc != 0)
            snprintf(why, why_size, "tensor %u (%s): a bad shape", i, copies[i].name);
    }
    vl_weights_t w = {.n_tensors = n, .tensors = copies};
    if (rc == 0)
        rc = vl_engine_load_weights(self, &w, NULL, 0, why, why_size);
    free(copies);
    return rc;
}

vl_rng_t *vl_engine_rng(vl_engine_t *self)
{
    return self->ops->rng(self->be);
}
