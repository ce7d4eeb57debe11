/*  vl_segment_state_test: segments carrying a recurrent policy's state (the
    floats before step 0, after the final observations in the payload) and
    specs declaring its size. The state comes back bit for bit, truncations
    included; a NaN or an infinity in it is refused; a size over
    VL_SEGMENT_STATE_MAX is refused by the encoder and, declared by a
    hostile sender, by the decoder before any storage is asked for; a
    declared size the payload does not carry is a shape fault; a segment
    of another state size than its policy's is named so. The segments
    observe one f32 field [3] over discrete(2). */
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "vl_segment_probe.h"
#include "vl_spec.h"
#include "volley.pb-c.h"

#define S_T     8  // horizon
#define S_D     3  // floats per observation
#define S_STATE 12 // floats of the state: an lstm(6)'s h and c

/* Returns a segment of horizon S_T with a state of state_size floats from
   seed (values of every magnitude, a negative zero and a subnormal among
   them), an episode ending at t = 2 and one truncated at t = 5 (with its
   final observation). Its arrays are one calloc'd block at seg.obs (caller
   frees). */
static vl_segment_t s_segment(uint32_t state_size, uint64_t seed)
{
    vl_segment_t seg = {.actor_id = 2, .env_id = 5, .seq = 11, .policy_id = "mem", .horizon = S_T};
    seg.action = vl_action_discrete(2);
    seg.policy_version = 3;
    seg.state_size = state_size;
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    void *arrays = calloc(1, vl_segment_arrays_size(S_T, &spec, 1, state_size));
    if (vl_segment_set_spec(&seg, &spec) != 0 || !arrays)
        abort();
    vl_segment_bind(&seg, arrays);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    float obs[(S_T + 1) * S_D], final[S_D];
    for (size_t i = 0; i < (S_T + 1) * S_D; i++)
        obs[i] = (float)vl_rng_normal(&rng);
    for (size_t i = 0; i < S_D; i++)
        final[i] = (float)vl_rng_normal(&rng);
    vl_obs_to_rows(&spec, S_T + 1, obs, seg.obs);
    vl_obs_to_rows(&spec, 1, final, seg.final_obs);
    for (size_t t = 0; t < S_T; t++) {
        seg.actions[t] = (float)vl_rng_below(&rng, 2);
        seg.rewards[t] = (float)vl_rng_uniform(&rng);
        seg.logp[t] = (float)(-vl_rng_uniform(&rng));
        seg.dones[t] = t == 2 || t == 5 ? 1.0f : 0.0f;
        seg.truncated[t] = t == 5;
    }
    seg.n_truncated = 1;
    seg.n_episodes = 1;
    seg.episode_returns[0] = 3.0f;
    seg.episode_lengths[0] = 3;
    for (uint32_t k = 0; k < state_size; k++)
        seg.state[k] = (float)(vl_rng_normal(&rng) * pow(10.0, (double)(k % 7) - 3.0));
    if (state_size > 2) {
        seg.state[0] = -0.0f;
        seg.state[1] = 1e-40f; // subnormal
    }
    return seg;
}

/* The state comes back bit for bit beside a truncation's final observation,
   and the steps and final observation around it are untouched; a
   memoryless segment has state size 0. */
static void test_state_round_trips_exactly(void)
{
    vl_segment_t seg = s_segment(S_STATE, 1), out;
    void *arrays;
    vl_reason_t r = vl_probe_encode_decode(&seg, &out, &arrays);
    int same = r == VL_OK && out.state_size == S_STATE &&
               memcmp(out.state, seg.state, S_STATE * sizeof(float)) == 0 && out.n_truncated == 1 &&
               memcmp(out.final_obs, seg.final_obs, seg.obs_row_bytes) == 0 &&
               memcmp(out.dones, seg.dones, S_T * sizeof(float)) == 0 && out.truncated[5] == 1 &&
               memcmp(out.obs, seg.obs, (S_T + 1) * (size_t)seg.obs_row_bytes) == 0;
    int negative_zero = r == VL_OK && signbit(out.state[0]);
    free(arrays);
    free(seg.obs);
    VL_CHECK(r == VL_OK);
    VL_CHECK(same && negative_zero);
    seg = s_segment(0, 2);
    r = vl_probe_encode_decode(&seg, &out, &arrays);
    int empty = r == VL_OK && out.state_size == 0;
    free(arrays);
    free(seg.obs);
    VL_CHECK(empty);
}

