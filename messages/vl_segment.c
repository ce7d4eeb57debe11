/*  vl_segment: segments to and from wire bytes.

    A decoder checks in a fixed order, so a message with one fault always gets
    the same reason: parse, schema, policy id, declared sizes against the
    limits, sizes against each other, LZ4 block, then values. Zero sizes are
    VL_ESHAPE (no sender can mean them), sizes above a limit VL_ETOOBIG.
    Nothing is decompressed before every size it depends on has passed. */
#include <assert.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "vl_codec.h"
#include "vl_spec.h"
#include "volley.pb-c.h"

/* Bytes of the non-observation payload per step: reward, logp, done, then
   4 per action value. */
#define S_STEP_BYTES 9

int vl_segment_set_spec(vl_segment_t *seg, const vl_obs_spec_t *spec)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t dim, wire;
    if (vl_obs_spec_check(spec, &lim, &dim, &wire) != VL_OK)
        return -1;
    seg->obs_spec = *spec;
    seg->obs_dim = dim;
    seg->obs_row_bytes = vl_obs_row_bytes(spec);
    seg->obs_wire_bytes = wire;
    return 0;
}

/* Returns the decompressed payload bytes of a segment (T steps, obs packed
   in wire bytes each, n_trunc final observations, dims values per action);
   T, n_trunc and wire are 32-bit and dims at most 16, so this fits in 64
   bits. */
static uint64_t s_payload_bytes(uint64_t T, uint64_t wire, uint64_t n_trunc, uint64_t dims,
                                uint64_t state)
{
    return (T + 1 + n_trunc) * wire + (S_STEP_BYTES + 4 * dims) * T + 4 * state;
}

