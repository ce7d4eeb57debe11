/*  vl_codec_test: round trips, and every kind of hostile input refused with
    its own reason. A bad message is made by encoding a good one, editing one
    field of its unpacked protobuf and packing it again, so each case carries
    exactly one fault; value faults are encoded directly (encoders do not
    judge values, receivers do). */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

#define S_T       32 // horizon of the standard segment
#define S_D       4  // its obs_dim, as obs_shape [2, 2]
#define S_ACTIONS 3

/* Returns the standard segment filled from seed: random obs, actions,
   rewards and log-probs, episodes ending after t = 9 and t = 25. Its
   arrays live in one malloc'd block at seg.obs (caller frees). */
static vl_segment_t s_segment_new(uint64_t seed)
{
    vl_segment_t seg = {.actor_id = 7,
                        .env_id = 3,
                        .seq = 42,
                        .policy_id = "cartpole-a2c",
                        .policy_version = 9,
                        .horizon = S_T,
                        .obs_ndim = 2,
                        .obs_shape = {2, 2},
                        .obs_dim = S_D,
                        .num_actions = S_ACTIONS,
                        .send_ns = 1700000000123456789LL,
                        .n_episodes = 2};
    vl_segment_bind(&seg, calloc(1, vl_segment_arrays_size(S_T, S_D)));
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < (S_T + 1) * S_D; i++)
        seg.obs[i] = (float)(2 * vl_rng_uniform(&rng) - 1);
    for (size_t t = 0; t < S_T; t++) {
        seg.actions[t] = (int32_t)vl_rng_below(&rng, S_ACTIONS);
        seg.rewards[t] = (float)vl_rng_uniform(&rng);
        seg.dones[t] = (t == 9 || t == 25) ? 1.0f : 0.0f;
        seg.logp[t] = (float)(-3 * vl_rng_uniform(&rng));
    }
    seg.episode_returns[0] = 12.5f;
    seg.episode_returns[1] = -3.25f;
    seg.episode_lengths[0] = 10;
    seg.episode_lengths[1] = 16;
    return seg;
}

/* Encodes seg and decodes it with default limits into fresh storage of
   the standard size. Returns the reason, VL_EREASONS if encoding failed. */
static vl_reason_t s_round_trip(const vl_segment_t *seg)
{
    uint8_t *buf;
    size_t size;
    if (vl_segment_encode(seg, &buf, &size) != 0)
        return VL_EREASONS;
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    vl_segment_t out;
    vl_reason_t reason = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
    free(arrays);
    free(buf);
    return reason;
}

typedef void (*s_segment_edit_t)(Volley__Segment *msg);

/* Encodes the standard segment, applies edit to its unpacked message and
   packs it again into a new buffer (caller frees). Fields edit points
   elsewhere are restored before the message is freed, so they may point to
   static storage. */
static uint8_t *s_edited(s_segment_edit_t edit, size_t *size)
{
    vl_segment_t seg = s_segment_new(7);
    uint8_t *buf;
    if (vl_segment_encode(&seg, &buf, size) != 0)
        abort();
    free(seg.obs);
    Volley__Segment *msg = volley__segment__unpack(NULL, *size, buf);
    free(buf);
    Volley__Segment saved = *msg;
    edit(msg);
    buf = malloc(protobuf_c_message_get_packed_size(&msg->base));
    *size = protobuf_c_message_pack(&msg->base, buf);
    *msg = saved;
    volley__segment__free_unpacked(msg, NULL);
    return buf;
}

/* Decodes the edited standard segment with default limits and room for
   the standard shape. Returns the decoder's reason. */
static vl_reason_t s_decode_edited(s_segment_edit_t edit)
{
    size_t size;
    uint8_t *buf = s_edited(edit, &size);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    vl_segment_t out;
    vl_reason_t reason = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
    free(arrays);
    free(buf);
    return reason;
}

/* Returns the peek reason for the edited standard segment. */
static vl_reason_t s_peek_edited(s_segment_edit_t edit)
{
    size_t size;
    uint8_t *buf = s_edited(edit, &size);
    vl_limits_t lim = vl_limits_default();
    vl_segment_t out;
    vl_reason_t reason = vl_segment_peek(buf, size, &lim, &out);
    free(buf);
    return reason;
}

static void s_edit_nothing(Volley__Segment *msg)
{
    (void)msg;
}

static void test_reason_str(void)
{
    for (int i = 0; i < VL_EREASONS; i++) {
        VL_CHECK(strcmp(vl_reason_str((vl_reason_t)i), "unknown") != 0);
        for (int j = 0; j < i; j++)
            VL_CHECK(strcmp(vl_reason_str((vl_reason_t)i), vl_reason_str((vl_reason_t)j)) != 0);
    }
    VL_CHECK(strcmp(vl_reason_str(VL_EPROTO), "malformed protobuf") == 0);
    VL_CHECK(strcmp(vl_reason_str(VL_EREASONS), "unknown") == 0);
    VL_CHECK(strcmp(vl_reason_str((vl_reason_t)-1), "unknown") == 0);
}