/* A NaN or an infinity anywhere in the state is refused as non-finite
   (an encoder does not judge values: the receiver does). */
static void test_non_finite_state_is_refused(void)
{
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        vl_segment_t seg = s_segment(S_STATE, 3);
        seg.state[(uint32_t)(4 * i + 3) % S_STATE] = bad[i];
        vl_reason_t r = vl_probe_round_trip(&seg);
        free(seg.obs);
        VL_CHECK(r == VL_ENONFINITE);
    }
}

/* Returns the packed bytes of seg with its header's state_size replaced
   (the payload left as it was), in a new buffer (caller frees), or NULL. */
static uint8_t *s_with_state_size(const vl_segment_t *seg, uint32_t state_size, size_t *size)
{
    uint8_t *buf, *edited = NULL;
    size_t n;
    if (vl_segment_encode(seg, &buf, &n) != 0)
        return NULL;
    Volley__Segment *msg = volley__segment__unpack(NULL, n, buf);
    free(buf);
    if (!msg)
        return NULL;
    msg->state_size = state_size;
    *size = protobuf_c_message_get_packed_size(&msg->base);
    if ((edited = malloc(*size)))
        protobuf_c_message_pack(&msg->base, edited);
    volley__segment__free_unpacked(msg, NULL);
    return edited;
}

/* Over VL_SEGMENT_STATE_MAX: no storage size for it, the encoder refuses
   it, and a hostile header declaring it is refused as too big before any
   storage is asked for (the decoder is given none). */
static void test_state_over_the_maximum_is_too_big(void)
{
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    VL_CHECK(vl_segment_arrays_size(S_T, &spec, 1, VL_SEGMENT_STATE_MAX + 1) == SIZE_MAX);
    VL_CHECK(vl_segment_arrays_size(S_T, &spec, 1, VL_SEGMENT_STATE_MAX) != SIZE_MAX);
    vl_segment_t seg = s_segment(S_STATE, 4);
    seg.state_size = VL_SEGMENT_STATE_MAX + 1; // the encoder reads the size, not the storage
    uint8_t *buf = NULL;
    size_t size = 0;
    int refused = vl_segment_encode(&seg, &buf, &size) != 0;
    seg.state_size = S_STATE;
    free(buf);
    buf = s_with_state_size(&seg, VL_SEGMENT_STATE_MAX + 1, &size);
    free(seg.obs);
    VL_CHECK(refused && buf);
    vl_limits_t lim = vl_limits_default();
    vl_segment_t out;
    vl_reason_t r = vl_segment_decode(buf, size, &lim, &out, NULL, 0);
    free(buf);
    VL_CHECK(r == VL_ETOOBIG);
}

/* A header whose state size disagrees with the payload (more or fewer
   floats than it carries) is a shape fault, never a read past it. */
static void test_state_size_the_payload_lacks_is_refused(void)
{
    vl_segment_t seg = s_segment(S_STATE, 5);
    const uint32_t lies[3] = {S_STATE + 1, S_STATE - 1, 0};
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, &seg.obs_spec, 1, VL_SEGMENT_STATE_MAX);
    vl_reason_t r[3];
    for (int i = 0; i < 3; i++) {
        size_t size;
        uint8_t *buf = s_with_state_size(&seg, lies[i], &size);
        void *arrays = malloc(cap);
        vl_segment_t out;
        r[i] = buf && arrays ? vl_segment_decode(buf, size, &lim, &out, arrays, cap) : VL_EREASONS;
        free(buf);
        free(arrays);
    }
    free(seg.obs);
    VL_CHECK(r[0] == VL_ESHAPE && r[1] == VL_ESHAPE && r[2] == VL_ESHAPE);
}

