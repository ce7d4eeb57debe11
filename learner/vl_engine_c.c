/*  vl_engine_c: the C engine, a vl_trainer behind the engine's backend
    table: its policy's tensors (norm.* included) are what is published,
    its Adam state what is checkpointed. */
#include <stdio.h>
#include <stdlib.h>

#include "vl_engine.h"
#include "vl_trainer.h"

typedef struct {
    vl_trainer_t *trainer;
    uint8_t *opt; // the optimiser's bytes, for a checkpoint
    size_t opt_size;
} s_c_t;

/* One vl_trainer_update at lr. */
static int s_update(void *be, vl_engine_batch_t *batch, float lr, float *adv_sums,
                    vl_engine_stats_t *stats, char *why, size_t why_size)
{
    s_c_t *self = be;
    vl_update_stats_t us;
    vl_trainer_set_lr(self->trainer, lr);
    if (vl_trainer_update(self->trainer, vl_engine_batch_segments(batch),
                          (int)vl_engine_batch_size(batch), vl_engine_batch_weights(batch),
                          adv_sums, &us) != 0) {
        snprintf(why, why_size, "the update failed (out of memory or diverged)");
        return -1;
    }
    if (stats)
        *stats = (vl_engine_stats_t){us.policy_loss, us.value_loss,   us.entropy,      us.approx_kl,
                                     us.clip_frac,   us.mean_abs_adv, us.explained_var};
    return 0;
}

/* The policy's tensors, as the learner has always published them. */
static uint32_t s_tensors(void *be, vl_tensor_t *out, uint32_t max)
{
    s_c_t *self = be;
    vl_policy_t *p = vl_trainer_policy(self->trainer);
    uint32_t n = vl_policy_tensor_count(p);
    for (uint32_t i = 0; i < n && i < max; i++)
        vl_policy_tensor(p, i, &out[i]);
    return n < max ? n : max;
}

/* Both nets' Adam state, as vl_policy_save_optimizer writes it. */
static int s_optimizer(void *be, const void **data, size_t *size, char *why, size_t why_size)
{
    s_c_t *self = be;
    vl_policy_t *p = vl_trainer_policy(self->trainer);
    size_t need = vl_policy_optimizer_size(p);
    if (need > self->opt_size || !self->opt) {
        uint8_t *grown = realloc(self->opt, need ? need : 1);
        if (!grown) {
            snprintf(why, why_size, "no memory for the optimizer's state");
            return -1;
        }
        self->opt = grown;
        self->opt_size = need;
    }
    vl_policy_save_optimizer(p, self->opt);
    *data = self->opt;
    *size = need;
    return 0;
}

/* Loads what vl_resume_load loads: weights (with their statistics) and the
   Adam state of a network of this shape. */
static int s_load(void *be, const vl_weights_t *w, const void *opt, size_t opt_size, char *why,
                  size_t why_size)
{
    s_c_t *self = be;
    vl_policy_t *p = vl_trainer_policy(self->trainer);
    if (opt && opt_size != vl_policy_optimizer_size(p)) {
        snprintf(why, why_size, "its optimizer state does not match this network");
        return -1;
    }
    if (vl_policy_load(p, w) != 0) {
        snprintf(why, why_size, "its network does not match (--hidden, --env?)");
        return -1;
    }
    if (opt)
        vl_policy_load_optimizer(p, opt, opt_size);
    return 0;
}

static vl_rng_t *s_rng(void *be)
{
    return vl_trainer_rng(((s_c_t *)be)->trainer);
}

static void s_destroy(void **be_p)
{
    s_c_t *self = *be_p;
    if (!self)
        return;
    vl_trainer_destroy(&self->trainer);
    free(self->opt);
    free(self);
    *be_p = NULL;
}

static const vl_engine_backend_t s_ops = {.update = s_update,
                                          .tensors = s_tensors,
                                          .optimizer = s_optimizer,
                                          .load = s_load,
                                          .rng = s_rng,
                                          .destroy = s_destroy};

void *vl_engine_c_new(const vl_learner_config_t *c, const vl_engine_backend_t **ops)
{
    s_c_t *self = calloc(1, sizeof *self);
    if (self && !(self->trainer = vl_trainer_new(c, c->obs_dim))) {
        free(self);
        self = NULL;
    }
    *ops = &s_ops;
    return self;
}