static void test_limits_default(void)
{
    vl_limits_t lim = vl_limits_default();
    VL_CHECK(lim.max_horizon == 4096);
    VL_CHECK(lim.max_obs_dim == 1u << 16);
    VL_CHECK(lim.max_actions == 1024);
    VL_CHECK(lim.max_tensors == 64);
    VL_CHECK(lim.max_tensor_elems == 1u << 24);
}

static void test_float_is_finite(void)
{
    VL_CHECK(vl_float_is_finite(0.0f));
    VL_CHECK(vl_float_is_finite(-1e30f));
    VL_CHECK(vl_float_is_finite(3.4028235e38f));
    VL_CHECK(vl_float_is_finite(1e-45f));
    VL_CHECK(!vl_float_is_finite(NAN));
    VL_CHECK(!vl_float_is_finite(-NAN));
    VL_CHECK(!vl_float_is_finite(INFINITY));
    VL_CHECK(!vl_float_is_finite(-INFINITY));
}

static void test_arrays_size_and_bind(void)
{
    VL_CHECK(vl_segment_arrays_size(S_T, S_D) == 4 * ((S_T + 1) * S_D + 4 * S_T) + 8 * S_T);
    VL_CHECK(vl_segment_arrays_size(4096, 65536) == 4ull * (4097ull * 65536 + 4 * 4096) + 8 * 4096);
    VL_CHECK(vl_segment_arrays_size(UINT32_MAX, UINT32_MAX) == SIZE_MAX);
    vl_segment_t seg = {.horizon = 2, .obs_dim = 3};
    float base[64];
    vl_segment_bind(&seg, base);
    VL_CHECK((float *)seg.actions == base + 9);
    VL_CHECK(seg.rewards == base + 11 && seg.dones == base + 13 && seg.logp == base + 15);
    VL_CHECK(seg.episode_returns == base + 17);
    VL_CHECK((float *)seg.episode_lengths == base + 19);
}

static void test_segment_round_trip(void)
{
    vl_segment_t seg = s_segment_new(1);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == 0);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    vl_segment_t out;
    vl_reason_t reason = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
    free(buf);
    size_t payload = (size_t)((char *)seg.episode_returns - (char *)seg.obs);
    int same = reason == VL_OK && out.obs == arrays && memcmp(out.obs, seg.obs, payload) == 0 &&
               memcmp(out.episode_returns, seg.episode_returns, 2 * sizeof(float)) == 0 &&
               memcmp(out.episode_lengths, seg.episode_lengths, 2 * sizeof(uint32_t)) == 0;
    free(arrays);
    free(seg.obs);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(same);
    VL_CHECK(out.actor_id == 7 && out.env_id == 3 && out.seq == 42);
    VL_CHECK(strcmp(out.policy_id, "cartpole-a2c") == 0 && out.policy_version == 9);
    VL_CHECK(out.horizon == S_T && out.obs_ndim == 2 && out.obs_dim == S_D);
    VL_CHECK(out.obs_shape[0] == 2 && out.obs_shape[1] == 2);
    VL_CHECK(out.num_actions == S_ACTIONS && out.send_ns == 1700000000123456789LL);
    VL_CHECK(out.n_episodes == 2);
}

static void test_segment_encode_unbound_arrays(void)
{
    vl_segment_t seg = s_segment_new(2);
    uint8_t *bound_buf, *loose_buf;
    size_t bound_size, loose_size;
    VL_CHECK(vl_segment_encode(&seg, &bound_buf, &bound_size) == 0);
    vl_segment_t loose = seg; // same values, each array its own block
    float rewards[S_T];
    int32_t actions[S_T];
    memcpy(rewards, seg.rewards, sizeof rewards);
    memcpy(actions, seg.actions, sizeof actions);
    loose.rewards = rewards;
    loose.actions = actions;
    int rc = vl_segment_encode(&loose, &loose_buf, &loose_size);
    free(seg.obs);
    VL_CHECK(rc == 0);
    int same = loose_size == bound_size && memcmp(loose_buf, bound_buf, bound_size) == 0;
    free(bound_buf);
    free(loose_buf);
    VL_CHECK(same);
}

