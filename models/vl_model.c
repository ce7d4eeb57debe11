/*  vl_model: volley/model.h, the policy network for outside code: a
    vl_policy built from a spec text over transport fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <volley/model.h>

#include "../messages/vl_obs.h"
#include "vl_model_spec.h"
#include "vl_policy.h"

struct vl_model_s {
    vl_policy_t *policy;
};

/* Copies n_fields transport fields into obs and checks them as the wire's
   limits would. Returns 0, or -1 with why. */
static int s_obs(const vl_transport_field_t *fields, uint32_t n_fields, vl_obs_spec_t *obs,
                 char *why, size_t why_size)
{
    if (!fields || n_fields == 0 || n_fields > VL_OBS_FIELDS_MAX) {
        snprintf(why, why_size, "%u observation fields; expected 1..%d", n_fields,
                 VL_OBS_FIELDS_MAX);
        return -1;
    }
    memset(obs, 0, sizeof *obs);
    obs->n_fields = n_fields;
    for (uint32_t i = 0; i < n_fields; i++) {
        if (fields[i].ndim == 0 || fields[i].ndim > VL_OBS_NDIM_MAX) {
            snprintf(why, why_size, "field %u has %u dimensions; expected 1..%d", i, fields[i].ndim,
                     VL_OBS_NDIM_MAX);
            return -1;
        }
        obs->fields[i].encoding = fields[i].encoding;
        obs->fields[i].ndim = fields[i].ndim;
        memcpy(obs->fields[i].shape, fields[i].shape, fields[i].ndim * sizeof(uint32_t));
    }
    vl_limits_t lim = vl_limits_default();
    uint32_t dim, wire;
    if (vl_obs_spec_check(obs, &lim, &dim, &wire) != VL_OK) {
        snprintf(why, why_size,
                 "observation fields out of range (an encoding 0..3, dims >= 1, "
                 "at most %u values)",
                 lim.max_obs_dim);
        return -1;
    }
    return 0;
}

vl_model_t *vl_model_new(const char *spec, const vl_transport_field_t *fields, uint32_t n_fields,
                         const vl_env_action_t *action, uint64_t seed, char *why, size_t why_size)
{
    char scratch[8];
    if (!why)
        why = scratch, why_size = sizeof scratch;
    vl_obs_spec_t obs;
    if (s_obs(fields, n_fields, &obs, why, why_size) != 0)
        return NULL;
    vl_model_spec_t *ms = vl_model_spec_parse_for(spec, &obs, why, why_size);
    vl_model_t *self = ms ? calloc(1, sizeof *self) : NULL;
    if (self && !(self->policy = vl_policy_new_spec(ms, &obs, action, seed, 0, why, why_size))) {
        free(self);
        self = NULL;
    } else if (ms && !self) {
        snprintf(why, why_size, "no memory for the model");
    }
    vl_model_spec_destroy(&ms);
    return self;
}

void vl_model_destroy(vl_model_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_policy_destroy(&(*self_p)->policy);
    free(*self_p);
    *self_p = NULL;
}

int vl_model_text(const vl_model_t *self, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s", vl_policy_model(self->policy));
    return n >= 0 && (size_t)n < size ? n : -1;
}

uint32_t vl_model_obs_dim(const vl_model_t *self)
{
    return vl_policy_obs_dim(self->policy);
}

uint32_t vl_model_tensor_count(const vl_model_t *self)
{
    return vl_policy_tensor_count(self->policy);
}

float *vl_model_tensor(vl_model_t *self, uint32_t i, int grads, char *name, uint32_t *ndim,
                       uint32_t *shape)
{
    if (i >= vl_policy_tensor_count(self->policy))
        return NULL;
    vl_tensor_t t;
    if (grads)
        vl_policy_grad_tensor(self->policy, i, &t);
    else
        vl_policy_tensor(self->policy, i, &t);
    if (name)
        snprintf(name, VL_MODEL_NAME_MAX, "%s", t.name);
    if (ndim)
        *ndim = t.ndim;
    if (shape) {
        memset(shape, 0, VL_MODEL_NDIM_MAX * sizeof *shape);
        if (t.ndim > 2)
            memcpy(shape, t.shape, t.ndim * sizeof *shape);
        else
            shape[0] = t.rows, shape[1] = t.ndim == 2 ? t.cols : 0;
    }
    return t.data;
}

void vl_model_params_changed(vl_model_t *self)
{
    vl_policy_params_changed(self->policy);
}

int vl_model_forward(vl_model_t *self, uint32_t n, const float *obs, float *logits, float *values)
{
    return vl_policy_forward(self->policy, n, obs, logits, values);
}

int vl_model_forward_seq(vl_model_t *self, uint32_t B, uint32_t T, const float *obs,
                         const float *state0, const uint8_t *reset, float *logits, float *values,
                         float *state1)
{
    return vl_policy_forward_seq(self->policy, B, T, obs, state0, reset, logits, values, state1);
}

uint32_t vl_model_state_size(const vl_model_t *self)
{
    return vl_policy_state_size(self->policy);
}

int vl_model_backward(vl_model_t *self, uint32_t n, const float *dlogits, const float *dvalues)
{
    return vl_policy_backward(self->policy, n, dlogits, dvalues);
}

void vl_model_zero_grad(vl_model_t *self)
{
    vl_policy_zero_grad(self->policy);
}
