/*  vl_actor_step: the caller's side of the actor engine. Every argument of
    act and observe is checked before anything is recorded (the caller is
    hostile input); `volley actor`'s loop over C environments calls the same
    engine steps, its envs checked by vl_envs_step instead. */
#include <string.h>

#include "../common/vl_log.h"
#include "vl_actor_check.h"
#include "vl_actor_engine.h"

/* Checks a caller's act: the mode, the order and obs. Copies obs in. */
static int s_take_obs(vl_actor_t *self, int external, const float *obs, size_t n_values, char *why,
                      size_t size)
{
    if (self->dead)
        return vl_actor_dead(self, why, size);
    if (external != self->c.external)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, size,
                             external
                                 ? "act_external on an actor that runs volley's policy"
                                 : "act on an actor with an external policy: use act_external");
    if (self->acted)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, size, "act twice without observe");
    if (!obs || n_values != (size_t)self->N * self->D)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, size,
                             "obs: %zu values, must be %u envs x %u = %zu", obs ? n_values : 0,
                             self->N, self->D, (size_t)self->N * self->D);
    if (vl_actor_check_obs(&self->ops, &self->obs_rules, "obs", obs, self->N, why, size) != 0)
        return VL_ACTOR_EINVAL;
    memcpy(self->obs, obs, (size_t)self->N * self->D * sizeof(float));
    return VL_ACTOR_OK;
}

int vl_actor_act(vl_actor_t *self, const float *obs, size_t n_values, float *actions, float *logps,
                 char *why, size_t why_size)
{
    if (!actions || !logps)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size, "actions and logps must be given");
    int rc = s_take_obs(self, 0, obs, n_values, why, why_size);
    if (rc == VL_ACTOR_OK)
        rc = vl_actor_act_policy(self, why, why_size);
    if (rc != VL_ACTOR_OK)
        return rc;
    memcpy(actions, self->actions, (size_t)self->N * self->W * sizeof(float));
    memcpy(logps, self->logps, self->N * sizeof(float));
    self->acted = 1;
    return VL_ACTOR_OK;
}

int vl_actor_act_external(vl_actor_t *self, const float *obs, size_t n_values, const float *actions,
                          const float *logps, char *why, size_t why_size)
{
    if (!actions || !logps)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size, "actions and logps must be given");
    if (vl_actor_check_actions(self->N, &self->ops.action, actions, logps, why, why_size) != 0)
        return VL_ACTOR_EINVAL;
    int rc = s_take_obs(self, 1, obs, n_values, why, why_size);
    if (rc == VL_ACTOR_OK)
        rc = vl_actor_begin_step(self, why, why_size);
    if (rc != VL_ACTOR_OK)
        return rc;
    memcpy(self->actions, actions, (size_t)self->N * self->W * sizeof(float));
    memcpy(self->logps, logps, self->N * sizeof(float));
    self->acted = 1;
    return VL_ACTOR_OK;
}

/* Checks final_obs where an env was truncated (and not terminated). */
static int s_check_final(vl_actor_t *self, const uint8_t *term, const uint8_t *trunc,
                         const float *final_obs, char *why, size_t size)
{
    for (uint32_t i = 0; i < self->N; i++) {
        if (!trunc[i] || term[i])
            continue;
        if (!final_obs)
            return vl_actor_fail(VL_ACTOR_EINVAL, why, size,
                                 "final_obs: env %u was truncated, its final observation is needed",
                                 i);
        char reason[200];
        if (vl_actor_check_obs(&self->ops, &self->obs_rules, "final_obs",
                               final_obs + (size_t)i * self->D, 1, reason, sizeof reason) != 0)
            return vl_actor_fail(VL_ACTOR_EINVAL, why, size, "env %u: %s", i, reason);
    }
    return VL_ACTOR_OK;
}