static void test_segment_peek(void)
{
    size_t size;
    uint8_t *buf = s_edited(s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    vl_segment_t out;
    memset(&out, 0xab, sizeof out);
    vl_reason_t reason = vl_segment_peek(buf, size, &lim, &out);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(out.horizon == S_T && out.obs_dim == S_D && out.num_actions == S_ACTIONS);
    VL_CHECK(strcmp(out.policy_id, "cartpole-a2c") == 0 && out.seq == 42);
    VL_CHECK(out.obs == NULL && out.episode_returns == NULL);
}

static void test_segment_encode_rejects_bad_input(void)
{
    vl_segment_t good = s_segment_new(3), seg;
    uint8_t *buf = NULL;
    size_t size;
    seg = good, seg.horizon = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_dim = 5; // disagrees with obs_shape
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_shape[1] = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_ndim = 5;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.num_actions = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.n_episodes = S_T + 1;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.policy_id[0] = '\0';
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.logp = NULL;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    VL_CHECK(vl_segment_encode(NULL, &buf, &size) == -1);
    free(good.obs);
    VL_CHECK(buf == NULL);
}

/* protobuf has no end marker: a cut that lands exactly where a trailing
   optional field begins leaves a complete, smaller message. For the
   standard segment that happens twice (before the episode fields, and
   before send_ns); such a prefix decodes with the lost fields at zero.
   Every other cut must be refused, most as malformed protobuf. */
static void test_truncated_segment(void)
{
    size_t size;
    uint8_t *buf = s_edited(s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    size_t n_ok = 0, n_proto = 0, n_bad_ok = 0;
    for (size_t cut = 0; cut < size; cut++) {
        uint8_t *prefix = malloc(cut ? cut : 1); // exact size, so ASan sees overreads
        memcpy(prefix, buf, cut);
        vl_segment_t out;
        vl_reason_t reason = vl_segment_decode(prefix, cut, &lim, &out, arrays, cap);
        free(prefix);
        n_proto += reason == VL_EPROTO;
        n_ok += reason == VL_OK;
        n_bad_ok += reason == VL_OK && out.n_episodes != 0 && out.send_ns != 0;
    }
    free(arrays);
    free(buf);
    VL_CHECK(n_ok == 2 && n_bad_ok == 0);
    VL_CHECK(n_proto > size / 2);
}

static void test_garbage_bytes(void)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 12345);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    int n_ok = 0, n_out_of_range = 0;
    for (int i = 0; i < 20000; i++) {
        size_t size = vl_rng_below(&rng, 300);
        uint8_t *buf = malloc(size ? size : 1);
        for (size_t j = 0; j < size; j++)
            buf[j] = (uint8_t)vl_rng_next(&rng);
        vl_segment_t seg;
        vl_reason_t reason = vl_segment_decode(buf, size, &lim, &seg, arrays, cap);
        n_ok += reason == VL_OK;
        n_out_of_range += reason >= VL_EREASONS;
        vl_weights_t *w = NULL;
        n_ok += vl_weights_decode(buf, size, &lim, &w) == VL_OK;
        vl_weights_destroy(&w);
        char id[VL_POLICY_ID_MAX];
        n_ok += vl_hello_decode(buf, size, id) == VL_OK;
        free(buf);
    }
    free(arrays);
    VL_CHECK(n_ok == 0 && n_out_of_range == 0);
}

/* Returns 1 if an accepted segment keeps the decoder's promises: shape in
   the limits, finite floats, actions in range, done flags 0 or 1, log-probs
   <= 0, episodes no more than steps. */
static int s_keeps_contract(const vl_segment_t *seg, const vl_limits_t *lim)
{
    size_t T = seg->horizon;
    if (T == 0 || T > lim->max_horizon || seg->obs_dim > lim->max_obs_dim ||
        seg->num_actions > lim->max_actions || seg->n_episodes > T)
        return 0;
    for (size_t i = 0; i < (T + 1) * seg->obs_dim; i++)
        if (!vl_float_is_finite(seg->obs[i]))
            return 0;
    for (size_t t = 0; t < T; t++)
        if (seg->actions[t] < 0 || seg->actions[t] >= (int32_t)seg->num_actions ||
            (seg->dones[t] != 0.0f && seg->dones[t] != 1.0f) || !(seg->logp[t] <= 0.0f) ||
            !vl_float_is_finite(seg->rewards[t]))
            return 0;
    return 1;
}

/* Flips random bits of a valid segment: a flip in a literal obs byte or in
   seq is harmless, so any reason may come back, but nothing may crash or
   read out of bounds, and whatever is accepted must keep the contract. */
static void test_bit_flipped_segment(void)
{
    size_t size;
    uint8_t *good = s_edited(s_edit_nothing, &size);
    vl_rng_t rng;
    vl_rng_seed(&rng, 99);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    uint8_t *buf = malloc(size);
    int n_refused = 0, n_broken = 0;
    for (int i = 0; i < 5000; i++) {
        memcpy(buf, good, size);
        for (int k = 0; k < 3; k++)
            buf[vl_rng_below(&rng, (uint32_t)size)] ^= (uint8_t)(1u << vl_rng_below(&rng, 8));
        vl_segment_t seg;
        vl_reason_t reason = vl_segment_decode(buf, size, &lim, &seg, arrays, cap);
        n_refused += reason != VL_OK;
        n_broken += reason == VL_OK && !s_keeps_contract(&seg, &lim);
    }
    free(buf);
    free(arrays);
    free(good);
    VL_CHECK(n_broken == 0);
    VL_CHECK(n_refused > 500); // actions, dones and the header do get hit
}

static void s_edit_schema(Volley__Segment *msg)
{
    msg->schema = VL_SCHEMA_VERSION + 1;
}

static void test_wrong_schema(void)
{
    VL_CHECK(s_decode_edited(s_edit_nothing) == VL_OK);
    VL_CHECK(s_decode_edited(s_edit_schema) == VL_EVERSION);
    VL_CHECK(s_peek_edited(s_edit_schema) == VL_EVERSION);
}

static void s_edit_horizon_big(Volley__Segment *msg)
{
    msg->horizon = 4097;
}

static void s_edit_horizon_huge(Volley__Segment *msg)
{
    msg->horizon = UINT32_MAX;
}

static void test_horizon_over_limit(void)
{
    VL_CHECK(s_decode_edited(s_edit_horizon_big) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_horizon_huge) == VL_ETOOBIG);
    VL_CHECK(s_peek_edited(s_edit_horizon_big) == VL_ETOOBIG);
}

