/*  vl_control: the small control messages, Hello, Credit and Stats, to and from
    wire bytes. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vl_codec.h"
#include "vl_status.h"
#include "volley.pb-c.h"

/* Encodes a Hello. Returns 0 and sets *out (caller frees), or -1. */
int vl_hello_encode(const char *policy_id, uint8_t **out, size_t *out_size)
{
    if (!vl_policy_id_ok(policy_id) || !out || !out_size)
        return -1;
    Volley__Hello msg = VOLLEY__HELLO__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)policy_id;
    return vl_wire_pack(&msg.base, out, out_size);
}

/* Decodes a Hello into policy_id (written on VL_OK alone). */
vl_reason_t vl_hello_decode(const uint8_t *data, size_t size, char policy_id[VL_POLICY_ID_MAX])
{
    assert(policy_id);
    vl_reason_t unpacked;
    Volley__Hello *msg = vl_wire_unpack(&volley__hello__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_reason_t reason = vl_wire_check_head(msg->schema, msg->policy_id);
    if (reason == VL_OK)
        memcpy(policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
    volley__hello__free_unpacked(msg, NULL);
    return reason;
}

/* Returns VL_OK if a Credit's counters are within the contract. */
static vl_reason_t s_credit_check(uint64_t granted, uint64_t received)
{
    if (granted == 0 && received == 0)
        return VL_EMISMATCH; // a Hello
    if (received > granted)
        return VL_ESHAPE;
    if (granted - received > VL_CREDIT_MAX)
        return VL_ETOOBIG;
    return VL_OK;
}

/* Encodes a Credit. Returns 0 and sets *out (caller frees), or -1 on a bad
   policy id, counters the decoder would refuse or no memory. */
int vl_credit_encode(const vl_credit_t *credit, uint8_t **out, size_t *out_size)
{
    if (!credit || !vl_policy_id_ok(credit->policy_id) || !out || !out_size ||
        s_credit_check(credit->total_granted, credit->total_received) != VL_OK)
        return -1;
    Volley__Credit msg = VOLLEY__CREDIT__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)credit->policy_id;
    msg.total_granted = credit->total_granted;
    msg.total_received = credit->total_received;
    return vl_wire_pack(&msg.base, out, out_size);
}

/* Decodes a Credit into *credit (written on VL_OK alone). */
vl_reason_t vl_credit_decode(const uint8_t *data, size_t size, vl_credit_t *credit)
{
    assert(credit);
    vl_reason_t unpacked;
    Volley__Credit *msg = vl_wire_unpack(&volley__credit__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_reason_t reason = vl_wire_check_head(msg->schema, msg->policy_id);
    if (reason == VL_OK)
        reason = s_credit_check(msg->total_granted, msg->total_received);
    if (reason == VL_OK) {
        memcpy(credit->policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
        credit->total_granted = msg->total_granted;
        credit->total_received = msg->total_received;
    }
    volley__credit__free_unpacked(msg, NULL);
    return reason;
}

/* Encodes stats into a new buffer. Returns 0 and sets *out (caller frees),
   or -1 on a bad policy id or no memory. */
void vl_stats_to_msg(const vl_stats_t *stats, Volley__Stats *msg, vl_stats_figures_t *store)
{
    volley__stats__init(msg);
    msg->schema = VL_SCHEMA_VERSION;
    msg->policy_id = (char *)stats->policy_id;
    msg->version = stats->version;
    msg->env_steps = stats->env_steps;
    msg->episodes = stats->episodes;
    msg->mean_return = stats->mean_return;
    msg->window = stats->window;
    msg->lag_mean = stats->lag_mean;
    msg->lag_max = stats->lag_max;
    msg->lag_min = stats->lag_min;
    msg->lag_median = stats->lag_median;
    msg->policy_loss = stats->policy_loss;
    msg->value_loss = stats->value_loss;
    msg->entropy = stats->entropy;
    msg->segments_trained = stats->segments_trained;
    msg->segments_dropped = stats->segments_dropped;
    msg->dropped_lag = stats->dropped_lag;
    msg->dropped_capacity = stats->dropped_capacity;
    msg->dropped_budget = stats->dropped_budget;
    msg->dropped_invalid = stats->dropped_invalid;
    msg->segments_arrived = stats->segments_arrived;
    msg->uptime_s = stats->uptime_s;
    msg->ingest_ms = stats->ingest_ms;
    msg->train_ms = stats->train_ms;
    uint32_t n = stats->n_figures < VL_FIGURES_KEPT ? stats->n_figures : VL_FIGURES_KEPT;
    for (uint32_t k = 0; k < n; k++) {
        volley__figure__init(&store->figs[k]);
        store->figs[k].name = (char *)stats->figure_names[k];
        store->figs[k].n_values = 1;
        store->figs[k].values = (float *)&stats->figure_means[k];
        store->ptrs[k] = &store->figs[k];
    }
    msg->n_figures = n;
    msg->figures = store->ptrs;
}

int vl_stats_encode(const vl_stats_t *stats, uint8_t **out, size_t *out_size)
{
    if (!stats || !vl_policy_id_ok(stats->policy_id) || !out || !out_size ||
        stats->n_refusals > VL_REFUSALS_MAX)
        return -1;
    for (uint32_t k = 0; k < stats->n_figures && k < VL_FIGURES_KEPT; k++)
        if (!vl_figure_name_ok(stats->figure_names[k]) || !isfinite(stats->figure_means[k]))
            return -1;
    Volley__Stats msg;
    vl_stats_figures_t figures;
    vl_stats_to_msg(stats, &msg, &figures);
    Volley__Refusal rows[VL_REFUSALS_MAX], *ptrs[VL_REFUSALS_MAX];
    for (uint32_t i = 0; i < stats->n_refusals; i++) {
        if (!vl_wire_name_ok(stats->refusals[i].reason, VL_REFUSAL_TEXT_MAX))
            return -1;
        volley__refusal__init(&rows[i]);
        rows[i].actor_id = stats->refusals[i].actor_id;
        rows[i].reason = (char *)stats->refusals[i].reason;
        rows[i].count = stats->refusals[i].count;
        ptrs[i] = &rows[i];
    }
    msg.n_refusals = stats->n_refusals;
    msg.refusals = ptrs;
    return vl_wire_pack(&msg.base, out, out_size);
}

/* Validates an unpacked Stats and copies it into stats. Returns VL_OK or
   the reason. */
vl_reason_t vl_stats_check_msg(const Volley__Stats *msg)
{
    vl_reason_t reason = vl_wire_check_head(msg->schema, msg->policy_id);
    if (reason != VL_OK)
        return reason;
    if (!vl_float_is_finite(msg->mean_return) || !vl_float_is_finite(msg->lag_mean) ||
        !vl_float_is_finite(msg->policy_loss) || !vl_float_is_finite(msg->value_loss) ||
        !vl_float_is_finite(msg->entropy) || !vl_double_is_finite(msg->uptime_s) ||
        !vl_float_is_finite(msg->ingest_ms) || !vl_float_is_finite(msg->train_ms))
        return VL_ENONFINITE;
    if (msg->n_refusals > VL_REFUSALS_MAX)
        return VL_ETOOBIG;
    for (size_t i = 0; i < msg->n_refusals; i++)
        if (!vl_wire_name_ok(msg->refusals[i]->reason, VL_REFUSAL_TEXT_MAX))
            return VL_EPOLICY;
    if (msg->n_figures > VL_FIGURES_KEPT)
        return VL_ETOOBIG;
    for (size_t k = 0; k < msg->n_figures; k++) {
        if (!vl_figure_name_ok(msg->figures[k]->name))
            return VL_EPOLICY;
        if (msg->figures[k]->n_values != 1)
            return VL_ESHAPE;
        if (!vl_float_is_finite(msg->figures[k]->values[0]))
            return VL_ENONFINITE;
    }
    return VL_OK;
}

static vl_reason_t s_stats_from_msg(const Volley__Stats *msg, vl_stats_t *stats)
{
    vl_reason_t reason = vl_stats_check_msg(msg);
    if (reason != VL_OK)
        return reason;
    memcpy(stats->policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
    stats->version = msg->version;
    stats->env_steps = msg->env_steps;
    stats->episodes = msg->episodes;
    stats->mean_return = msg->mean_return;
    stats->window = msg->window;
    stats->lag_mean = msg->lag_mean;
    stats->lag_max = msg->lag_max;
    stats->lag_min = msg->lag_min;
    stats->lag_median = msg->lag_median;
    stats->policy_loss = msg->policy_loss;
    stats->value_loss = msg->value_loss;
    stats->entropy = msg->entropy;
    stats->segments_trained = msg->segments_trained;
    stats->segments_dropped = msg->segments_dropped;
    stats->dropped_lag = msg->dropped_lag;
    stats->dropped_capacity = msg->dropped_capacity;
    stats->dropped_budget = msg->dropped_budget;
    stats->dropped_invalid = msg->dropped_invalid;
    stats->segments_arrived = msg->segments_arrived;
    stats->uptime_s = msg->uptime_s;
    stats->ingest_ms = msg->ingest_ms;
    stats->train_ms = msg->train_ms;
    stats->n_refusals = (uint32_t)msg->n_refusals;
    for (size_t i = 0; i < msg->n_refusals; i++) {
        const Volley__Refusal *r = msg->refusals[i];
        stats->refusals[i].actor_id = r->actor_id;
        memcpy(stats->refusals[i].reason, r->reason, strlen(r->reason) + 1);
        stats->refusals[i].count = r->count;
    }
    stats->n_figures = (uint32_t)msg->n_figures;
    for (size_t k = 0; k < msg->n_figures; k++) {
        snprintf(stats->figure_names[k], VL_FIGURE_NAME_MAX, "%s", msg->figures[k]->name);
        stats->figure_means[k] = msg->figures[k]->values[0];
    }
    return VL_OK;
}

/* Decodes stats (floats finite). *stats is written on VL_OK alone. */
vl_reason_t vl_stats_decode(const uint8_t *data, size_t size, vl_stats_t *stats)
{
    assert(stats);
    vl_reason_t unpacked;
    Volley__Stats *msg = vl_wire_unpack(&volley__stats__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_stats_t tmp;
    memset(&tmp, 0, sizeof tmp);
    vl_reason_t reason = s_stats_from_msg(msg, &tmp);
    volley__stats__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *stats = tmp;
    return reason;
}