/* Returns the spec of the segments above, policy "mem", with state_size. */
static vl_spec_t s_spec(uint32_t state_size)
{
    vl_spec_t s = {.policy_id = "mem", .horizon = S_T, .hidden = 64, .state_size = state_size};
    s.action = vl_action_discrete(2);
    s.obs_spec = vl_obs_spec_flat(S_D);
    strcpy(s.model, "linear(64) lstm(6)");
    return s;
}

/* A segment whose state size is not its policy's is refused with both
   sizes named; one that matches passes. */
static void test_check_segment_names_the_state_size(void)
{
    vl_segment_t seg = s_segment(S_STATE, 6);
    vl_spec_t spec = s_spec(S_STATE), other = s_spec(8), none = s_spec(0);
    char why[VL_SPEC_REASON_MAX] = "";
    int fits = vl_spec_check_segment(&spec, &seg, why, sizeof why) == 0;
    int refused = vl_spec_check_segment(&other, &seg, why, sizeof why) == 1;
    int named = strcmp(why, "state size 12, policy 'mem' has 8") == 0;
    int memoryless = vl_spec_check_segment(&none, &seg, why, sizeof why) == 1 &&
                     strstr(why, "state size 12") != NULL;
    free(seg.obs);
    VL_CHECK(fits && refused);
    if (!named)
        fprintf(stderr, "reason: %s\n", why);
    VL_CHECK(named && memoryless);
}

/* Spec.state_size survives the wire; a spec over the maximum is not
   encoded, and a hostile one declaring it is refused as too big; two
   specs differing only in it name it. */
static void test_spec_state_size_round_trips(void)
{
    vl_spec_t spec = s_spec(128), back;
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_spec_encode(&spec, &buf, &size) == 0);
    vl_limits_t lim = vl_limits_default();
    vl_reason_t r = vl_spec_decode(buf, size, &lim, &back);
    free(buf);
    VL_CHECK(r == VL_OK && back.state_size == 128 && strcmp(back.model, spec.model) == 0);
    spec.state_size = VL_SEGMENT_STATE_MAX + 1;
    VL_CHECK(vl_spec_encode(&spec, &buf, &size) != 0);
    Volley__Spec msg;
    Volley__ObsField fields[VL_OBS_FIELDS_MAX], *ptrs[VL_OBS_FIELDS_MAX];
    Volley__ActionSpace action;
    vl_spec_to_msg(&spec, &msg, fields, ptrs, &action);
    uint8_t packed[1024];
    VL_CHECK(protobuf_c_message_get_packed_size(&msg.base) <= sizeof packed);
    size = protobuf_c_message_pack(&msg.base, packed);
    VL_CHECK(vl_spec_decode(packed, size, &lim, &back) == VL_ETOOBIG);
    vl_spec_t a = s_spec(12), b = s_spec(0);
    char why[VL_SPEC_REASON_MAX] = "";
    VL_CHECK(vl_spec_diff(&a, &b, "this actor", why, sizeof why) == 1);
    VL_CHECK(strstr(why, "state size") && strstr(why, "12") && strstr(why, "this actor 0"));
}

int main(void)
{
    VL_RUN(test_state_round_trips_exactly);
    VL_RUN(test_non_finite_state_is_refused);
    VL_RUN(test_state_over_the_maximum_is_too_big);
    VL_RUN(test_state_size_the_payload_lacks_is_refused);
    VL_RUN(test_check_segment_names_the_state_size);
    VL_RUN(test_spec_state_size_round_trips);
    return VL_DONE();
}