static uint32_t s_shape_arg[8];

/* Sets obs_shape to the first n entries of s_shape_arg. */
static void s_set_shape(Volley__Segment *msg, size_t n)
{
    msg->obs_shape = s_shape_arg;
    msg->n_obs_shape = n;
}

static void s_edit_shape_2(Volley__Segment *msg)
{
    s_set_shape(msg, 2);
}

static void s_edit_shape_4(Volley__Segment *msg)
{
    s_set_shape(msg, 4);
}

static void s_edit_shape_5(Volley__Segment *msg)
{
    s_set_shape(msg, 5);
}

/* 65536 x 65536 is 2^32 (0 in 32 bits); four of them 2^64 (0 in 64 bits). */
static void test_obs_shape_over_limit(void)
{
    for (int i = 0; i < 8; i++)
        s_shape_arg[i] = 65536;
    VL_CHECK(s_decode_edited(s_edit_shape_2) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_shape_4) == VL_ETOOBIG);
    s_shape_arg[0] = 256, s_shape_arg[1] = 257; // one over 1 << 16
    VL_CHECK(s_decode_edited(s_edit_shape_2) == VL_ETOOBIG);
    for (int i = 0; i < 8; i++)
        s_shape_arg[i] = 1;
    VL_CHECK(s_decode_edited(s_edit_shape_5) == VL_ETOOBIG); // rank over VL_OBS_NDIM_MAX
    s_shape_arg[0] = 2, s_shape_arg[1] = 2;                  // the real shape, as a control
    VL_CHECK(s_decode_edited(s_edit_shape_2) == VL_OK);
}

static void s_edit_horizon_zero(Volley__Segment *msg)
{
    msg->horizon = 0;
}

static void s_edit_rank_zero(Volley__Segment *msg)
{
    msg->n_obs_shape = 0;
}

static void s_edit_actions_zero(Volley__Segment *msg)
{
    msg->num_actions = 0;
}

/* Zero sizes are VL_ESHAPE, not VL_ETOOBIG (see vl_codec.c), even when
   another dimension is over the limit: zero dims are checked first. */
static void test_zero_sizes(void)
{
    VL_CHECK(s_decode_edited(s_edit_horizon_zero) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_rank_zero) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_actions_zero) == VL_ESHAPE);
    s_shape_arg[0] = 1u << 20, s_shape_arg[1] = 0;
    VL_CHECK(s_decode_edited(s_edit_shape_2) == VL_ESHAPE);
}

static void s_edit_actions_big(Volley__Segment *msg)
{
    msg->num_actions = 1025;
}

static void test_num_actions_over_limit(void)
{
    VL_CHECK(s_decode_edited(s_edit_actions_big) == VL_ETOOBIG);
}

static void s_edit_raw_plus4(Volley__Segment *msg)
{
    msg->raw_size += 4;
}

static void s_edit_raw_minus4(Volley__Segment *msg)
{
    msg->raw_size -= 4;
}

static void test_raw_size_inconsistent(void)
{
    VL_CHECK(s_decode_edited(s_edit_raw_plus4) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_raw_minus4) == VL_ESHAPE);
    VL_CHECK(s_peek_edited(s_edit_raw_plus4) == VL_ESHAPE);
}

/* A ~1 KB message claiming a 1 GB payload (the largest shape the limits
   allow, raw_size consistent with it). */
static void s_edit_bomb(Volley__Segment *msg)
{
    s_shape_arg[0] = 1u << 16;
    s_set_shape(msg, 1);
    msg->horizon = 4096;
    msg->raw_size = (uint32_t)(4 * (4097ull * 65536 + 4 * 4096));
}

static void s_edit_bomb_raw_only(Volley__Segment *msg)
{
    msg->raw_size = UINT32_MAX;
}

/* The segment decoder never allocates: a bomb whose shape is within the
   limits is refused because the caller's storage is too small, and one
   whose raw_size disagrees with its shape because of that. */
static void test_lz4_bomb(void)
{
    VL_CHECK(s_peek_edited(s_edit_bomb) == VL_OK);
    VL_CHECK(s_decode_edited(s_edit_bomb) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_bomb_raw_only) == VL_ESHAPE);
}

static uint8_t s_block_arg[4096];

/* Pads the payload to one byte over LZ4_compressBound(raw_size). */
static void s_edit_payload_over_bound(Volley__Segment *msg)
{
    size_t len = (size_t)LZ4_compressBound((int)msg->raw_size) + 1;
    memset(s_block_arg, 0, sizeof s_block_arg);
    memcpy(s_block_arg, msg->payload.data, msg->payload.len);
    msg->payload.data = s_block_arg;
    msg->payload.len = len;
}

static void test_payload_over_compress_bound(void)
{
    VL_CHECK(s_decode_edited(s_edit_payload_over_bound) == VL_ELZ4);
    VL_CHECK(s_peek_edited(s_edit_payload_over_bound) == VL_ELZ4);
}

static void s_edit_block_cut(Volley__Segment *msg)
{
    msg->payload.len -= 1;
}

static void s_edit_block_garbage(Volley__Segment *msg)
{
    memset(msg->payload.data, 0xff, msg->payload.len);
}

