/*  vl_status: Beat and Status to and from wire bytes. */
#include "vl_status.h"

#include <assert.h>
#include <string.h>

/* Returns 1 if f is finite and not negative. */
static int s_figure_ok(float f)
{
    return vl_float_is_finite(f) && f >= 0.0f;
}

/* Returns 1 if a beat's figures are all finite and >= 0. */
static int s_beat_figures_ok(float apply_ms, float apply_ms_max, float steps)
{
    return s_figure_ok(apply_ms) && s_figure_ok(apply_ms_max) && s_figure_ok(steps);
}

int vl_beat_encode(const vl_beat_t *beat, uint8_t **out, size_t *out_size)
{
    if (!beat || !vl_policy_id_ok(beat->policy_id) || !out || !out_size ||
        !s_beat_figures_ok(beat->apply_ms, beat->apply_ms_max, beat->env_steps_per_s))
        return -1;
    Volley__Beat msg = VOLLEY__BEAT__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)beat->policy_id;
    msg.actor_id = beat->actor_id;
    msg.segments_sent = beat->segments_sent;
    msg.weights_version = beat->weights_version;
    msg.apply_ms = beat->apply_ms;
    msg.apply_ms_max = beat->apply_ms_max;
    msg.env_steps_per_s = beat->env_steps_per_s;
    Volley__Spec spec;
    Volley__ObsField fields[VL_OBS_FIELDS_MAX];
    Volley__ObsField *ptrs[VL_OBS_FIELDS_MAX];
    Volley__ActionSpace action;
    if (beat->has_spec) {
        vl_spec_to_msg(&beat->spec, &spec, fields, ptrs, &action);
        spec.policy_id = (char *)beat->policy_id;
        msg.spec = &spec;
    }
    return vl_wire_pack(&msg.base, out, out_size);
}

vl_reason_t vl_beat_decode(const uint8_t *data, size_t size, vl_beat_t *beat)
{
    assert(beat);
    vl_reason_t unpacked;
    Volley__Beat *msg = vl_wire_unpack(&volley__beat__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_reason_t reason = vl_wire_check_head(msg->schema, msg->policy_id);
    if (reason == VL_OK &&
        !s_beat_figures_ok(msg->apply_ms, msg->apply_ms_max, msg->env_steps_per_s))
        reason = VL_ENONFINITE;
    vl_spec_t spec;
    vl_limits_t lim = vl_limits_default();
    if (reason == VL_OK && msg->spec) {
        reason = vl_spec_from_msg(msg->spec, &lim, &spec);
        if (reason == VL_OK && strcmp(spec.policy_id, msg->policy_id) != 0)
            reason = VL_EPOLICY;
    }
    if (reason == VL_OK) {
        beat->has_spec = msg->spec != NULL;
        if (beat->has_spec)
            beat->spec = spec;
        memcpy(beat->policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
        beat->actor_id = msg->actor_id;
        beat->segments_sent = msg->segments_sent;
        beat->weights_version = msg->weights_version;
        beat->apply_ms = msg->apply_ms;
        beat->apply_ms_max = msg->apply_ms_max;
        beat->env_steps_per_s = msg->env_steps_per_s;
    }
    volley__beat__free_unpacked(msg, NULL);
    return reason;
}

int vl_status_encode(Volley__Status *status, uint8_t **out, size_t *out_size)
{
    if (!status || !out || !out_size)
        return -1;
    status->schema = VL_SCHEMA_VERSION;
    return vl_wire_pack(&status->base, out, out_size);
}

/* Checks one actor row. */
static vl_reason_t s_check_actor(const Volley__ActorRow *a)
{
    if (!vl_policy_id_ok(a->policy_id))
        return VL_EPOLICY;
    if (!s_figure_ok(a->segments_per_s) || !s_figure_ok(a->send_ms) || !s_figure_ok(a->apply_ms) ||
        !s_figure_ok(a->env_steps_per_s) || !s_figure_ok(a->silent_s))
        return VL_ENONFINITE;
    return VL_OK;
}

/* Checks one learner row and its stats, if any. */
static vl_reason_t s_check_learner(const Volley__LearnerRow *l)
{
    if (!vl_policy_id_ok(l->policy_id))
        return VL_EPOLICY;
    if (!s_figure_ok(l->delivered_per_s) || !s_figure_ok(l->silent_s))
        return VL_ENONFINITE;
    if (l->peer && l->peer[0] && !vl_wire_name_ok(l->peer, VL_STATUS_TEXT_MAX))
        return VL_EPOLICY;
    return l->stats ? vl_stats_check_msg(l->stats) : VL_OK;
}

/* Checks one drop row: both texts short printable ASCII. */
static vl_reason_t s_check_drop(const Volley__DropRow *d)
{
    return vl_wire_name_ok(d->kind, VL_STATUS_TEXT_MAX) &&
                   vl_wire_name_ok(d->reason, VL_STATUS_TEXT_MAX)
               ? VL_OK
               : VL_EPOLICY;
}

/* Checks a whole unpacked Status. */
static vl_reason_t s_check_status(const Volley__Status *s)
{
    if (s->schema != VL_SCHEMA_VERSION)
        return VL_EVERSION;
    if (s->n_actors > VL_STATUS_MAX_ACTORS || s->n_learners > VL_STATUS_MAX_LEARNERS ||
        s->n_drops > VL_STATUS_MAX_DROPS || s->n_specs > VL_STATUS_MAX_SPECS)
        return VL_ETOOBIG;
    if (!vl_double_is_finite(s->uptime_s) || s->uptime_s < 0 ||
        s->uptime_s > VL_STATUS_MAX_UPTIME || !s_figure_ok(s->received_per_s))
        return VL_ENONFINITE;
    if (s->record_error && s->record_error[0] &&
        !vl_wire_name_ok(s->record_error, VL_STATUS_TEXT_MAX))
        return VL_EPOLICY;
    vl_reason_t r = VL_OK;
    for (size_t i = 0; r == VL_OK && i < s->n_actors; i++)
        r = s_check_actor(s->actors[i]);
    for (size_t i = 0; r == VL_OK && i < s->n_learners; i++)
        r = s_check_learner(s->learners[i]);
    for (size_t i = 0; r == VL_OK && i < s->n_drops; i++)
        r = s_check_drop(s->drops[i]);
    vl_limits_t lim = vl_limits_default();
    vl_spec_t spec;
    for (size_t i = 0; r == VL_OK && i < s->n_specs; i++)
        r = vl_spec_from_msg(s->specs[i], &lim, &spec);
    return r;
}

Volley__Status *vl_status_decode(const uint8_t *data, size_t size, vl_reason_t *reason)
{
    assert(reason);
    Volley__Status *s = vl_wire_unpack(&volley__status__descriptor, data, size, reason);
    if (!s)
        return NULL;
    *reason = s_check_status(s);
    if (*reason != VL_OK)
        vl_status_free(&s);
    return s;
}

void vl_status_free(Volley__Status **status_p)
{
    if (!status_p || !*status_p)
        return;
    volley__status__free_unpacked(*status_p, NULL);
    *status_p = NULL;
}
