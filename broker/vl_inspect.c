/*  vl_inspect: validating segments and publications before forwarding. */
#include "vl_inspect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_opts.h"

struct vl_inspect_s {
    int full;
    vl_limits_t limits;
    size_t max_arrays;
    uint8_t *scratch; // segment arrays, grown on demand
    size_t scratch_size;
    size_t ceiling; // of the segment being checked
    int over;       // 1: it asked for more than the ceiling
};

vl_inspect_t *vl_inspect_new(int full, size_t max_arrays)
{
    vl_inspect_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->full = full;
    self->limits = vl_limits_default();
    self->max_arrays = max_arrays;
    self->ceiling = SIZE_MAX;
    return self;
}

void vl_inspect_destroy(vl_inspect_t **self_p)
{
    vl_inspect_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->scratch);
    free(self);
    *self_p = NULL;
}

/* Returns the scratch grown to at least size bytes, or NULL if that is over
   the bound or memory ran out (the segment is then refused as too big). */
static void *s_reserve(void *ctx, size_t size)
{
    vl_inspect_t *self = ctx;
    if (size > self->ceiling) {
        self->over = 1;
        return NULL;
    }
    if (size > self->scratch_size) {
        uint8_t *p = size <= self->max_arrays ? realloc(self->scratch, size) : NULL;
        if (!p)
            return NULL;
        self->scratch = p;
        self->scratch_size = size;
    }
    return self->scratch;
}

vl_reason_t vl_inspect_segment_within(vl_inspect_t *self, const uint8_t *data, size_t size,
                                      size_t ceiling, vl_segment_t *seg, int *over)
{
    self->ceiling = ceiling;
    self->over = 0;
    vl_reason_t r = vl_inspect_segment(self, data, size, seg);
    self->ceiling = SIZE_MAX;
    *over = self->over;
    return r;
}

vl_reason_t vl_inspect_segment(vl_inspect_t *self, const uint8_t *data, size_t size,
                               vl_segment_t *seg)
{
    if (!self->full)
        return vl_segment_peek(data, size, &self->limits, seg);
    return vl_segment_decode_with(data, size, &self->limits, seg, s_reserve, self);
}

// Segment fields read by vl_inspect_declared (messages/volley.proto).
#define S_FIELD_POLICY_ID 5
#define S_FIELD_RAW_SIZE  10

int vl_inspect_declared(const uint8_t *data, size_t size, char policy[VL_POLICY_ID_MAX],
                        uint64_t *raw_size)
{
    const uint8_t *p = data, *end = data + size;
    int have_policy = 0, have_raw = 0;
    while (p < end) {
        uint64_t key, v;
        if (vl_wire_varint(&p, end, &key) != 0)
            return -1;
        int type = (int)(key & 7);
        uint64_t field = key >> 3;
        if (type == 0) {
            if (vl_wire_varint(&p, end, &v) != 0)
                return -1;
            if (field == S_FIELD_RAW_SIZE)
                *raw_size = v, have_raw = 1;
        } else if (type == 2) {
            if (vl_wire_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p))
                return -1;
            if (field == S_FIELD_POLICY_ID) { // the last one counts, as when decoded
                have_policy = vl_policy_id_valid((const char *)p, v);
                if (have_policy) {
                    memcpy(policy, p, v);
                    policy[v] = 0;
                }
            }
            p += v;
        } else if (type == 5 || type == 1) {
            size_t n = type == 5 ? 4 : 8;
            if ((size_t)(end - p) < n)
                return -1;
            p += n;
        } else {
            return -1;
        }
    }
    if (!have_raw)
        *raw_size = 0; // proto3 leaves a zero out
    return have_policy ? 0 : -1;
}

vl_reason_t vl_inspect_publication(vl_inspect_t *self, const uint8_t *topic, size_t topic_len,
                                   const uint8_t *body, size_t body_len, vl_publication_t *out)
{
    char name[VL_POLICY_ID_MAX];
    out->is_stats =
        topic_len == strlen(VL_STATS_TOPIC) && memcmp(topic, VL_STATS_TOPIC, topic_len) == 0;
    if (out->is_stats)
        return vl_stats_decode(body, body_len, &out->stats);
    if (!vl_policy_id_valid((const char *)topic, topic_len))
        return VL_EPOLICY;
    memcpy(name, topic, topic_len);
    name[topic_len] = 0;
    vl_weights_t *w = NULL;
    vl_reason_t r = vl_weights_decode(body, body_len, &self->limits, &w);
    if (r == VL_OK && strcmp(w->policy_id, name) != 0)
        r = VL_EMISMATCH;
    if (r == VL_OK)
        out->version = w->version;
    vl_weights_destroy(&w);
    return r;
}