static void s_edit_block_empty(Volley__Segment *msg)
{
    msg->payload.len = 0;
}

/* A valid block of 4 bytes fewer than raw_size: decompresses short. */
static void s_edit_block_short(Volley__Segment *msg)
{
    static uint8_t raw[4096];
    int n = LZ4_compress_default((const char *)raw, (char *)s_block_arg, (int)msg->raw_size - 4,
                                 (int)sizeof s_block_arg);
    msg->payload.data = s_block_arg;
    msg->payload.len = (size_t)n;
}

static void test_corrupt_lz4(void)
{
    VL_CHECK(s_decode_edited(s_edit_block_cut) == VL_ELZ4);
    VL_CHECK(s_decode_edited(s_edit_block_garbage) == VL_ELZ4);
    VL_CHECK(s_decode_edited(s_edit_block_empty) == VL_ELZ4);
    VL_CHECK(s_decode_edited(s_edit_block_short) == VL_ELZ4);
}

static void test_nan_reward(void)
{
    vl_segment_t seg = s_segment_new(4);
    VL_CHECK(s_round_trip(&seg) == VL_OK);
    seg.rewards[S_T - 1] = NAN;
    vl_reason_t reason = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(reason == VL_ENONFINITE);
}

/* +Inf in the bootstrap observation, the last float of obs. */
static void test_inf_observation(void)
{
    vl_segment_t seg = s_segment_new(5);
    seg.obs[(S_T + 1) * S_D - 1] = INFINITY;
    vl_reason_t reason = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(reason == VL_ENONFINITE);
}

static void test_nonfinite_logp_and_return(void)
{
    vl_segment_t seg = s_segment_new(6);
    seg.logp[0] = -INFINITY;
    vl_reason_t logp_reason = s_round_trip(&seg);
    seg.logp[0] = -1.0f;
    seg.episode_returns[1] = NAN;
    vl_reason_t return_reason = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(logp_reason == VL_ENONFINITE);
    VL_CHECK(return_reason == VL_ENONFINITE);
}

static void test_action_out_of_range(void)
{
    vl_segment_t seg = s_segment_new(7);
    seg.actions[5] = -1;
    vl_reason_t negative = s_round_trip(&seg);
    seg.actions[5] = S_ACTIONS;
    vl_reason_t too_big = s_round_trip(&seg);
    seg.actions[5] = S_ACTIONS - 1;
    vl_reason_t last_valid = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(negative == VL_EACTION);
    VL_CHECK(too_big == VL_EACTION);
    VL_CHECK(last_valid == VL_OK);
}

static void test_done_not_binary(void)
{
    vl_segment_t seg = s_segment_new(8);
    seg.dones[3] = 0.5f;
    vl_reason_t half = s_round_trip(&seg);
    seg.dones[3] = NAN;
    vl_reason_t nan = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(half == VL_EDONE);
    VL_CHECK(nan == VL_EDONE);
}

static void test_logp_positive(void)
{
    vl_segment_t seg = s_segment_new(9);
    seg.logp[4] = 0.0f; // log-prob of a sure action: allowed
    vl_reason_t zero = s_round_trip(&seg);
    seg.logp[4] = 1e-6f;
    vl_reason_t positive = s_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(zero == VL_OK);
    VL_CHECK(positive == VL_EDONE);
}

static void s_edit_one_length(Volley__Segment *msg)
{
    msg->n_episode_lengths = 1;
}

/* 33 episodes in a 32-step segment, counts equal. */
static void s_edit_episodes_over_horizon(Volley__Segment *msg)
{
    static float returns[S_T + 1];
    static uint32_t lengths[S_T + 1];
    msg->episode_returns = returns;
    msg->episode_lengths = lengths;
    msg->n_episode_returns = msg->n_episode_lengths = S_T + 1;
}

static void test_episode_counts_mismatched(void)
{
    VL_CHECK(s_decode_edited(s_edit_one_length) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_episodes_over_horizon) == VL_ESHAPE);
}

static void test_arrays_cap_too_small(void)
{
    size_t size;
    uint8_t *buf = s_edited(s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_segment_arrays_size(S_T, S_D);
    void *arrays = malloc(cap);
    vl_segment_t out;
    vl_reason_t short_by_one = vl_segment_decode(buf, size, &lim, &out, arrays, cap - 1);
    vl_reason_t no_storage = vl_segment_decode(buf, size, &lim, &out, NULL, 0);
    vl_reason_t exact = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
    free(arrays);
    free(buf);
    VL_CHECK(short_by_one == VL_ETOOBIG);
    VL_CHECK(no_storage == VL_ETOOBIG);
    VL_CHECK(exact == VL_OK);
}

static char *s_policy_arg;

static void s_edit_policy(Volley__Segment *msg)
{
    msg->policy_id = s_policy_arg;
}

/* Returns the reason for the standard segment with policy id `id`. */
static vl_reason_t s_decode_with_policy(const char *id)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", id);
    s_policy_arg = copy;
    return s_decode_edited(s_edit_policy);
}