/* Copies final_obs rows of truncated envs in. */
static void s_take_final(vl_actor_t *self, const float *final_obs)
{
    for (uint32_t i = 0; i < self->N; i++)
        if (self->trunc[i] && !self->term[i])
            memcpy(self->final_obs + (size_t)i * self->D, final_obs + (size_t)i * self->D,
                   self->D * sizeof(float));
}

int vl_actor_observe(vl_actor_t *self, const float *rewards, const uint8_t *terminated,
                     const uint8_t *truncated, const float *next_obs, const float *final_obs,
                     size_t n_values, char *why, size_t why_size)
{
    uint32_t N = self->N;
    if (self->dead)
        return vl_actor_dead(self, why, why_size);
    if (!self->acted)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size, "observe without act");
    if (!rewards || !terminated || !truncated || !next_obs)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size,
                             "rewards, terminated, truncated and next_obs must be given");
    if (n_values != (size_t)N * self->D)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size,
                             "next_obs: %zu values, must be %u envs x %u = %zu", n_values, N,
                             self->D, (size_t)N * self->D);
    if (vl_actor_check_outcomes(N, rewards, terminated, truncated, why, why_size) != 0 ||
        vl_actor_check_obs(&self->ops, &self->obs_rules, "next_obs", next_obs, N, why, why_size) !=
            0 ||
        s_check_final(self, terminated, truncated, final_obs, why, why_size) != 0)
        return VL_ACTOR_EINVAL;
    memcpy(self->rewards, rewards, N * sizeof(float));
    memcpy(self->term, terminated, N);
    memcpy(self->trunc, truncated, N);
    memcpy(self->obs, next_obs, (size_t)N * self->D * sizeof(float));
    s_take_final(self, final_obs);
    self->acted = 0;
    return vl_actor_end_step(self, why, why_size);
}

int vl_actor_run(vl_actor_t *self)
{
    char why[256];
    int rc;
    while ((rc = vl_actor_act_policy(self, why, sizeof why)) == VL_ACTOR_OK) {
        if (vl_envs_step(self->envs, self->actions, self->obs, self->rewards, self->term,
                         self->trunc, self->final_obs) != 0)
            return -1;
        if ((rc = vl_actor_end_step(self, why, sizeof why)) != VL_ACTOR_OK)
            break;
    }
    if (rc == VL_ACTOR_EFAIL)
        vl_error("%s", why);
    return rc == VL_ACTOR_EINTR ? 0 : rc == VL_ACTOR_EREFUSED ? -2 : -1;
}

uint64_t vl_actor_weights_version(const vl_actor_t *self)
{
    return self->version;
}

uint32_t vl_actor_weights_count(const vl_actor_t *self)
{
    return self->raw ? self->raw->n_tensors : 0;
}

int vl_actor_weights_tensor(const vl_actor_t *self, uint32_t i, const char **name, uint32_t *ndim,
                            uint32_t shape[2], const float **data)
{
    if (!self->raw || i >= self->raw->n_tensors)
        return -1;
    const vl_tensor_t *t = &self->raw->tensors[i];
    *name = t->name;
    *ndim = t->ndim;
    shape[0] = t->rows;
    shape[1] = t->cols;
    *data = t->data;
    return 0;
}

int vl_actor_weights_shape(const vl_actor_t *self, uint32_t i,
                           uint32_t shape[VL_ACTOR_WEIGHTS_NDIM_MAX])
{
    if (!self->raw || i >= self->raw->n_tensors)
        return -1;
    _Static_assert(VL_ACTOR_WEIGHTS_NDIM_MAX == VL_TENSOR_NDIM_MAX, "one rank limit");
    return (int)vl_tensor_dims(&self->raw->tensors[i], shape);
}

const char *vl_actor_model(const vl_actor_t *self)
{
    return self->model;
}

uint64_t vl_actor_steps(const vl_actor_t *self)
{
    return self->steps;
}

uint64_t vl_actor_segments_sent(const vl_actor_t *self)
{
    return self->sent;
}

uint32_t vl_actor_obs_dim(const vl_actor_t *self)
{
    return self->D;
}
