/*  vl_spec: a policy's spec to and from wire bytes, and comparisons. */
#include "vl_spec.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

void vl_obs_fields_to_msg(const vl_obs_spec_t *obs, Volley__ObsField *fields,
                          Volley__ObsField **ptrs)
{
    for (uint32_t i = 0; i < obs->n_fields && i < VL_OBS_FIELDS_MAX; i++) {
        volley__obs_field__init(&fields[i]);
        fields[i].encoding = (Volley__Encoding)obs->fields[i].encoding;
        fields[i].n_shape = obs->fields[i].ndim;
        fields[i].shape = (uint32_t *)obs->fields[i].shape;
        ptrs[i] = &fields[i];
    }
}

vl_reason_t vl_obs_fields_from_msg(size_t n, Volley__ObsField *const *fields, vl_obs_spec_t *obs)
{
    if (n == 0)
        return VL_ESHAPE;
    if (n > VL_OBS_FIELDS_MAX)
        return VL_ETOOBIG;
    memset(obs, 0, sizeof *obs);
    obs->n_fields = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        const Volley__ObsField *f = fields[i];
        if (f->n_shape == 0)
            return VL_ESHAPE;
        if (f->n_shape > VL_OBS_NDIM_MAX)
            return VL_ETOOBIG;
        obs->fields[i].encoding = (uint32_t)f->encoding;
        obs->fields[i].ndim = (uint32_t)f->n_shape;
        memcpy(obs->fields[i].shape, f->shape, f->n_shape * sizeof f->shape[0]);
    }
    return VL_OK;
}

void vl_action_to_msg(const vl_action_spec_t *a, Volley__ActionSpace *msg)
{
    volley__action_space__init(msg);
    msg->kind = (Volley__ActionKind)a->kind;
    if (a->kind == VL_ENV_BOX) {
        msg->n_low = msg->n_high = a->dims;
        msg->low = (float *)a->low;
        msg->high = (float *)a->high;
    } else {
        msg->n_n = a->dims;
        msg->n = (uint32_t *)a->n;
    }
}

vl_reason_t vl_action_from_msg(const Volley__ActionSpace *msg, const vl_limits_t *lim,
                               vl_action_spec_t *a)
{
    vl_action_spec_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.kind = (uint32_t)msg->kind;
    int box = tmp.kind == VL_ENV_BOX;
    size_t dims = box ? msg->n_low : msg->n_n;
    if (dims == 0 || dims > VL_ACTION_DIMS_MAX || (box && (msg->n_high != dims || msg->n_n)) ||
        (!box && (msg->n_low || msg->n_high)))
        return VL_EACTION;
    tmp.dims = (uint32_t)dims;
    for (size_t d = 0; d < dims; d++) {
        if (box) {
            tmp.low[d] = msg->low[d];
            tmp.high[d] = msg->high[d];
        } else {
            tmp.n[d] = msg->n[d];
        }
    }
    if (vl_action_check(&tmp, lim, NULL, 0) != 0)
        return VL_EACTION;
    *a = tmp;
    return VL_OK;
}

void vl_spec_to_msg(const vl_spec_t *spec, Volley__Spec *msg, Volley__ObsField *fields,
                    Volley__ObsField **ptrs, Volley__ActionSpace *action)
{
    volley__spec__init(msg);
    msg->schema = VL_SCHEMA_VERSION;
    msg->policy_id = (char *)spec->policy_id;
    vl_obs_fields_to_msg(&spec->obs_spec, fields, ptrs);
    msg->n_obs_fields = spec->obs_spec.n_fields;
    msg->obs_fields = ptrs;
    msg->num_actions = spec->action.kind == VL_ENV_DISCRETE ? spec->action.n[0] : 0;
    vl_action_to_msg(&spec->action, action);
    msg->action = action;
    msg->state_size = spec->state_size;
    msg->horizon = spec->horizon;
    msg->hidden = spec->hidden;
    msg->env = (char *)spec->env;
    msg->model = (char *)spec->model;
    msg->model_open = spec->model_open != 0;
}