static void test_bad_policy_id(void)
{
    char id[VL_POLICY_ID_MAX + 1];
    memset(id, 'p', sizeof id);
    id[VL_POLICY_ID_MAX - 1] = '\0'; // 63 bytes: the longest allowed
    VL_CHECK(s_decode_with_policy(id) == VL_OK);
    id[VL_POLICY_ID_MAX - 1] = 'p', id[VL_POLICY_ID_MAX] = '\0'; // 64 bytes
    VL_CHECK(s_decode_with_policy(id) == VL_EPOLICY);
    VL_CHECK(s_decode_with_policy("") == VL_EPOLICY);
    VL_CHECK(s_decode_with_policy("cart\npole") == VL_EPOLICY);
    VL_CHECK(s_decode_with_policy("cart\x7fpole") == VL_EPOLICY);
    s_policy_arg = "cart\xc3\xa9pole"; // valid UTF-8, not printable ASCII
    VL_CHECK(s_peek_edited(s_edit_policy) == VL_EPOLICY);
}

/* Two tensors: "w1" 3 x 5 and the rank-1 "b1" of 5, filled from seed.
   Their data lives in `storage` (at least 20 floats). */
static void s_tensors_fill(vl_tensor_t t[2], float *storage, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (int i = 0; i < 20; i++)
        storage[i] = (float)(vl_rng_uniform(&rng) - 0.5);
    memset(t, 0, 2 * sizeof *t);
    snprintf(t[0].name, sizeof t[0].name, "w1");
    t[0].ndim = 2, t[0].rows = 3, t[0].cols = 5, t[0].data = storage;
    snprintf(t[1].name, sizeof t[1].name, "b1");
    t[1].ndim = 1, t[1].rows = 5, t[1].cols = 1, t[1].data = storage + 15;
}

static void test_weights_round_trip(void)
{
    vl_tensor_t t[2];
    float storage[20];
    s_tensors_fill(t, storage, 11);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_weights_encode("cartpole-a2c", 17, t, 2, &buf, &size) == 0);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    vl_reason_t reason = vl_weights_decode(buf, size, &lim, &w);
    free(buf);
    VL_CHECK(reason == VL_OK && w != NULL);
    int same = strcmp(w->policy_id, "cartpole-a2c") == 0 && w->version == 17 && w->n_tensors == 2 &&
               strcmp(w->tensors[0].name, "w1") == 0 && w->tensors[0].ndim == 2 &&
               w->tensors[0].rows == 3 && w->tensors[0].cols == 5 &&
               memcmp(w->tensors[0].data, storage, 15 * sizeof(float)) == 0 &&
               strcmp(w->tensors[1].name, "b1") == 0 && w->tensors[1].ndim == 1 &&
               w->tensors[1].rows == 5 && w->tensors[1].cols == 1 &&
               memcmp(w->tensors[1].data, storage + 15, 5 * sizeof(float)) == 0;
    vl_weights_destroy(&w);
    VL_CHECK(same);
    VL_CHECK(w == NULL);
    vl_weights_destroy(&w); // twice is safe
    vl_weights_destroy(NULL);
}

static void test_weights_encode_rejects_bad_input(void)
{
    vl_tensor_t t[2], bad;
    float storage[20];
    s_tensors_fill(t, storage, 12);
    uint8_t *buf = NULL;
    size_t size;
    bad = t[0], bad.ndim = 3;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.rows = 0;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[1], bad.cols = 2; // rank 1 with two columns
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.name[0] = '\0';
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.data = NULL;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    VL_CHECK(vl_weights_encode("", 1, t, 2, &buf, &size) == -1);
    VL_CHECK(vl_weights_encode("p", 1, NULL, 2, &buf, &size) == -1);
    VL_CHECK(buf == NULL);
}

/* Returns the decode reason of weights encoded from t (VL_EREASONS if
   encoding failed). */
static vl_reason_t s_weights_round_trip(const vl_tensor_t *t, uint32_t n)
{
    uint8_t *buf;
    size_t size;
    if (vl_weights_encode("cartpole-a2c", 1, t, n, &buf, &size) != 0)
        return VL_EREASONS;
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = (vl_weights_t *)&lim; // must come back NULL on failure
    vl_reason_t reason = vl_weights_decode(buf, size, &lim, &w);
    free(buf);
    if (reason != VL_OK)
        return w == NULL ? reason : VL_EREASONS;
    vl_weights_destroy(&w);
    return reason;
}

static void test_weights_nonfinite(void)
{
    vl_tensor_t t[2];
    float storage[20];
    s_tensors_fill(t, storage, 13);
    VL_CHECK(s_weights_round_trip(t, 2) == VL_OK);
    storage[19] = NAN; // last float of the last tensor
    VL_CHECK(s_weights_round_trip(t, 2) == VL_ENONFINITE);
    storage[19] = 0.0f, storage[14] = -INFINITY; // last float of the 3 x 5 tensor
    VL_CHECK(s_weights_round_trip(t, 2) == VL_ENONFINITE);
}

typedef void (*s_weights_edit_t)(Volley__Weights *msg);

/* Encodes the standard tensors, applies edit to the unpacked message
   (fields of it and of tensors[0] are restored before it is freed), packs
   and decodes it with default limits. Returns the reason; *out must be
   NULL on failure, else VL_EREASONS is returned. */
