/*  vl_inspect_test: what a segment declares, read without decoding it
    (policy id and payload size, as vl_segment_encode wrote them), and every
    truncation and byte flip of it read safely. */
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_inspect.h"

/* Encodes a valid 4-float segment of horizon 8 for policy acting in space
   (caller frees); *horizon is what its header says when decoded back. */
static uint8_t *s_segment_in(const char *policy, const vl_action_spec_t *space, size_t *size,
                             uint32_t *horizon)
{
    static uint8_t arrays[1 << 16];
    vl_segment_t seg = {.horizon = 8, .action = *space};
    snprintf(seg.policy_id, sizeof seg.policy_id, "%s", policy);
    vl_obs_spec_t spec = vl_obs_spec_flat(4);
    vl_segment_set_spec(&seg, &spec);
    vl_segment_bind(&seg, arrays);
    memset(arrays, 0, sizeof arrays);
    uint8_t *buf = NULL;
    if (vl_segment_encode(&seg, &buf, size) != 0)
        return NULL;
    vl_limits_t lim = vl_limits_default();
    vl_segment_t head;
    *horizon = vl_segment_peek(buf, *size, &lim, &head) == VL_OK ? (uint32_t)head.horizon : 0;
    return buf;
}

/* s_segment_in for one discrete choice among 2. */
static uint8_t *s_segment(const char *policy, size_t *size, uint32_t *horizon)
{
    vl_action_spec_t two = vl_action_discrete(2);
    return s_segment_in(policy, &two, size, horizon);
}

static void test_declared(void)
{
    size_t size;
    uint32_t h;
    uint8_t *buf = s_segment("walker-2", &size, &h);
    VL_CHECK(buf && h == 8);
    char policy[VL_POLICY_ID_MAX];
    uint64_t raw = 0;
    VL_CHECK(vl_inspect_declared(buf, size, policy, &raw) == 0);
    VL_CHECK(strcmp(policy, "walker-2") == 0);
    VL_CHECK(raw == (8 + 1) * 4 * 4 + 13 * 8); // observations, then the step arrays
    free(buf);
    vl_action_spec_t box = {.kind = VL_ENV_BOX, .dims = 2, .low = {-1, -1}, .high = {1, 1}};
    buf = s_segment_in("walker-2", &box, &size, &h);
    VL_CHECK(buf && h == 8);
    VL_CHECK(vl_inspect_declared(buf, size, policy, &raw) == 0);
    VL_CHECK(raw == (8 + 1) * 4 * 4 + (9 + 4 * 2) * 8); // two floats an action
    free(buf);
}

static void test_hostile_bytes(void)
{
    size_t size;
    uint32_t h;
    uint8_t *buf = s_segment("default", &size, &h);
    VL_CHECK(buf);
    char policy[VL_POLICY_ID_MAX];
    uint64_t raw;
    for (size_t n = 0; n < size; n++) // every truncation: never reads past n
        vl_inspect_declared(buf, n, policy, &raw);
    uint8_t *copy = malloc(size);
    for (size_t i = 0; i < size; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, buf, size);
            copy[i] ^= (uint8_t)(1u << bit);
            if (vl_inspect_declared(copy, size, policy, &raw) == 0)
                VL_CHECK(strlen(policy) < VL_POLICY_ID_MAX);
        }
    uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    VL_CHECK(vl_inspect_declared(junk, sizeof junk, policy, &raw) != 0);
    VL_CHECK(vl_inspect_declared(junk, 0, policy, &raw) != 0); // no policy id
    free(copy);
    free(buf);
}

/* Returns a copy of the segment buf with one more policy id field (field 5)
   of these len bytes appended; protobuf-c takes the last one (caller frees). */
static uint8_t *s_with_id_bytes(const uint8_t *buf, size_t size, const char *id, size_t len,
                                size_t *out_size)
{
    uint8_t *out = malloc(size + 2 + len);
    memcpy(out, buf, size);
    out[size] = (5 << 3) | 2;
    out[size + 1] = (uint8_t)len; // every case below is under 128 bytes
    memcpy(out + size + 2, id, len);
    *out_size = size + 2 + len;
    return out;
}

/* The decoder and the broker's look at what a segment declares take or
   refuse a policy id alike, by vl_policy_id_valid, over the field's bytes
   as sent: a NUL inside is not a shorter id. */
static void test_one_id_rule(void)
{
    char nul_id[124];
    memset(nul_id, 'x', sizeof nul_id);
    memcpy(nul_id, "abc", 4); // "abc", a NUL, then 120 more bytes
    char long_id[64];
    memset(long_id, 'p', sizeof long_id);
    struct {
        const char *id;
        size_t len;
        int valid;
    } cases[] = {
        {nul_id, sizeof nul_id, 0}, {"abc", 3, 1},    {"a b", 3, 0},  {"~x", 2, 0},
        {long_id, 63, 1},           {long_id, 64, 0}, {"p\tq", 3, 0}, {"", 0, 0},
    };
    size_t size;
    uint32_t h;
    uint8_t *buf = s_segment("default", &size, &h);
    VL_CHECK(buf);
    static uint8_t arrays[1 << 16];
    vl_limits_t lim = vl_limits_default();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        uint8_t *msg = s_with_id_bytes(buf, size, cases[i].id, cases[i].len, &n);
        VL_CHECK(vl_policy_id_valid(cases[i].id, cases[i].len) == cases[i].valid);
        vl_segment_t head, seg;
        vl_reason_t want = cases[i].valid ? VL_OK : VL_EPOLICY;
        VL_CHECK(vl_segment_peek(msg, n, &lim, &head) == want);
        VL_CHECK(vl_segment_decode(msg, n, &lim, &seg, arrays, sizeof arrays) == want);
        char policy[VL_POLICY_ID_MAX];
        uint64_t raw;
        VL_CHECK(vl_inspect_declared(msg, n, policy, &raw) == (cases[i].valid ? 0 : -1));
        if (cases[i].valid)
            VL_CHECK(strlen(policy) == cases[i].len && strcmp(policy, seg.policy_id) == 0);
        free(msg);
    }
    free(buf);
}

int main(void)
{
    VL_RUN(test_declared);
    VL_RUN(test_hostile_bytes);
    VL_RUN(test_one_id_rule);
    return VL_DONE();
}