int vl_spec_model_ok(const char *text)
{
    size_t n = strnlen(text, VL_SPEC_MODEL_MAX);
    if (n == VL_SPEC_MODEL_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            return 0;
    return 1;
}

void vl_spec_model(const vl_spec_t *spec, char *out, size_t out_size)
{
    if (spec->model[0])
        snprintf(out, out_size, "%s", spec->model);
    else
        snprintf(out, out_size, "linear(%u) tanh linear(%u) tanh", spec->hidden, spec->hidden);
}

/* Returns VL_OK if the sizes are ones a receiver could serve under lim. */
static vl_reason_t s_check_sizes(const vl_spec_t *spec, const vl_limits_t *lim)
{
    uint32_t dim, wire;
    vl_reason_t r = vl_obs_spec_check(&spec->obs_spec, lim, &dim, &wire);
    if (r != VL_OK)
        return r;
    if (vl_action_check(&spec->action, lim, NULL, 0) != 0)
        return VL_EACTION;
    if (spec->horizon == 0 || spec->hidden == 0)
        return VL_ESHAPE;
    if (spec->state_size > VL_SEGMENT_STATE_MAX)
        return VL_ETOOBIG;
    if (spec->horizon > lim->max_horizon || spec->hidden > VL_SPEC_HIDDEN_MAX)
        return VL_ETOOBIG;
    return VL_OK;
}

int vl_spec_encode(const vl_spec_t *spec, uint8_t **out, size_t *out_size)
{
    vl_limits_t lim = vl_limits_default();
    if (!spec || !out || !out_size || !vl_policy_id_ok(spec->policy_id) ||
        s_check_sizes(spec, &lim) != VL_OK ||
        (spec->env[0] && !vl_wire_name_ok(spec->env, VL_POLICY_ID_MAX)) ||
        !vl_spec_model_ok(spec->model))
        return -1;
    Volley__Spec msg;
    Volley__ObsField fields[VL_OBS_FIELDS_MAX];
    Volley__ObsField *ptrs[VL_OBS_FIELDS_MAX];
    Volley__ActionSpace action;
    vl_spec_to_msg(spec, &msg, fields, ptrs, &action);
    return vl_wire_pack(&msg.base, out, out_size);
}

vl_reason_t vl_spec_from_msg(const Volley__Spec *msg, const vl_limits_t *lim, vl_spec_t *spec)
{
    vl_reason_t r = vl_wire_check_head(msg->schema, msg->policy_id);
    if (r != VL_OK)
        return r;
    vl_spec_t tmp;
    memset(&tmp, 0, sizeof tmp);
    r = vl_obs_fields_from_msg(msg->n_obs_fields, msg->obs_fields, &tmp.obs_spec);
    if (r != VL_OK)
        return r;
    if (msg->action) {
        r = vl_action_from_msg(msg->action, lim, &tmp.action);
        if (r != VL_OK)
            return r;
    } else {
        tmp.action = vl_action_discrete(msg->num_actions);
    }
    tmp.state_size = msg->state_size;
    tmp.horizon = msg->horizon;
    tmp.hidden = msg->hidden;
    tmp.model_open = msg->model_open;
    r = s_check_sizes(&tmp, lim);
    if (r != VL_OK)
        return r;
    if (msg->env && msg->env[0] && !vl_wire_name_ok(msg->env, VL_POLICY_ID_MAX))
        return VL_EPOLICY;
    if (msg->model && !vl_spec_model_ok(msg->model))
        return VL_ESHAPE;
    if (msg->model)
        memcpy(tmp.model, msg->model, strlen(msg->model) + 1);
    memcpy(tmp.policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
    if (msg->env && msg->env[0])
        memcpy(tmp.env, msg->env, strlen(msg->env) + 1);
    *spec = tmp;
    return VL_OK;
}

vl_reason_t vl_spec_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                           vl_spec_t *spec)
{
    assert(lim && spec);
    vl_reason_t unpacked;
    Volley__Spec *msg = vl_wire_unpack(&volley__spec__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_reason_t r = vl_spec_from_msg(msg, lim, spec);
    volley__spec__free_unpacked(msg, NULL);
    return r;
}

void vl_spec_obs_str(const vl_obs_spec_t *obs, char *out, size_t out_size)
{
    size_t n = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < obs->n_fields && i < VL_OBS_FIELDS_MAX && n < out_size; i++) {
        const vl_obs_field_t *f = &obs->fields[i];
        n += (size_t)snprintf(out + n, out_size - n, "%s%s[", i ? " " : "",
                              vl_obs_encoding_str(f->encoding));
        for (uint32_t d = 0; d < f->ndim && d < VL_OBS_NDIM_MAX && n < out_size; d++)
            n += (size_t)snprintf(out + n, out_size - n, "%s%u", d ? "x" : "", f->shape[d]);
        if (n < out_size)
            n += (size_t)snprintf(out + n, out_size - n, "]");
    }
}

void vl_spec_str(const vl_spec_t *spec, char *out, size_t out_size)
{
    char obs[128];
    vl_spec_obs_str(&spec->obs_spec, obs, sizeof obs);
    char model[VL_SPEC_MODEL_MAX], action[VL_ACTION_TEXT_MAX];
    vl_spec_model(spec, model, sizeof model);
    vl_action_str(&spec->action, action, sizeof action);
    snprintf(out, out_size, "obs %s actions %s horizon %u model %s env %s", obs, action,
             spec->horizon, model, spec->env[0] ? spec->env : "?");
}

/* Writes "FIELD: policy 'P' has A, WHO B" for one differing number. */
static int s_differs(const char *field, const vl_spec_t *policy, uint32_t a, const char *who,
                     uint32_t b, char *why, size_t why_size)
{
    snprintf(why, why_size, "%s: policy '%s' has %u, %s %u", field, policy->policy_id, a, who, b);
    return 1;
}

int vl_spec_diff(const vl_spec_t *policy, const vl_spec_t *sender, const char *who, char *why,
                 size_t why_size)
{
    if (!vl_obs_spec_equal(&policy->obs_spec, &sender->obs_spec)) {
        char a[64], b[64];
        vl_spec_obs_str(&policy->obs_spec, a, sizeof a);
        vl_spec_obs_str(&sender->obs_spec, b, sizeof b);
        snprintf(why, why_size, "observation: policy '%s' has %s, %s %s", policy->policy_id, a, who,
                 b);
        return 1;
    }
    if (!vl_action_equal(&policy->action, &sender->action)) {
        char a[VL_ACTION_TEXT_MAX], b[VL_ACTION_TEXT_MAX];
        snprintf(why, why_size, "actions: policy '%s' has %s, %s %s", policy->policy_id,
                 vl_action_str(&policy->action, a, sizeof a), who,
                 vl_action_str(&sender->action, b, sizeof b));
        return 1;
    }
    if (policy->horizon != sender->horizon)
        return s_differs("horizon", policy, policy->horizon, who, sender->horizon, why, why_size);
    if (policy->model_open || sender->model_open)
        return 0; // one side takes the other's network
    if (policy->state_size != sender->state_size)
        return s_differs("state size", policy, policy->state_size, who, sender->state_size, why,
                         why_size);
    char a[VL_SPEC_MODEL_MAX], b[VL_SPEC_MODEL_MAX];
    vl_spec_model(policy, a, sizeof a);
    vl_spec_model(sender, b, sizeof b);
    if (strcmp(a, b) != 0) {
        snprintf(why, why_size, "model: policy '%s' has '%s', %s '%s'", policy->policy_id, a, who,
                 b);
        return 1;
    }
    return 0;
}

int vl_spec_check_segment(const vl_spec_t *spec, const vl_segment_t *seg, char *why,
                          size_t why_size)
{
    if (seg->horizon != spec->horizon) {
        snprintf(why, why_size, "horizon %u, policy '%s' has %u", seg->horizon, spec->policy_id,
                 spec->horizon);
        return 1;
    }
    if (seg->action.dims != spec->action.dims) {
        snprintf(why, why_size, "action width %u, policy '%s' has %u", seg->action.dims,
                 spec->policy_id, spec->action.dims);
        return 1;
    }
    if (!vl_action_equal(&seg->action, &spec->action)) {
        char a[VL_ACTION_TEXT_MAX], b[VL_ACTION_TEXT_MAX];
        snprintf(why, why_size, "actions %s, policy '%s' has %s",
                 vl_action_str(&seg->action, a, sizeof a), spec->policy_id,
                 vl_action_str(&spec->action, b, sizeof b));
        return 1;
    }
    if (seg->state_size != spec->state_size) {
        snprintf(why, why_size, "state size %u, policy '%s' has %u", seg->state_size,
                 spec->policy_id, spec->state_size);
        return 1;
    }
    if (!vl_obs_spec_equal(&seg->obs_spec, &spec->obs_spec)) {
        char a[64], b[64];
        vl_spec_obs_str(&seg->obs_spec, a, sizeof a);
        vl_spec_obs_str(&spec->obs_spec, b, sizeof b);
        snprintf(why, why_size, "observation %s, policy '%s' has %s", a, spec->policy_id, b);
        return 1;
    }
    return 0;
}