static vl_reason_t s_weights_decode_edited(s_weights_edit_t edit)
{
    vl_tensor_t t[2];
    float storage[20];
    s_tensors_fill(t, storage, 14);
    uint8_t *buf;
    size_t size;
    if (vl_weights_encode("cartpole-a2c", 3, t, 2, &buf, &size) != 0)
        return VL_EREASONS;
    Volley__Weights *msg = volley__weights__unpack(NULL, size, buf);
    free(buf);
    Volley__Weights saved = *msg;
    Volley__Tensor saved_tensor = *msg->tensors[0];
    edit(msg);
    buf = malloc(protobuf_c_message_get_packed_size(&msg->base));
    size = protobuf_c_message_pack(&msg->base, buf);
    *saved.tensors[0] = saved_tensor;
    *msg = saved;
    volley__weights__free_unpacked(msg, NULL);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    vl_reason_t reason = vl_weights_decode(buf, size, &lim, &w);
    free(buf);
    if (reason != VL_OK && w != NULL)
        reason = VL_EREASONS;
    vl_weights_destroy(&w);
    return reason;
}

static void s_edit_weights_nothing(Volley__Weights *msg)
{
    (void)msg;
}

static uint32_t s_tensor_shape_arg[3];

static void s_edit_tensor_shape(Volley__Weights *msg)
{
    msg->tensors[0]->shape = s_tensor_shape_arg;
    msg->tensors[0]->n_shape = 2;
}

/* (1 << 24) + 1 elements with a consistent raw_size; 65536 x 65536 is
   2^32 elements, 0 if multiplied in 32 bits. */
static void s_edit_tensor_too_big(Volley__Weights *msg)
{
    s_edit_tensor_shape(msg);
    msg->tensors[0]->raw_size = 4u * s_tensor_shape_arg[0] * s_tensor_shape_arg[1];
}

static void test_weights_tensor_too_big(void)
{
    VL_CHECK(s_weights_decode_edited(s_edit_weights_nothing) == VL_OK);
    s_tensor_shape_arg[0] = (1u << 24) + 1, s_tensor_shape_arg[1] = 1;
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ETOOBIG);
    s_tensor_shape_arg[0] = 65536, s_tensor_shape_arg[1] = 65536;
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ETOOBIG);
}

/* 1 << 24 floats (the limit) claimed by a block of ~100 bytes: refused as
   a bomb by LZ4's 255x expansion bound, before the 64 MB is allocated. */
static void test_weights_lz4_bomb(void)
{
    s_tensor_shape_arg[0] = 1u << 12, s_tensor_shape_arg[1] = 1u << 12;
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ELZ4);
}

static void s_edit_too_many_tensors(Volley__Weights *msg)
{
    static Volley__Tensor *many[65];
    for (int i = 0; i < 65; i++)
        many[i] = msg->tensors[i % 2];
    msg->tensors = many;
    msg->n_tensors = 65;
}

static void s_edit_64_tensors(Volley__Weights *msg)
{
    s_edit_too_many_tensors(msg);
    msg->n_tensors = 64;
}

static void test_weights_too_many_tensors(void)
{
    VL_CHECK(s_weights_decode_edited(s_edit_too_many_tensors) == VL_ETOOBIG);
    VL_CHECK(s_weights_decode_edited(s_edit_64_tensors) == VL_OK);
}

static void s_edit_weights_schema(Volley__Weights *msg)
{
    msg->schema = 0;
}

static void s_edit_weights_policy(Volley__Weights *msg)
{
    msg->policy_id = "";
}

static void s_edit_tensor_name(Volley__Weights *msg)
{
    msg->tensors[0]->name = "0123456789abcdef0123456789abcdef"; // 32 bytes
}

/* 15 x 1 x 1: as many floats as the real 3 x 5, so only the rank is wrong. */
static void s_edit_tensor_rank3(Volley__Weights *msg)
{
    s_tensor_shape_arg[0] = 15, s_tensor_shape_arg[1] = 1, s_tensor_shape_arg[2] = 1;
    s_edit_tensor_shape(msg);
    msg->tensors[0]->n_shape = 3;
}

static void s_edit_tensor_raw_size(Volley__Weights *msg)
{
    msg->tensors[0]->raw_size += 4;
}

static void s_edit_tensor_block_cut(Volley__Weights *msg)
{
    msg->tensors[1]->payload.len -= 1;
}

static void test_weights_bad_header(void)
{
    VL_CHECK(s_weights_decode_edited(s_edit_weights_schema) == VL_EVERSION);
    VL_CHECK(s_weights_decode_edited(s_edit_weights_policy) == VL_EPOLICY);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_name) == VL_EPOLICY);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_rank3) == VL_ESHAPE);
    s_tensor_shape_arg[0] = 3, s_tensor_shape_arg[1] = 0;
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_shape) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_raw_size) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_block_cut) == VL_ELZ4);
}

static void test_hello_round_trip(void)
{
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_hello_encode("cartpole-a2c", &buf, &size) == 0);
    char id[VL_POLICY_ID_MAX] = "";
    vl_reason_t reason = vl_hello_decode(buf, size, id);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(id, "cartpole-a2c") == 0);
    VL_CHECK(vl_hello_encode("bad id\n", &buf, &size) == -1);
}