size_t vl_segment_arrays_size(uint32_t T, const vl_obs_spec_t *spec, uint32_t action_dims,
                              uint32_t state_size)
{
    vl_limits_t lim = vl_limits_default();
    lim.max_obs_dim = UINT32_MAX;
    uint32_t dim, wire;
    if (!spec || action_dims == 0 || action_dims > VL_ACTION_DIMS_MAX ||
        state_size > VL_SEGMENT_STATE_MAX || vl_obs_spec_check(spec, &lim, &dim, &wire) != VL_OK)
        return SIZE_MAX;
    uint64_t row = vl_obs_row_bytes(spec), steps = (uint64_t)T + 1;
    if (2 * (row + wire) + 120 > UINT64_MAX / steps) // rows, finals, arrays, payload: no overflow
        return SIZE_MAX;
    uint64_t flags = ((uint64_t)T + 3) & ~3ull;
    uint64_t total = (2 * steps - 1) * row + (20 + 4 * (uint64_t)action_dims) * T + flags +
                     4 * (uint64_t)state_size +
                     ((s_payload_bytes(T, wire, T, action_dims, state_size) + 3) & ~3ull);
    return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

void vl_segment_bind(vl_segment_t *seg, void *arrays)
{
    size_t T = seg->horizon;
    seg->obs = arrays; // rows then step arrays, contiguous: what a learner holds
    seg->actions = (float *)(seg->obs + (T + 1) * (size_t)seg->obs_row_bytes);
    seg->rewards = seg->actions + T * seg->action.dims;
    seg->dones = seg->rewards + T;
    seg->logp = seg->dones + T;
    seg->episode_returns = seg->logp + T;
    seg->episode_lengths = (uint32_t *)(seg->episode_returns + T);
    seg->state = (float *)(seg->episode_lengths + T);
    seg->final_obs = (uint8_t *)(seg->state + seg->state_size); // rows: a multiple of 4 bytes
    seg->truncated = seg->final_obs + T * (size_t)seg->obs_row_bytes;
    seg->wire = seg->truncated + ((T + 3) & ~(size_t)3);
}

/* Reads the action space: schema 3's ActionSpace, schema 2's num_actions
   (one discrete choice). Returns VL_OK or the reason. */
static vl_reason_t s_check_action(const Volley__Segment *msg, const vl_limits_t *lim,
                                  vl_segment_t *seg)
{
    if (msg->schema >= 3)
        return msg->action ? vl_action_from_msg(msg->action, lim, &seg->action) : VL_EACTION;
    if (msg->num_actions == 0)
        return VL_ESHAPE;
    if (msg->num_actions > lim->max_actions)
        return VL_ETOOBIG;
    if (msg->num_actions < 2) // no space has one choice: such a segment could not be sent on
        return VL_EACTION;
    seg->action = vl_action_discrete(msg->num_actions);
    return VL_OK;
}

/* Checks horizon, observation fields and the action space against lim, in
   the contract's order, into seg. Returns VL_OK or the reason. */
static vl_reason_t s_check_shape(const Volley__Segment *msg, const vl_limits_t *lim,
                                 vl_segment_t *seg)
{
    if (msg->horizon == 0)
        return VL_ESHAPE;
    if (msg->horizon > lim->max_horizon)
        return VL_ETOOBIG;
    vl_reason_t r = vl_obs_fields_from_msg(msg->n_obs_fields, msg->obs_fields, &seg->obs_spec);
    if (r == VL_OK)
        r = vl_obs_spec_check(&seg->obs_spec, lim, &seg->obs_dim, &seg->obs_wire_bytes);
    if (r != VL_OK)
        return r;
    seg->obs_row_bytes = vl_obs_row_bytes(&seg->obs_spec);
    seg->schema = msg->schema;
    r = s_check_action(msg, lim, seg);
    if (r != VL_OK)
        return r;
    seg->horizon = msg->horizon;
    return VL_OK;
}

/* Runs every header check on msg and fills seg's scalar fields and figures; its arrays
   are NULL and n_episodes 0 until decoded. Returns VL_OK or the reason. */
static vl_reason_t s_check_header(const Volley__Segment *msg, const vl_limits_t *lim,
                                  vl_segment_t *seg)
{
    memset(seg, 0, sizeof *seg);
    vl_reason_t head = vl_wire_check_head(msg->schema, msg->policy_id);
    if (head != VL_OK)
        return head;
    vl_reason_t reason = s_check_shape(msg, lim, seg);
    if (reason != VL_OK)
        return reason;
    if (msg->truncations > seg->horizon)
        return VL_ESHAPE;
    seg->n_truncated = msg->truncations;
    if (msg->state_size > VL_SEGMENT_STATE_MAX)
        return VL_ETOOBIG;
    seg->state_size = msg->state_size;
    reason = vl_figures_from_msg(msg->n_figures, msg->figures, &seg->figures);
    if (reason != VL_OK)
        return reason;
    uint64_t expected = s_payload_bytes(seg->horizon, seg->obs_wire_bytes, seg->n_truncated,
                                        seg->action.dims, seg->state_size);
    reason = vl_wire_check_block(lim, expected, msg->raw_size, msg->payload.len);
    if (reason != VL_OK)
        return reason;
    seg->actor_id = msg->actor_id;
    seg->env_id = msg->env_id;
    seg->seq = msg->seq;
    memcpy(seg->policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
    seg->policy_version = msg->policy_version;
    seg->send_ns = msg->send_ns;
    return VL_OK;
}

/* Copies the episode fields into seg's bound arrays. Returns VL_OK, or
   VL_ESHAPE if their counts differ or exceed the horizon. */
static vl_reason_t s_copy_episodes(const Volley__Segment *msg, vl_segment_t *seg)
{
    size_t n = msg->n_episode_returns;
    if (n != msg->n_episode_lengths || n > seg->horizon)
        return VL_ESHAPE;
    if (n > 0) {
        memcpy(seg->episode_returns, msg->episode_returns, n * sizeof(float));
        memcpy(seg->episode_lengths, msg->episode_lengths, n * sizeof(uint32_t));
    }
    seg->n_episodes = (uint32_t)n;
    return VL_OK;
}

/* Unpacks the decompressed payload in seg->wire into seg's arrays and checks
   the step values. Returns VL_OK or the reason. */
static vl_reason_t s_unpack_steps(vl_segment_t *seg)
{
    size_t T = seg->horizon, A = 4 * T * seg->action.dims;
    const uint8_t *p = seg->wire + (T + 1) * seg->obs_wire_bytes;
    if (seg->schema < 3) { // int32 choices
        for (size_t t = 0; t < T; t++) {
            int32_t a;
            memcpy(&a, p + 4 * t, 4);
            seg->actions[t] = a < 0 || (uint32_t)a >= seg->action.n[0] ? -1.0f : (float)a;
        }
    } else {
        memcpy(seg->actions, p, A);
    }
    memcpy(seg->rewards, p + A, 4 * T);
    memcpy(seg->logp, p + A + 4 * T, 4 * T);
    const uint8_t *dones = p + A + 8 * T;
    uint32_t bad_done = 0, truncated = 0;
    for (size_t t = 0; t < T; t++) {
        bad_done |= dones[t] > 2;
        seg->dones[t] = dones[t] ? 1.0f : 0.0f;
        seg->truncated[t] = dones[t] == 2;
        truncated += dones[t] == 2;
    }
    bad_done |= truncated != seg->n_truncated; // the header's count sized the payload
    if (!vl_wire_all_finite(seg->rewards, T) || !vl_wire_all_finite(seg->logp, T))
        return VL_ENONFINITE;
    if (vl_action_find_bad(&seg->action, seg->actions, T) >= 0)
        return VL_EACTION;
    for (size_t t = 0; t < T && !vl_action_is_box(&seg->action); t++)
        bad_done |= !(seg->logp[t] <= 0.0f);
    return bad_done ? VL_EDONE : VL_OK;
}

/* Validates an unpacked segment into seg, decompressing into `arrays`.
   Returns VL_OK or the reason. */
/* A reserve callback over one fixed buffer: what vl_segment_decode uses. */
typedef struct {
    void *arrays;
    size_t cap;
} s_fixed_t;

static void *s_fixed_reserve(void *ctx, size_t need)
{
    s_fixed_t *f = ctx;
    return f->arrays && need <= f->cap ? f->arrays : NULL;
}

/* Validates an unpacked segment into seg, decompressing into the storage
   reserve gives for it. Returns VL_OK or the reason. */
static vl_reason_t s_segment_from_msg(const Volley__Segment *msg, const vl_limits_t *lim,
                                      vl_segment_t *seg, vl_segment_reserve_fn reserve, void *ctx)
{
    vl_reason_t reason = s_check_header(msg, lim, seg);
    if (reason != VL_OK)
        return reason;
    void *arrays = reserve(ctx, vl_segment_arrays_size(seg->horizon, &seg->obs_spec,
                                                       seg->action.dims, seg->state_size));
    if (!arrays)
        return VL_ETOOBIG;
    vl_segment_bind(seg, arrays);
    reason = vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, seg->wire);
    if (reason != VL_OK)
        return reason;
    size_t T = seg->horizon;
    size_t final_at = (T + 1) * seg->obs_wire_bytes + (S_STEP_BYTES + 4 * seg->action.dims) * T;
    vl_obs_unpack_rows(&seg->obs_spec, T + 1, seg->wire, seg->obs);
    vl_obs_unpack_rows(&seg->obs_spec, seg->n_truncated, seg->wire + final_at, seg->final_obs);
    memcpy(seg->state, seg->wire + final_at + (size_t)seg->n_truncated * seg->obs_wire_bytes,
           4 * (size_t)seg->state_size);
    reason = s_copy_episodes(msg, seg);
    if (reason == VL_OK)
        reason = s_unpack_steps(seg);
    if (reason == VL_OK && (!vl_obs_rows_finite(&seg->obs_spec, seg->horizon + 1, seg->obs) ||
                            !vl_obs_rows_finite(&seg->obs_spec, seg->n_truncated, seg->final_obs) ||
                            !vl_wire_all_finite(seg->episode_returns, seg->n_episodes) ||
                            !vl_wire_all_finite(seg->state, seg->state_size)))
        reason = VL_ENONFINITE;
    return reason;
}

vl_reason_t vl_segment_peek(const uint8_t *data, size_t size, const vl_limits_t *lim,
                            vl_segment_t *seg)
{
    assert(lim && seg);
    vl_reason_t unpacked;
    Volley__Segment *msg = vl_wire_unpack(&volley__segment__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_segment_t tmp;
    vl_reason_t reason = s_check_header(msg, lim, &tmp);
    volley__segment__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *seg = tmp;
    return reason;
}

vl_reason_t vl_segment_decode_with(const uint8_t *data, size_t size, const vl_limits_t *lim,
                                   vl_segment_t *seg, vl_segment_reserve_fn reserve, void *ctx)
{
    assert(lim && seg && reserve);
    vl_reason_t unpacked;
    Volley__Segment *msg = vl_wire_unpack(&volley__segment__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_segment_t tmp;
    vl_reason_t reason = s_segment_from_msg(msg, lim, &tmp, reserve, ctx);
    volley__segment__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *seg = tmp;
    return reason;
}

vl_reason_t vl_segment_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_segment_t *seg, void *arrays, size_t arrays_cap)
{
    s_fixed_t fixed = {arrays, arrays_cap};
    return vl_segment_decode_with(data, size, lim, seg, s_fixed_reserve, &fixed);
}

/* Returns how many steps of seg end by truncation (a done that is also
   marked truncated). */
static uint32_t s_count_truncated(const vl_segment_t *seg)
{
    uint32_t n = 0;
    for (uint32_t t = 0; seg->truncated && t < seg->horizon; t++)
        n += seg->truncated[t] && seg->dones[t] != 0.0f;
    return n;
}

/* Returns the payload bytes of seg if it is a segment some receiver could
   accept (sizes nonzero and consistent, arrays set, policy id valid), else
   0. Values are not checked: receivers do that. */
static uint64_t s_encodable_bytes(const vl_segment_t *seg)
{
    vl_limits_t lim = vl_limits_default();
    lim.max_obs_dim = UINT32_MAX;
    uint32_t dim, wire;
    if (seg->horizon == 0 || vl_action_check(&seg->action, &lim, NULL, 0) != 0 ||
        seg->n_episodes > seg->horizon || !vl_policy_id_ok(seg->policy_id) ||
        vl_obs_spec_check(&seg->obs_spec, &lim, &dim, &wire) != VL_OK || dim != seg->obs_dim ||
        wire != seg->obs_wire_bytes || vl_obs_row_bytes(&seg->obs_spec) != seg->obs_row_bytes)
        return 0;
    if (!seg->obs || !seg->actions || !seg->rewards || !seg->dones || !seg->logp ||
        (seg->n_episodes > 0 && (!seg->episode_returns || !seg->episode_lengths)))
        return 0;
    if (s_count_truncated(seg) != seg->n_truncated || (seg->n_truncated && !seg->final_obs))
        return 0;
    if (seg->state_size > VL_SEGMENT_STATE_MAX || (seg->state_size && !seg->state))
        return 0;
    uint64_t bytes =
        s_payload_bytes(seg->horizon, wire, seg->n_truncated, seg->action.dims, seg->state_size);
    return bytes <= LZ4_MAX_INPUT_SIZE ? bytes : 0;
}

/* Writes seg's payload, packed, into buf (s_payload_bytes bytes). */
static void s_write_payload(const vl_segment_t *seg, uint8_t *buf)
{
    size_t T = seg->horizon;
    vl_obs_pack_rows(&seg->obs_spec, T + 1, seg->obs, buf);
    size_t A = 4 * T * seg->action.dims;
    uint8_t *p = buf + (T + 1) * seg->obs_wire_bytes;
    memcpy(p, seg->actions, A);
    memcpy(p + A, seg->rewards, 4 * T);
    memcpy(p + A + 4 * T, seg->logp, 4 * T);
    for (size_t t = 0; t < T; t++)
        p[A + 8 * T + t] = seg->dones[t] == 0.0f                   ? 0
                           : (seg->truncated && seg->truncated[t]) ? 2
                                                                   : 1;
    vl_obs_pack_rows(&seg->obs_spec, seg->n_truncated, seg->final_obs, p + A + 9 * T);
    if (seg->state_size)
        memcpy(p + A + 9 * T + (size_t)seg->n_truncated * seg->obs_wire_bytes, seg->state,
               4 * (size_t)seg->state_size);
}

/* Fills msg's header and episode fields from seg (pointers borrowed; the
   field messages live in fields and ptrs). */
static void s_segment_to_msg(const vl_segment_t *seg, Volley__Segment *msg,
                             Volley__ObsField *fields, Volley__ObsField **ptrs,
                             Volley__ActionSpace *action)
{
    msg->schema = VL_SCHEMA_VERSION;
    msg->actor_id = seg->actor_id;
    msg->env_id = seg->env_id;
    msg->seq = seg->seq;
    msg->policy_id = (char *)seg->policy_id;
    msg->policy_version = seg->policy_version;
    msg->horizon = seg->horizon;
    vl_obs_fields_to_msg(&seg->obs_spec, fields, ptrs);
    msg->n_obs_fields = seg->obs_spec.n_fields;
    msg->obs_fields = ptrs;
    vl_action_to_msg(&seg->action, action);
    msg->action = action;
    msg->n_episode_returns = seg->n_episodes;
    msg->episode_returns = seg->episode_returns;
    msg->n_episode_lengths = seg->n_episodes;
    msg->episode_lengths = seg->episode_lengths;
    msg->send_ns = seg->send_ns;
    msg->truncations = seg->n_truncated;
    msg->state_size = seg->state_size;
}

int vl_segment_encode(const vl_segment_t *seg, uint8_t **out, size_t *out_size)
{
    if (!seg || !out || !out_size)
        return -1;
    uint64_t raw = s_encodable_bytes(seg);
    uint8_t *payload = raw ? malloc((size_t)raw) : NULL;
    if (!payload)
        return -1;
    s_write_payload(seg, payload);
    size_t len = 0;
    uint8_t *block = vl_wire_compress(payload, (size_t)raw, &len);
    free(payload);
    if (!block)
        return -1;
    Volley__Segment msg = VOLLEY__SEGMENT__INIT;
    Volley__ObsField fields[VL_OBS_FIELDS_MAX];
    Volley__ObsField *ptrs[VL_OBS_FIELDS_MAX];
    Volley__ActionSpace action;
    Volley__Figure figures[VL_FIGURES_MAX], *figure_ptrs[VL_FIGURES_MAX];
    s_segment_to_msg(seg, &msg, fields, ptrs, &action);
    msg.n_figures = vl_figures_to_msg(&seg->figures, figures, figure_ptrs);
    msg.figures = figure_ptrs;
    msg.raw_size = (uint32_t)raw;
    msg.payload.data = block;
    msg.payload.len = len;
    int rc = vl_wire_pack(&msg.base, out, out_size);
    free(block);
    return rc;
}
