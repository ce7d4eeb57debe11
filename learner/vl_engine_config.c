/*  vl_engine_config: an engine's config and the learner's, each from the
    other: the spec as volley/learner.h's transport declares it, the
    hyperparameters as the learner's flags settle them. */
#include <stdio.h>
#include <string.h>

#include "../messages/vl_wire.h"
#include "vl_engine.h"

#define S_HIDDEN_MAX 4096 // --hidden's most

_Static_assert(sizeof(vl_transport_field_t) == sizeof(vl_obs_field_t), "field layouts");

/* Checks in's sizes and action space. Returns 0, or -1 after writing why. */
static int s_spec_check(const vl_transport_spec_t *in, char *why, size_t why_size)
{
    vl_limits_t lim = vl_limits_default();
    char reason[512];
    if (in->n_fields < 1 || in->n_fields > VL_TRANSPORT_FIELDS_MAX) {
        snprintf(why, why_size, "spec: %u observation fields, expected 1 .. %d", in->n_fields,
                 VL_TRANSPORT_FIELDS_MAX);
        return -1;
    }
    if (vl_action_check(&in->action, &lim, reason, sizeof reason) != 0) {
        snprintf(why, why_size, "spec: %s", reason);
        return -1;
    }
    if (in->horizon < 1 || in->horizon > lim.max_horizon || in->hidden < 1 ||
        in->hidden > S_HIDDEN_MAX) {
        snprintf(why, why_size,
                 "spec: horizon %u (1 .. %u), hidden %u (1 .. %u): one is out of range",
                 in->horizon, lim.max_horizon, in->hidden, S_HIDDEN_MAX);
        return -1;
    }
    if (strnlen(in->model, sizeof in->model) == sizeof in->model) {
        snprintf(why, why_size, "spec: model: not a NUL-terminated text of at most %zu bytes",
                 sizeof in->model - 1);
        return -1;
    }
    return 0;
}

int vl_engine_config_spec_to(vl_learner_config_t *c, const vl_transport_spec_t *in, char *why,
                             size_t why_size)
{
    vl_spec_t spec = {.action = in->action, .horizon = in->horizon, .hidden = in->hidden};
    char reason[512];
    if (s_spec_check(in, why, why_size) != 0)
        return -1;
    snprintf(spec.policy_id, sizeof spec.policy_id, "%s", c->policy ? c->policy : "");
    spec.obs_spec.n_fields = in->n_fields;
    memcpy(spec.obs_spec.fields, in->fields, in->n_fields * sizeof in->fields[0]);
    if (vl_learner_config_set_spec(c, &spec) != 0) {
        snprintf(why, why_size,
                 "spec: the observation fields are invalid (encoding, rank, a "
                 "dim of 0, or too many values)");
        return -1;
    }
    snprintf(c->model, sizeof c->model, "%s", in->model);
    if (vl_learner_config_model(c, NULL, NULL, reason, sizeof reason) != 0) {
        snprintf(why, why_size, "spec: model: %s", reason);
        return -1;
    }
    return 0;
}

void vl_engine_config_spec_from(const vl_learner_config_t *c, vl_transport_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->n_fields = c->obs_spec.n_fields;
    memcpy(spec->fields, c->obs_spec.fields, spec->n_fields * sizeof spec->fields[0]);
    spec->action = c->action;
    spec->horizon = c->horizon;
    spec->hidden = c->hidden;
    spec->obs_dim = c->obs_dim;
    spec->row_bytes = vl_obs_row_bytes(&c->obs_spec);
    char why[256];
    if (vl_learner_config_model(c, NULL, spec->model, why, sizeof why) != 0)
        spec->model[0] = '\0'; // checked when the spec was set
}

void vl_engine_config_from(const vl_learner_config_t *c, vl_engine_config_t *out)
{
    memset(out, 0, sizeof *out);
    vl_engine_config_spec_from(c, &out->spec);
    snprintf(out->policy, sizeof out->policy, "%s", c->policy ? c->policy : "default");
    out->state_size = vl_learner_config_state_size(c);
    out->batch_segments = c->batch_segments;
    out->epochs = c->epochs;
    out->minibatch = c->minibatch;
    out->burn_in = c->burn_in;
    out->lr = c->lr;
    out->gamma = c->gamma;
    out->lambda = c->lambda;
    out->clip = c->clip;
    out->ent_coef = c->ent_coef;
    out->vf_coef = c->vf_coef;
    out->max_grad_norm = c->max_grad_norm;
    out->rho_bar = c->rho_bar;
    out->c_bar = c->c_bar;
    out->norm_obs = vl_learner_config_norm_obs(c);
    out->norm_reward = vl_learner_config_norm_reward(c);
    out->seed = c->seed;
    out->threads = c->threads;
}

int vl_engine_config_to(const vl_engine_config_t *config, vl_learner_config_t *c, char *why,
                        size_t why_size)
{
    *c = vl_learner_config_default();
    c->policy = config->policy[0] ? config->policy : "default";
    if (vl_engine_config_spec_to(c, &config->spec, why, why_size) != 0)
        return -1;
    if (config->batch_segments < 1 || config->epochs < 1 || config->minibatch < 1 ||
        (config->burn_in && config->burn_in >= config->spec.horizon)) {
        snprintf(why, why_size,
                 "batch_segments, epochs and minibatch must be at least 1, "
                 "burn_in below the horizon");
        return -1;
    }
    c->batch_segments = config->batch_segments;
    c->capacity = 2 * config->batch_segments;
    c->epochs = config->epochs;
    c->minibatch = config->minibatch;
    c->burn_in = config->burn_in;
    c->lr = config->lr;
    c->gamma = config->gamma;
    c->lambda = config->lambda;
    c->clip = config->clip;
    c->ent_coef = config->ent_coef;
    c->vf_coef = config->vf_coef;
    c->max_grad_norm = config->max_grad_norm;
    c->rho_bar = config->rho_bar;
    c->c_bar = config->c_bar;
    c->norm_obs = config->norm_obs != 0;
    c->norm_reward = config->norm_reward != 0;
    c->seed = config->seed;
    c->threads = config->threads;
    return 0;
}

int vl_engine_config_default(vl_engine_config_t *config, vl_transport_spec_t *spec, char *why,
                             size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    vl_learner_config_t c = vl_learner_config_default();
    if (vl_engine_config_spec_to(&c, spec, why, why_size) != 0)
        return -1;
    vl_learner_config_settle(&c, 0); // no flags given
    vl_engine_config_from(&c, config);
    *spec = config->spec;
    return 0;
}