/* Returns the decode reason of a hand-built Hello. */
static vl_reason_t s_hello_decode_raw(uint32_t schema, char *policy_id)
{
    Volley__Hello msg = VOLLEY__HELLO__INIT;
    msg.schema = schema;
    msg.policy_id = policy_id;
    uint8_t buf[256];
    size_t size = volley__hello__pack(&msg, buf);
    char id[VL_POLICY_ID_MAX];
    return vl_hello_decode(buf, size, id);
}

static void test_hello_refused(void)
{
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "ok") == VL_OK);
    VL_CHECK(s_hello_decode_raw(2, "ok") == VL_EVERSION);
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "") == VL_EPOLICY);
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "tab\there") == VL_EPOLICY);
    uint8_t garbage[] = {0x0a, 0x40, 'x'}; // a string that claims 64 bytes
    char id[VL_POLICY_ID_MAX];
    VL_CHECK(vl_hello_decode(garbage, sizeof garbage, id) == VL_EPROTO);
}

/* Returns stats with every field set to a distinct value. */
static vl_stats_t s_stats_sample(void)
{
    vl_stats_t s = {.policy_id = "cartpole-a2c",
                    .version = 5,
                    .env_steps = 123456,
                    .episodes = 789,
                    .mean_return = 195.5f,
                    .window = 100,
                    .lag_mean = 1.25f,
                    .lag_max = 4,
                    .policy_loss = -0.03f,
                    .value_loss = 0.7f,
                    .entropy = 0.66f,
                    .segments_trained = 3000,
                    .segments_dropped = 12,
                    .uptime_s = 3600.125};
    return s;
}

static void test_stats_round_trip(void)
{
    vl_stats_t in = s_stats_sample(), out;
    memset(&out, 0, sizeof out);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_stats_encode(&in, &buf, &size) == 0);
    vl_reason_t reason = vl_stats_decode(buf, size, &out);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(out.policy_id, in.policy_id) == 0 && out.version == in.version);
    VL_CHECK(out.env_steps == in.env_steps && out.episodes == in.episodes);
    VL_CHECK(out.mean_return == in.mean_return && out.window == in.window);
    VL_CHECK(out.lag_mean == in.lag_mean && out.lag_max == in.lag_max);
    VL_CHECK(out.policy_loss == in.policy_loss && out.value_loss == in.value_loss);
    VL_CHECK(out.entropy == in.entropy && out.uptime_s == in.uptime_s);
    VL_CHECK(out.segments_trained == in.segments_trained);
    VL_CHECK(out.segments_dropped == in.segments_dropped);
}

/* Returns the decode reason of encoded stats s. */
static vl_reason_t s_stats_round_trip(const vl_stats_t *s)
{
    uint8_t *buf;
    size_t size;
    if (vl_stats_encode(s, &buf, &size) != 0)
        return VL_EREASONS;
    vl_stats_t out;
    vl_reason_t reason = vl_stats_decode(buf, size, &out);
    free(buf);
    return reason;
}

static void test_stats_nonfinite(void)
{
    vl_stats_t s = s_stats_sample();
    s.entropy = NAN;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.mean_return = -INFINITY;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.uptime_s = (double)INFINITY;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.policy_id[0] = '\0';
    VL_CHECK(s_stats_round_trip(&s) == VL_EREASONS); // the encoder refuses it
}

int main(void)
{
    VL_RUN(test_reason_str);
    VL_RUN(test_limits_default);
    VL_RUN(test_float_is_finite);
    VL_RUN(test_arrays_size_and_bind);
    VL_RUN(test_segment_round_trip);
    VL_RUN(test_segment_encode_unbound_arrays);
    VL_RUN(test_segment_peek);
    VL_RUN(test_segment_encode_rejects_bad_input);
    VL_RUN(test_truncated_segment);
    VL_RUN(test_garbage_bytes);
    VL_RUN(test_bit_flipped_segment);
    VL_RUN(test_wrong_schema);
    VL_RUN(test_horizon_over_limit);
    VL_RUN(test_obs_shape_over_limit);
    VL_RUN(test_zero_sizes);
    VL_RUN(test_num_actions_over_limit);
    VL_RUN(test_raw_size_inconsistent);
    VL_RUN(test_lz4_bomb);
    VL_RUN(test_payload_over_compress_bound);
    VL_RUN(test_corrupt_lz4);
    VL_RUN(test_nan_reward);
    VL_RUN(test_inf_observation);
    VL_RUN(test_nonfinite_logp_and_return);
    VL_RUN(test_action_out_of_range);
    VL_RUN(test_done_not_binary);
    VL_RUN(test_logp_positive);
    VL_RUN(test_episode_counts_mismatched);
    VL_RUN(test_arrays_cap_too_small);
    VL_RUN(test_bad_policy_id);
    VL_RUN(test_weights_round_trip);
    VL_RUN(test_weights_encode_rejects_bad_input);
    VL_RUN(test_weights_nonfinite);
    VL_RUN(test_weights_tensor_too_big);
    VL_RUN(test_weights_lz4_bomb);
    VL_RUN(test_weights_too_many_tensors);
    VL_RUN(test_weights_bad_header);
    VL_RUN(test_hello_round_trip);
    VL_RUN(test_hello_refused);
    VL_RUN(test_stats_round_trip);
    VL_RUN(test_stats_nonfinite);
    return VL_DONE();
}
