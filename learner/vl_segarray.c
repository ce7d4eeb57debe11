/*  vl_segarray: the per-array copies of a batch of segments. */
#include "vl_segarray.h"

#include <string.h>

#include "volley/engine.h"

/* Returns the wire's bytes of one of segment s's observations. */
static size_t s_wire_bytes(const vl_segment_t *s)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0;
    return vl_obs_spec_check(&s->obs_spec, &lim, &dim, &wire) == VL_OK ? wire : 0;
}

size_t vl_segarray_bytes_of(const vl_segment_t *s, int array)
{
    size_t T = s->horizon, D = s->obs_dim;
    switch (array) {
    case VL_TRANSPORT_OBS:
        return (T + 1) * D * sizeof(float);
    case VL_TRANSPORT_OBS_ROWS:
        return (T + 1) * s->obs_row_bytes;
    case VL_ENGINE_OBS_PACKED:
        return (T + 1) * s_wire_bytes(s);
    case VL_TRANSPORT_FINAL_OBS:
        return T * D * sizeof(float);
    case VL_ENGINE_FINAL_PACKED:
        return (size_t)s->n_truncated * s_wire_bytes(s);
    case VL_TRANSPORT_ACTIONS:
        return T * 4 * s->action.dims;
    case VL_TRANSPORT_REWARDS:
    case VL_TRANSPORT_DONES:
    case VL_TRANSPORT_LOGP:
        return T * 4;
    case VL_TRANSPORT_TRUNCATED:
        return T;
    case VL_TRANSPORT_POLICY_VERSION:
    case VL_TRANSPORT_SEQ:
        return 8;
    case VL_TRANSPORT_ACTOR_ID:
    case VL_TRANSPORT_ENV_ID:
    case VL_TRANSPORT_N_EPISODES:
        return 4;
    case VL_TRANSPORT_EPISODE_RETURNS:
    case VL_TRANSPORT_EPISODE_LENGTHS:
        return s->n_episodes * 4;
    case VL_ENGINE_STATE:
        return (size_t)s->state_size * sizeof(float);
    default:
        return 0;
    }
}

size_t vl_segarray_bytes(const vl_segment_t *const *segs, uint32_t n, int array)
{
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += vl_segarray_bytes_of(segs[i], array);
    return total;
}

/* Writes segment s's final observations as floats at their steps of out
   [T][D], zeros at the other steps. */
static void s_final_obs(const vl_segment_t *s, float *out)
{
    uint32_t T = s->horizon, D = s->obs_dim, row = s->obs_row_bytes, k = 0;
    memset(out, 0, (size_t)T * D * sizeof(float));
    for (uint32_t t = 0; t < T && k < s->n_truncated; t++)
        if (s->truncated[t])
            vl_obs_from_rows(&s->obs_spec, 1, s->final_obs + (size_t)(k++) * row,
                             out + (size_t)t * D);
}

const void *vl_segarray_in_place(const vl_segment_t *s, int array)
{
    switch (array) {
    case VL_TRANSPORT_OBS_ROWS:
        return s->obs;
    case VL_TRANSPORT_ACTIONS:
        return s->actions;
    case VL_TRANSPORT_REWARDS:
        return s->rewards;
    case VL_TRANSPORT_DONES:
        return s->dones;
    case VL_TRANSPORT_TRUNCATED:
        return s->truncated;
    case VL_TRANSPORT_LOGP:
        return s->logp;
    case VL_TRANSPORT_EPISODE_RETURNS:
        return s->episode_returns;
    case VL_TRANSPORT_EPISODE_LENGTHS:
        return s->episode_lengths;
    case VL_ENGINE_STATE:
        return s->state;
    default:
        return NULL;
    }
}

/* Returns the address of segment s's scalar for array, or NULL. */
static const void *s_scalar(const vl_segment_t *s, int array)
{
    switch (array) {
    case VL_TRANSPORT_POLICY_VERSION:
        return &s->policy_version;
    case VL_TRANSPORT_SEQ:
        return &s->seq;
    case VL_TRANSPORT_ACTOR_ID:
        return &s->actor_id;
    case VL_TRANSPORT_ENV_ID:
        return &s->env_id;
    case VL_TRANSPORT_N_EPISODES:
        return &s->n_episodes;
    default:
        return NULL;
    }
}

/* Copies segment s's share of array into out (vl_segarray_bytes_of bytes). */
static void s_copy(const vl_segment_t *s, int array, uint8_t *out)
{
    size_t n = vl_segarray_bytes_of(s, array);
    const void *src = vl_segarray_in_place(s, array);
    if (!src)
        src = s_scalar(s, array);
    if (array == VL_TRANSPORT_OBS)
        vl_obs_from_rows(&s->obs_spec, (size_t)s->horizon + 1, s->obs, (float *)(void *)out);
    else if (array == VL_ENGINE_OBS_PACKED)
        vl_obs_pack_rows(&s->obs_spec, (size_t)s->horizon + 1, s->obs, out);
    else if (array == VL_TRANSPORT_FINAL_OBS)
        s_final_obs(s, (float *)(void *)out);
    else if (array == VL_ENGINE_FINAL_PACKED)
        vl_obs_pack_rows(&s->obs_spec, s->n_truncated, s->final_obs, out);
    else if (src && n)
        memcpy(out, src, n);
}

int vl_segarray_gather(const vl_segment_t *const *segs, uint32_t n, int array, void *out,
                       size_t out_size)
{
    // the transport's arrays, the state (VL_ENGINE_STATE follows them) and the packed rows
    if (array < 0 ||
        (array > VL_ENGINE_STATE && array != VL_ENGINE_OBS_PACKED &&
         array != VL_ENGINE_FINAL_PACKED) ||
        !out ||
        out_size < vl_segarray_bytes(segs, n, array))
        return -1;
    uint8_t *p = out;
    for (uint32_t i = 0; i < n; i++) {
        s_copy(segs[i], array, p);
        p += vl_segarray_bytes_of(segs[i], array);
    }
    return 0;
}
