/*  vl_segment_test: segment round trips, and every kind of hostile input refused with
    its own reason. A bad message is made by encoding a good one, editing one
    field of its unpacked protobuf (or one byte of its decompressed payload)
    and packing it again, so each case carries exactly one fault; value
    faults are encoded directly (encoders do not judge values, receivers do).
    Two segments serve most cases: the standard one (one f32 [2, 2] field)
    and a pixel-like one (u2 [16, 16], u1 [32], f32 [2]). */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "vl_segment_probe.h"
#include "volley.pb-c.h"

#define S_T          32 // horizon of the standard and the pixel-like segment
#define S_D          4  // the standard segment's obs_dim: one f32 field [2, 2]
#define S_WIRE       16 // its packed bytes per observation
#define S_ACTIONS    3
#define S_PIX_D      290 // the pixel-like segment's obs_dim: 256 + 32 + 2
#define S_PIX_WIRE   76  // its packed bytes per observation: 64 + 4 + 8
#define S_STEP_BYTES 13  // payload bytes a step besides obs: action (one value), reward, logp, done

/* Appends a field to spec. */
static void s_add(vl_obs_spec_t *spec, uint32_t encoding, uint32_t ndim, const uint32_t *dims)
{
    vl_obs_field_t *f = &spec->fields[spec->n_fields++];
    f->encoding = encoding;
    f->ndim = ndim;
    memcpy(f->shape, dims, ndim * sizeof *dims);
}

/* Returns the standard segment's spec: one f32 field [2, 2]. */
static vl_obs_spec_t s_std_spec(void)
{
    vl_obs_spec_t spec = {0};
    s_add(&spec, VL_OBS_F32, 2, (const uint32_t[]){2, 2});
    return spec;
}

/* Returns the pixel-like spec: a 2-bit screen, a bit vector, two floats. */
static vl_obs_spec_t s_pix_spec(void)
{
    vl_obs_spec_t spec = {0};
    s_add(&spec, VL_OBS_U2, 2, (const uint32_t[]){16, 16});
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){32});
    s_add(&spec, VL_OBS_F32, 1, (const uint32_t[]){2});
    return spec;
}

/* Returns the values in a field. */
static size_t s_count(const vl_obs_field_t *f)
{
    size_t n = 1;
    for (uint32_t d = 0; d < f->ndim; d++)
        n *= f->shape[d];
    return n;
}

/* Returns a random value the encoding carries exactly: an integer in its
   range, a float in [-1, 1) for f32. */
static float s_valid_value(vl_rng_t *rng, uint32_t encoding)
{
    switch (encoding) {
    case VL_OBS_U8:
        return (float)vl_rng_below(rng, 256);
    case VL_OBS_U2:
        return (float)vl_rng_below(rng, 4);
    case VL_OBS_U1:
        return (float)vl_rng_below(rng, 2);
    default:
        return (float)(2 * vl_rng_uniform(rng) - 1);
    }
}

/* Returns a segment of horizon T observing spec, filled from seed: obs
   valid for their encodings, random actions, rewards and log-probs,
   episodes ending after t = 9 and t = 25 (when T reaches them) and two
   finished episodes. Its arrays live in one calloc'd block at seg.obs
   (caller frees). */
static vl_segment_t s_segment_make(const vl_obs_spec_t *spec, uint32_t T, uint64_t seed)
{
    vl_segment_t seg = {.actor_id = 7,
                        .env_id = 3,
                        .seq = 42,
                        .policy_id = "cartpole-a2c",
                        .policy_version = 9,
                        .horizon = T,
                        .action = vl_action_discrete(S_ACTIONS),
                        .send_ns = 1700000000123456789LL,
                        .n_episodes = 2};
    void *arrays = calloc(1, vl_segment_arrays_size(T, spec, seg.action.dims, 0));
    if (vl_segment_set_spec(&seg, spec) != 0 || !arrays)
        abort();
    vl_segment_bind(&seg, arrays);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    float *values = malloc(((size_t)T + 1) * seg.obs_dim * sizeof(float)), *o = values;
    if (!values)
        abort();
    for (size_t k = 0; k <= T; k++)
        for (uint32_t i = 0; i < spec->n_fields; i++)
            for (size_t j = 0; j < s_count(&spec->fields[i]); j++)
                *o++ = s_valid_value(&rng, spec->fields[i].encoding);
    vl_obs_to_rows(spec, (size_t)T + 1, values, seg.obs);
    free(values);
    for (size_t t = 0; t < T; t++) {
        seg.actions[t] = (float)vl_rng_below(&rng, S_ACTIONS);
        seg.rewards[t] = (float)vl_rng_uniform(&rng);
        seg.dones[t] = t % 16 == 9 ? 1.0f : 0.0f;
        seg.logp[t] = (float)(-3 * vl_rng_uniform(&rng));
    }
    seg.episode_returns[0] = 12.5f;
    seg.episode_returns[1] = -3.25f;
    seg.episode_lengths[0] = 10;
    seg.episode_lengths[1] = 16;
    return seg;
}

/* Returns the standard segment filled from seed (caller frees seg.obs). */
static vl_segment_t s_segment_new(uint64_t seed)
{
    vl_obs_spec_t spec = s_std_spec();
    return s_segment_make(&spec, S_T, seed);
}

/* Returns the pixel-like segment filled from seed (caller frees seg.obs). */
static vl_segment_t s_pixel_new(uint64_t seed)
{
    vl_obs_spec_t spec = s_pix_spec();
    return s_segment_make(&spec, S_T, seed);
}

/* Decodes buf with lim into *out, its arrays in a new block of exactly cap
   bytes (so ASan sees any write past them) at *arrays (caller frees).
   Returns the decoder's reason. */
static vl_reason_t s_decode_alloc(const uint8_t *buf, size_t size, const vl_limits_t *lim,
                                  size_t cap, vl_segment_t *out, void **arrays)
{
    *arrays = malloc(cap ? cap : 1);
    return vl_segment_decode(buf, size, lim, out, *arrays, cap);
}

/* Returns the reason for decoding buf with lim into cap fresh bytes. */
static vl_reason_t s_decode(const uint8_t *buf, size_t size, const vl_limits_t *lim, size_t cap)
{
    vl_segment_t out;
    void *arrays;
    vl_reason_t reason = s_decode_alloc(buf, size, lim, cap, &out, &arrays);
    free(arrays);
    return reason;
}

/* Returns 1 if two segments' observations are the same floats. */
static int s_same_obs(const vl_segment_t *a, const vl_segment_t *b)
{
    size_t n = ((size_t)a->horizon + 1) * a->obs_dim;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    int same = x && y;
    if (same) {
        vl_obs_from_rows(&a->obs_spec, a->horizon + 1, a->obs, x);
        vl_obs_from_rows(&b->obs_spec, b->horizon + 1, b->obs, y);
        same = memcmp(x, y, n * sizeof(float)) == 0;
    }
    free(x);
    free(y);
    return same;
}

/* Returns 1 if two segments have the same header and the same arrays. */
static int s_same_segment(const vl_segment_t *a, const vl_segment_t *b)
{
    size_t T = a->horizon, n = a->n_episodes, A = T * a->action.dims;
    return a->actor_id == b->actor_id && a->env_id == b->env_id && a->seq == b->seq &&
           strcmp(a->policy_id, b->policy_id) == 0 && a->policy_version == b->policy_version &&
           a->horizon == b->horizon && vl_obs_spec_equal(&a->obs_spec, &b->obs_spec) &&
           a->obs_dim == b->obs_dim && a->obs_wire_bytes == b->obs_wire_bytes &&
           vl_action_equal(&a->action, &b->action) && a->send_ns == b->send_ns &&
           a->n_episodes == b->n_episodes && a->obs_row_bytes == b->obs_row_bytes &&
           s_same_obs(a, b) && memcmp(a->actions, b->actions, A * sizeof(float)) == 0 &&
           memcmp(a->rewards, b->rewards, T * sizeof(float)) == 0 &&
           memcmp(a->dones, b->dones, T * sizeof(float)) == 0 &&
           memcmp(a->logp, b->logp, T * sizeof(float)) == 0 &&
           memcmp(a->episode_returns, b->episode_returns, n * sizeof(float)) == 0 &&
           memcmp(a->episode_lengths, b->episode_lengths, n * sizeof(uint32_t)) == 0;
}

typedef void (*s_segment_edit_t)(Volley__Segment *msg);

/* Encodes seg, applies edit to its unpacked message and packs it again
   into a new buffer (caller frees). Fields edit points elsewhere are
   restored before the message is freed, so they may point to static
   storage. */
static uint8_t *s_edited_from(const vl_segment_t *seg, s_segment_edit_t edit, size_t *size)
{
    uint8_t *buf;
    if (vl_segment_encode(seg, &buf, size) != 0)
        abort();
    Volley__Segment *msg = volley__segment__unpack(NULL, *size, buf);
    free(buf);
    if (!msg)
        abort();
    Volley__Segment saved = *msg;
    edit(msg);
    buf = malloc(protobuf_c_message_get_packed_size(&msg->base) + 1);
    *size = protobuf_c_message_pack(&msg->base, buf);
    *msg = saved;
    volley__segment__free_unpacked(msg, NULL);
    return buf;
}

/* The standard segment (seed 7), edited. */
static uint8_t *s_edited(s_segment_edit_t edit, size_t *size)
{
    vl_segment_t seg = s_segment_new(7);
    uint8_t *buf = s_edited_from(&seg, edit, size);
    free(seg.obs);
    return buf;
}

/* Decodes seg, edited, with default limits and room for seg's own shape.
   Returns the decoder's reason. */
static vl_reason_t s_decode_edited_from(const vl_segment_t *seg, s_segment_edit_t edit)
{
    size_t size;
    uint8_t *buf = s_edited_from(seg, edit, &size);
    vl_limits_t lim = vl_limits_default();
    vl_reason_t reason = s_decode(buf, size, &lim, vl_probe_cap(seg));
    free(buf);
    return reason;
}

/* Decodes the edited standard segment with default limits and room for
   the standard shape. Returns the decoder's reason. */
static vl_reason_t s_decode_edited(s_segment_edit_t edit)
{
    vl_segment_t seg = s_segment_new(7);
    vl_reason_t reason = s_decode_edited_from(&seg, edit);
    free(seg.obs);
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

/* Replacement observation fields: s_fields_reset, then s_field_add each,
   then s_edit_fields installs them in the message. */
#define S_FIELDS_ARG (VL_OBS_FIELDS_MAX + 2)
static Volley__ObsField s_field_msg[S_FIELDS_ARG];
static Volley__ObsField *s_field_ptr[S_FIELDS_ARG];
static uint32_t s_field_dims[S_FIELDS_ARG][8];
static size_t s_n_fields_arg;

static void s_fields_reset(void)
{
    s_n_fields_arg = 0;
}

/* Declares the next replacement field: any encoding number (bad ones
   included) and ndim (up to 8) dims. */
static void s_field_add(int encoding, size_t ndim, const uint32_t *dims)
{
    size_t i = s_n_fields_arg++;
    volley__obs_field__init(&s_field_msg[i]);
    s_field_msg[i].encoding = (Volley__Encoding)encoding;
    if (ndim > 0)
        memcpy(s_field_dims[i], dims, ndim * sizeof *dims);
    s_field_msg[i].shape = s_field_dims[i];
    s_field_msg[i].n_shape = ndim;
    s_field_ptr[i] = &s_field_msg[i];
}

static void s_edit_fields(Volley__Segment *msg)
{
    msg->obs_fields = s_field_ptr;
    msg->n_obs_fields = s_n_fields_arg;
}

static uint8_t s_block_arg[8192];

/* One byte of the decompressed payload to rewrite: s_edit_raw_byte puts
   s_raw_byte at s_raw_at and compresses the payload again. */
static size_t s_raw_at;
static uint8_t s_raw_byte;

static void s_edit_raw_byte(Volley__Segment *msg)
{
    static uint8_t raw[1 << 16];
    if (msg->raw_size > sizeof raw ||
        vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, raw) != VL_OK)
        abort();
    raw[s_raw_at] = s_raw_byte;
    int n = LZ4_compress_default((const char *)raw, (char *)s_block_arg, (int)msg->raw_size,
                                 (int)sizeof s_block_arg);
    if (n <= 0)
        abort();
    msg->payload.data = s_block_arg;
    msg->payload.len = (size_t)n;
}

/* Returns the payload offset of seg's done flag t (volley.proto's layout:
   obs, then float actions [T][dims], rewards and logp, then dones). */
static size_t s_dones_at(const vl_segment_t *seg, size_t t)
{
    size_t T = seg->horizon;
    return (T + 1) * seg->obs_wire_bytes + (8 + 4 * (size_t)seg->action.dims) * T + t;
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
    VL_CHECK(lim.max_raw_bytes == 64u << 20);
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
    VL_CHECK(vl_double_is_finite(1.7976931348623157e308) && vl_double_is_finite(-4.9e-324));
    VL_CHECK(!vl_double_is_finite((double)NAN) && !vl_double_is_finite(-(double)INFINITY));
}

static void test_wire_all_finite_and_names(void)
{
    float x[37];
    for (int i = 0; i < 37; i++)
        x[i] = (float)i - 18.5f;
    VL_CHECK(vl_wire_all_finite(x, 37) && vl_wire_all_finite(x, 0));
    x[36] = NAN; // the last one, past any vector width
    VL_CHECK(!vl_wire_all_finite(x, 37) && vl_wire_all_finite(x, 36));
    x[36] = 0.0f, x[0] = -INFINITY;
    VL_CHECK(!vl_wire_all_finite(x, 37));
    char name[VL_POLICY_ID_MAX + 1];
    memset(name, 'p', sizeof name);
    name[VL_POLICY_ID_MAX - 1] = '\0'; // 63 bytes
    VL_CHECK(vl_wire_name_ok(name, VL_POLICY_ID_MAX));
    name[VL_POLICY_ID_MAX - 1] = 'p', name[VL_POLICY_ID_MAX] = '\0'; // 64 bytes
    VL_CHECK(!vl_wire_name_ok(name, VL_POLICY_ID_MAX));
    VL_CHECK(vl_wire_name_ok("a b~", 8) && !vl_wire_name_ok("", 8) && !vl_wire_name_ok(NULL, 8));
    VL_CHECK(!vl_wire_name_ok("a\tb", 8) && !vl_wire_name_ok("\x7f", 8));
}

/* The checks every LZ4 block passes before anything is allocated: limit
   first, then agreement with the shape, then the block's own length. */
static void test_wire_check_block(void)
{
    vl_limits_t lim = vl_limits_default();
    size_t bound = (size_t)LZ4_compressBound(1000);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 1000, 100) == VL_OK);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 1001, 100) == VL_ESHAPE);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 999, 100) == VL_ESHAPE);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 1000, 0) == VL_ELZ4);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 1000, bound) == VL_OK);
    VL_CHECK(vl_wire_check_block(&lim, 1000, 1000, bound + 1) == VL_ELZ4);
    VL_CHECK(vl_wire_check_block(&lim, 255 * 100, 255 * 100, 100) == VL_OK); // 255:1 exactly
    VL_CHECK(vl_wire_check_block(&lim, 255 * 100 + 1, 255 * 100 + 1, 100) == VL_ELZ4);
    uint32_t max = lim.max_raw_bytes;
    VL_CHECK(vl_wire_check_block(&lim, max, max, 1u << 20) == VL_OK);
    VL_CHECK(vl_wire_check_block(&lim, (uint64_t)max + 1, max + 1, 1u << 20) == VL_ETOOBIG);
    VL_CHECK(vl_wire_check_block(&lim, (uint64_t)max + 1, 5, 100) == VL_ETOOBIG); // limit first
    VL_CHECK(vl_wire_check_block(&lim, UINT64_MAX, UINT32_MAX, 100) == VL_ETOOBIG);
    lim.max_raw_bytes = UINT32_MAX; // LZ4 itself cannot go past LZ4_MAX_INPUT_SIZE
    uint32_t over = (uint32_t)LZ4_MAX_INPUT_SIZE + 1;
    VL_CHECK(vl_wire_check_block(&lim, over, over, over) == VL_ETOOBIG);
}

static void test_set_spec(void)
{
    vl_segment_t seg;
    memset(&seg, 0, sizeof seg);
    vl_obs_spec_t pix = s_pix_spec(), bad = s_pix_spec();
    VL_CHECK(vl_segment_set_spec(&seg, &pix) == 0);
    VL_CHECK(vl_obs_spec_equal(&seg.obs_spec, &pix));
    VL_CHECK(seg.obs_dim == S_PIX_D && seg.obs_wire_bytes == S_PIX_WIRE);
    bad.fields[1].shape[0] = 0;
    VL_CHECK(vl_segment_set_spec(&seg, &bad) == -1);
    bad = s_pix_spec(), bad.fields[2].encoding = VL_OBS_ENCODINGS;
    VL_CHECK(vl_segment_set_spec(&seg, &bad) == -1);
    bad = vl_obs_spec_flat((1u << 16) + 1); // over the default limits
    VL_CHECK(vl_segment_set_spec(&seg, &bad) == -1);
}

/* Returns the bytes the contract asks for, before alignment, for rows of
   R bytes, packed observations of W bytes and A values per action: rows and
   final rows, float actions [T][A], rewards, dones and logp, T episode
   returns and lengths, truncation flags (4-aligned), and the largest
   payload (T final observations; 4 A + 9 bytes a step). */
static uint64_t s_arrays_need_a(uint64_t T, uint64_t R, uint64_t W, uint64_t A)
{
    return (2 * T + 1) * R + (20 + 4 * A) * T + ((T + 3) & ~3ull) + (2 * T + 1) * W +
           (9 + 4 * A) * T;
}

/* s_arrays_need_a for one value per action. */
static uint64_t s_arrays_need(uint64_t T, uint64_t R, uint64_t W)
{
    return s_arrays_need_a(T, R, W, 1);
}

/* Returns 1 if got is need rounded up for 4-byte alignment at most. */
static int s_size_ok(size_t got, uint64_t need)
{
    return got >= need && got <= need + 3;
}

static void test_arrays_size_and_bind(void)
{
    vl_obs_spec_t std = s_std_spec(), pix = s_pix_spec(), big = vl_obs_spec_flat(65536);
    // rows: 4 bytes a f32 value; the pixel row is 256 + 32 + 2 x 4 bytes
    VL_CHECK(
        s_size_ok(vl_segment_arrays_size(S_T, &std, 1, 0), s_arrays_need(S_T, 4 * S_D, S_WIRE)));
    VL_CHECK(
        s_size_ok(vl_segment_arrays_size(S_T, &pix, 1, 0), s_arrays_need(S_T, 296, S_PIX_WIRE)));
    VL_CHECK(s_size_ok(vl_segment_arrays_size(7, &pix, 1, 0), s_arrays_need(7, 296, S_PIX_WIRE)));
    VL_CHECK(s_size_ok(vl_segment_arrays_size(4096, &big, 1, 0),
                       s_arrays_need(4096, 4 * 65536, 4 * 65536)));
    // wider actions: 4 bytes a value in the arrays and in the payload
    VL_CHECK(s_size_ok(vl_segment_arrays_size(S_T, &std, 3, 0),
                       s_arrays_need_a(S_T, 4 * S_D, S_WIRE, 3)));
    VL_CHECK(s_size_ok(vl_segment_arrays_size(7, &pix, VL_ACTION_DIMS_MAX, 0),
                       s_arrays_need_a(7, 296, S_PIX_WIRE, VL_ACTION_DIMS_MAX)));
    VL_CHECK(vl_segment_arrays_size(S_T, &std, 0, 0) == SIZE_MAX);
    VL_CHECK(vl_segment_arrays_size(S_T, &std, VL_ACTION_DIMS_MAX + 1, 0) == SIZE_MAX);
    vl_obs_spec_t bad = s_std_spec();
    bad.fields[0].shape[1] = 0;
    VL_CHECK(vl_segment_arrays_size(S_T, &bad, 1, 0) == SIZE_MAX);
    VL_CHECK(vl_segment_arrays_size(S_T, NULL, 1, 0) == SIZE_MAX);
    vl_segment_t seg = {.horizon = 2, .obs_dim = 3, .obs_row_bytes = 12, .obs_wire_bytes = 5};
    seg.action = vl_action_discrete(2);
    float base[64];
    vl_segment_bind(&seg, base);
    VL_CHECK((float *)seg.obs == base && (float *)seg.actions == base + 9);
    VL_CHECK(seg.rewards == base + 11 && seg.dones == base + 13 && seg.logp == base + 15);
    VL_CHECK(seg.episode_returns == base + 17);
    VL_CHECK((float *)seg.episode_lengths == base + 19);
    VL_CHECK(seg.final_obs == (uint8_t *)(base + 21));
    VL_CHECK(seg.truncated == (uint8_t *)(base + 27));
    VL_CHECK(seg.wire == (uint8_t *)(base + 28));
    seg.action.kind = VL_ENV_BOX, seg.action.dims = 3; // actions [2][3]: 4 more floats
    vl_segment_bind(&seg, base);
    VL_CHECK((float *)seg.actions == base + 9 && seg.rewards == base + 15);
    VL_CHECK(seg.logp == base + 19 && seg.truncated == (uint8_t *)(base + 31));
    VL_CHECK(seg.wire == (uint8_t *)(base + 32));
}

/* Sizes past 64 bits are SIZE_MAX, never a wrapped small number: T and D
   both near 2^32; and a field whose packed size (2^32 bytes an observation)
   obs_wire_bytes cannot hold is refused or counted in full. */
static void test_arrays_size_overflow(void)
{
    vl_obs_spec_t flags = {0}, floats = {0}, wide = {0};
    s_add(&flags, VL_OBS_U1, 2, (const uint32_t[]){65535, 65537}); // 2^32 - 1 values
    s_add(&floats, VL_OBS_F32, 2, (const uint32_t[]){65535, 65537});
    VL_CHECK(vl_segment_arrays_size(UINT32_MAX, &flags, 1, 0) == SIZE_MAX);
    VL_CHECK(vl_segment_arrays_size(UINT32_MAX, &floats, 1, 0) == SIZE_MAX);
    if (sizeof(size_t) < 8)
        return;
    // 2^32 - 1 flags pack to 2^29 bytes, but their row (a byte each, 4-aligned) is 2^32
    VL_CHECK(vl_segment_arrays_size(1, &flags, 1, 0) == SIZE_MAX);
    vl_obs_spec_t fewer = {0};
    s_add(&fewer, VL_OBS_U1, 1, (const uint32_t[]){UINT32_MAX - 3});
    size_t got = vl_segment_arrays_size(1, &fewer, 1, 0);
    VL_CHECK(s_size_ok(got, s_arrays_need(1, UINT32_MAX - 3, 1u << 29)));
    s_add(&wide, VL_OBS_F32, 1, (const uint32_t[]){1u << 30});
    got = vl_segment_arrays_size(1, &wide, 1, 0);
    VL_CHECK(got == SIZE_MAX || s_size_ok(got, s_arrays_need(1, 1ull << 32, 1ull << 32)));
}

static void test_segment_round_trip(void)
{
    vl_segment_t seg = s_segment_new(1), out;
    void *arrays;
    vl_reason_t reason = vl_probe_encode_decode(&seg, &out, &arrays);
    int same = reason == VL_OK && out.obs == arrays && s_same_segment(&seg, &out);
    free(arrays);
    free(seg.obs);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(same);
    VL_CHECK(out.actor_id == 7 && out.env_id == 3 && out.seq == 42);
    VL_CHECK(strcmp(out.policy_id, "cartpole-a2c") == 0 && out.policy_version == 9);
    VL_CHECK(out.horizon == S_T && out.obs_dim == S_D && out.obs_wire_bytes == S_WIRE);
    VL_CHECK(out.obs_spec.n_fields == 1 && out.obs_spec.fields[0].encoding == VL_OBS_F32);
    VL_CHECK(out.obs_spec.fields[0].ndim == 2);
    VL_CHECK(out.obs_spec.fields[0].shape[0] == 2 && out.obs_spec.fields[0].shape[1] == 2);
    VL_CHECK(vl_action_equal(&out.action, &seg.action) && out.action.kind == VL_ENV_DISCRETE);
    VL_CHECK(out.action.dims == 1 && out.action.n[0] == S_ACTIONS);
    VL_CHECK(out.schema == VL_SCHEMA_VERSION && out.send_ns == 1700000000123456789LL);
    VL_CHECK(out.n_episodes == 2);
}

/* A 2-bit screen, a bit vector and two floats come back exactly. */
static void test_segment_round_trip_pixels(void)
{
    vl_segment_t seg = s_pixel_new(2), out;
    void *arrays;
    vl_reason_t reason = vl_probe_encode_decode(&seg, &out, &arrays);
    int same = reason == VL_OK && s_same_segment(&seg, &out);
    free(arrays);
    free(seg.obs);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(same);
    VL_CHECK(out.obs_dim == S_PIX_D && out.obs_wire_bytes == S_PIX_WIRE);
}

/* Fields that end in a partial byte, over an odd horizon; and the most
   fields a segment may declare. */
static void test_segment_round_trip_odd_fields(void)
{
    vl_obs_spec_t odd = {0}, eight = {0};
    s_add(&odd, VL_OBS_U2, 2, (const uint32_t[]){5, 3});
    s_add(&odd, VL_OBS_U1, 1, (const uint32_t[]){13});
    s_add(&odd, VL_OBS_U8, 1, (const uint32_t[]){3});
    for (uint32_t i = 0; i < VL_OBS_FIELDS_MAX; i++)
        s_add(&eight, i % VL_OBS_ENCODINGS, 2, (const uint32_t[]){i + 1, 3});
    vl_segment_t seg = s_segment_make(&odd, 7, 3), out;
    void *arrays;
    vl_reason_t reason = vl_probe_encode_decode(&seg, &out, &arrays);
    int same = reason == VL_OK && s_same_segment(&seg, &out);
    free(arrays);
    free(seg.obs);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(same);
    VL_CHECK(out.obs_dim == 31 && out.obs_wire_bytes == 4 + 2 + 3);
    seg = s_segment_make(&eight, 5, 4);
    reason = vl_probe_encode_decode(&seg, &out, &arrays);
    same = reason == VL_OK && s_same_segment(&seg, &out);
    free(arrays);
    free(seg.obs);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(same);
}

/* The decompressed payload is laid out as volley.proto says: packed obs,
   actions float32 [T][1], rewards, logp, dones one byte each; the fields
   are declared with the proto's encoding numbers, the space as an
   ActionSpace (and no num_actions, which schema 2 alone reads). */
static void test_segment_payload_layout(void)
{
    VL_CHECK((int)VOLLEY__ENCODING__F32 == VL_OBS_F32 && (int)VOLLEY__ENCODING__U8 == VL_OBS_U8);
    VL_CHECK((int)VOLLEY__ENCODING__U2 == VL_OBS_U2 && (int)VOLLEY__ENCODING__U1 == VL_OBS_U1);
    vl_segment_t seg = s_pixel_new(21);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == 0);
    Volley__Segment *msg = volley__segment__unpack(NULL, size, buf);
    free(buf);
    size_t T = S_T, obs_bytes = (T + 1) * S_PIX_WIRE, raw = obs_bytes + S_STEP_BYTES * T;
    uint8_t *want = malloc(raw), *got = malloc(raw);
    vl_obs_pack_rows(&seg.obs_spec, T + 1, seg.obs, want);
    memcpy(want + obs_bytes, seg.actions, 4 * T);
    memcpy(want + obs_bytes + 4 * T, seg.rewards, 4 * T);
    memcpy(want + obs_bytes + 8 * T, seg.logp, 4 * T);
    for (size_t t = 0; t < T; t++)
        want[obs_bytes + 12 * T + t] = (uint8_t)seg.dones[t];
    int header_ok = msg && msg->schema == VL_SCHEMA_VERSION && msg->raw_size == raw &&
                    msg->n_obs_fields == 3 && msg->num_actions == 0 && msg->action &&
                    msg->action->kind == VOLLEY__ACTION_KIND__DISCRETE && msg->action->n_n == 1 &&
                    msg->action->n[0] == S_ACTIONS && msg->action->n_low == 0 &&
                    msg->obs_fields[0]->encoding == VOLLEY__ENCODING__U2 &&
                    msg->obs_fields[0]->n_shape == 2 && msg->obs_fields[0]->shape[1] == 16 &&
                    msg->obs_fields[1]->encoding == VOLLEY__ENCODING__U1 &&
                    msg->obs_fields[1]->n_shape == 1 && msg->obs_fields[1]->shape[0] == 32 &&
                    msg->obs_fields[2]->encoding == VOLLEY__ENCODING__F32;
    int same =
        header_ok &&
        vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, got) == VL_OK &&
        memcmp(got, want, raw) == 0;
    volley__segment__free_unpacked(msg, NULL);
    free(want);
    free(got);
    free(seg.obs);
    VL_CHECK(header_ok);
    VL_CHECK(same);
}

static void test_segment_encode_unbound_arrays(void)
{
    vl_segment_t seg = s_segment_new(2);
    uint8_t *bound_buf, *loose_buf;
    size_t bound_size, loose_size;
    VL_CHECK(vl_segment_encode(&seg, &bound_buf, &bound_size) == 0);
    vl_segment_t loose = seg; // same values, each array its own block
    float rewards[S_T], actions[S_T];
    memcpy(rewards, seg.rewards, sizeof rewards);
    memcpy(actions, seg.actions, sizeof actions);
    loose.rewards = rewards;
    loose.actions = actions;
    loose.wire = NULL; // the encoder does not need the decoder's scratch
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
    VL_CHECK(out.horizon == S_T && out.obs_dim == S_D && out.action.n[0] == S_ACTIONS);
    VL_CHECK(out.action.kind == VL_ENV_DISCRETE && out.action.dims == 1);
    VL_CHECK(out.obs_wire_bytes == S_WIRE);
    VL_CHECK(strcmp(out.policy_id, "cartpole-a2c") == 0 && out.seq == 42);
    VL_CHECK(out.obs == NULL && out.episode_returns == NULL && out.wire == NULL);
    vl_segment_t pix = s_pixel_new(5);
    buf = s_edited_from(&pix, s_edit_nothing, &size);
    memset(&out, 0xab, sizeof out);
    reason = vl_segment_peek(buf, size, &lim, &out);
    free(buf);
    int same_spec = vl_obs_spec_equal(&out.obs_spec, &pix.obs_spec);
    free(pix.obs);
    VL_CHECK(reason == VL_OK && same_spec);
    VL_CHECK(out.obs_dim == S_PIX_D && out.obs_wire_bytes == S_PIX_WIRE);
    vl_obs_spec_t spec = s_pix_spec();
    VL_CHECK(vl_segment_arrays_size(out.horizon, &out.obs_spec, out.action.dims, 0) ==
             vl_segment_arrays_size(S_T, &spec, 1, 0));
}

static void test_segment_encode_rejects_bad_input(void)
{
    vl_segment_t good = s_segment_new(3), seg;
    uint8_t *buf = NULL;
    size_t size;
    seg = good, seg.horizon = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_dim = 5; // disagrees with obs_spec
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_wire_bytes = 4 * S_D + 1;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_spec.fields[0].shape[1] = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_spec.fields[0].ndim = VL_OBS_NDIM_MAX + 1;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_spec.fields[0].encoding = 7;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_spec.n_fields = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.obs_spec.n_fields = VL_OBS_FIELDS_MAX + 1;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.action.n[0] = 0;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.action.n[0] = 1; // one choice is no choice
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.action.dims = 2; // a discrete space is one value
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == -1);
    seg = good, seg.action.kind = VL_ENV_BOX + 1;
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

/* protobuf has no end marker: a cut that lands exactly where a field
   begins leaves a complete, smaller message. Every such prefix past the
   first observation field (after each field, then before raw_size, the
   payload, the episode returns, their lengths, send_ns and the action
   space) has lost the action space, which is written last and which schema
   3 requires, and the header checks it before the block: refused as
   VL_EACTION. Every other cut is refused too, most as malformed protobuf. */
static void s_check_truncated(const vl_segment_t *seg)
{
    size_t size;
    uint8_t *buf = s_edited_from(seg, s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_probe_cap(seg);
    void *arrays = malloc(cap);
    size_t n_ok = 0, n_proto = 0, n_action = 0, n_out_of_range = 0;
    for (size_t cut = 0; cut < size; cut++) {
        uint8_t *prefix = malloc(cut ? cut : 1); // exact size, so ASan sees overreads
        memcpy(prefix, buf, cut);
        vl_segment_t out;
        vl_reason_t reason = vl_segment_decode(prefix, cut, &lim, &out, arrays, cap);
        free(prefix);
        n_proto += reason == VL_EPROTO;
        n_ok += reason == VL_OK;
        n_action += reason == VL_EACTION;
        n_out_of_range += reason >= VL_EREASONS;
    }
    free(arrays);
    free(buf);
    VL_CHECK(n_ok == 0 && n_action == seg->obs_spec.n_fields + 5 && n_out_of_range == 0);
    VL_CHECK(n_proto > size / 2);
}

static void test_truncated_segment(void)
{
    vl_segment_t seg = s_segment_new(7), pix = s_pixel_new(7);
    s_check_truncated(&seg);
    if (!vl_test_case_failed)
        s_check_truncated(&pix);
    free(seg.obs);
    free(pix.obs);
}

static void test_garbage_bytes(void)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 12345);
    vl_limits_t lim = vl_limits_default();
    vl_obs_spec_t spec = s_std_spec();
    size_t cap = vl_segment_arrays_size(S_T, &spec, 1, 0);
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
        n_out_of_range += vl_segment_peek(buf, size, &lim, &seg) >= VL_EREASONS;
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

static int s_values_in_range(const vl_segment_t *seg, const float *o);

/* Returns 1 if every unpacked observation value is one its field can
   carry: finite for f32, an integer in range for the others. */
static int s_obs_in_range(const vl_segment_t *seg)
{
    size_t n = ((size_t)seg->horizon + 1) * seg->obs_dim;
    float *values = malloc(n * sizeof(float));
    if (!values)
        return 0;
    vl_obs_from_rows(&seg->obs_spec, seg->horizon + 1, seg->obs, values);
    int ok = s_values_in_range(seg, values);
    free(values);
    return ok;
}

/* Returns 1 if every observation value (floats) fits its field. */
static int s_values_in_range(const vl_segment_t *seg, const float *o)
{
    for (size_t k = 0; k <= seg->horizon; k++)
        for (uint32_t i = 0; i < seg->obs_spec.n_fields; i++) {
            const vl_obs_field_t *f = &seg->obs_spec.fields[i];
            float max = f->encoding == VL_OBS_U8 ? 255.0f : f->encoding == VL_OBS_U2 ? 3.0f : 1.0f;
            for (size_t j = s_count(f); j > 0; j--, o++)
                if (f->encoding == VL_OBS_F32 ? !vl_float_is_finite(*o)
                                              : !(*o >= 0 && *o <= max && *o == floorf(*o)))
                    return 0;
        }
    return 1;
}

/* Returns 1 if an accepted segment keeps the decoder's promises: a spec
   within the limits that agrees with obs_dim and obs_wire_bytes, obs each
   field can carry, a valid action space and actions in it (whole numbers
   below n[d]), done flags 0 or 1, finite rewards, log-probs <= 0 (a
   discrete space's), episodes no more than steps with finite returns. */
static int s_keeps_contract(const vl_segment_t *seg, const vl_limits_t *lim)
{
    size_t T = seg->horizon;
    uint32_t dim, wire;
    if (T == 0 || T > lim->max_horizon || vl_action_check(&seg->action, lim, NULL, 0) != 0 ||
        seg->n_episodes > T || vl_obs_spec_check(&seg->obs_spec, lim, &dim, &wire) != VL_OK ||
        dim != seg->obs_dim || wire != seg->obs_wire_bytes || !s_obs_in_range(seg))
        return 0;
    for (size_t i = 0; i < T * seg->action.dims; i++) {
        float a = seg->actions[i];
        uint32_t n = seg->action.n[i % seg->action.dims];
        if (!vl_action_is_box(&seg->action) && !(a >= 0 && a < (float)n && a == floorf(a)))
            return 0;
        if (!vl_float_is_finite(a))
            return 0;
    }
    for (size_t t = 0; t < T; t++)
        if ((seg->dones[t] != 0.0f && seg->dones[t] != 1.0f) ||
            (!vl_action_is_box(&seg->action) && !(seg->logp[t] <= 0.0f)) ||
            !vl_float_is_finite(seg->rewards[t]))
            return 0;
    return vl_wire_all_finite(seg->episode_returns, seg->n_episodes);
}

/* Flips random bits of seg encoded: a flip in a literal obs byte or in seq
   is harmless, so any reason may come back, but nothing may crash or read
   out of bounds, and whatever is accepted must keep the contract. Returns
   how many of n flipped messages were refused, or -1 if one accepted
   broke the contract. */
static int s_bit_flips(const vl_segment_t *seg, uint64_t seed, int n)
{
    size_t size;
    uint8_t *good = s_edited_from(seg, s_edit_nothing, &size);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_probe_cap(seg);
    void *arrays = malloc(cap);
    uint8_t *buf = malloc(size);
    int n_refused = 0, n_broken = 0;
    for (int i = 0; i < n; i++) {
        memcpy(buf, good, size);
        for (int k = 0; k < 3; k++)
            buf[vl_rng_below(&rng, (uint32_t)size)] ^= (uint8_t)(1u << vl_rng_below(&rng, 8));
        vl_segment_t out;
        vl_reason_t reason = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
        n_refused += reason != VL_OK;
        n_broken += reason == VL_OK && !s_keeps_contract(&out, &lim);
        n_broken += reason >= VL_EREASONS;
    }
    free(buf);
    free(arrays);
    free(good);
    return n_broken ? -1 : n_refused;
}

static void test_bit_flipped_segment(void)
{
    vl_segment_t seg = s_segment_new(7), pix = s_pixel_new(7);
    int std_refused = s_bit_flips(&seg, 99, 5000);
    int pix_refused = s_bit_flips(&pix, 98, 5000);
    free(seg.obs);
    free(pix.obs);
    VL_CHECK(std_refused > 500); // actions, dones and the header do get hit
    VL_CHECK(pix_refused > 250); // most of it is literal u2 screen, where any bits are valid
}

static void s_edit_schema_next(Volley__Segment *msg)
{
    msg->schema = VL_SCHEMA_VERSION + 1;
}

/* A sender that speaks schema 2 while writing schema 3's action space:
   schema 2 reads num_actions (0 here), so the message is refused. */
static void s_edit_schema_2(Volley__Segment *msg)
{
    msg->schema = 2;
}

/* Schema 1 declared observations by a single f32 shape. */
static void s_edit_schema_old(Volley__Segment *msg)
{
    msg->schema = 1;
}

static void s_edit_schema_missing(Volley__Segment *msg)
{
    msg->schema = 0;
}

static void test_wrong_schema(void)
{
    VL_CHECK(VL_SCHEMA_VERSION == 3 && VL_SCHEMA_OLDEST == 2);
    VL_CHECK(s_decode_edited(s_edit_nothing) == VL_OK);
    VL_CHECK(s_decode_edited(s_edit_schema_next) == VL_EVERSION);
    VL_CHECK(s_peek_edited(s_edit_schema_next) == VL_EVERSION);
    VL_CHECK(s_decode_edited(s_edit_schema_2) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_schema_old) == VL_EVERSION);
    VL_CHECK(s_decode_edited(s_edit_schema_missing) == VL_EVERSION);
    VL_CHECK(s_peek_edited(s_edit_schema_old) == VL_EVERSION);
}

static void s_edit_horizon_big(Volley__Segment *msg)
{
    msg->horizon = 4097;
}

static void s_edit_horizon_2_31(Volley__Segment *msg)
{
    msg->horizon = 1u << 31;
}

static void s_edit_horizon_huge(Volley__Segment *msg)
{
    msg->horizon = UINT32_MAX;
}

static void test_horizon_over_limit(void)
{
    VL_CHECK(s_decode_edited(s_edit_horizon_big) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_horizon_2_31) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_horizon_huge) == VL_ETOOBIG);
    VL_CHECK(s_peek_edited(s_edit_horizon_big) == VL_ETOOBIG);
    VL_CHECK(s_peek_edited(s_edit_horizon_2_31) == VL_ETOOBIG);
}

/* Returns the decode reason of the standard segment with the declared
   replacement fields (see s_field_add). */
static vl_reason_t s_decode_fields(void)
{
    return s_decode_edited(s_edit_fields);
}

/* 65536 x 65536 is 2^32 (0 in 32 bits); four of them 2^64 (0 in 64 bits). */
static void test_obs_fields_over_limit(void)
{
    const uint32_t big[8] = {65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536};
    const uint32_t ones[8] = {1, 1, 1, 1, 1, 2, 2, 1};
    s_fields_reset(), s_field_add(VL_OBS_F32, 2, (const uint32_t[]){2, 2}); // the real field
    VL_CHECK(s_decode_fields() == VL_OK);
    s_fields_reset(), s_field_add(VL_OBS_F32, 2, big);
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    s_fields_reset(), s_field_add(VL_OBS_U1, 4, big);
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    s_fields_reset(), s_field_add(VL_OBS_U8, 2, (const uint32_t[]){256, 257}); // one over 1 << 16
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    s_fields_reset(), s_field_add(VL_OBS_F32, 4, ones + 3); // rank 4: 1 x 1 x 2 x 2, same bytes
    VL_CHECK(s_decode_fields() == VL_OK);
    s_fields_reset(), s_field_add(VL_OBS_F32, 5, ones + 2); // rank over VL_OBS_NDIM_MAX
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    VL_CHECK(s_peek_edited(s_edit_fields) == VL_ETOOBIG);
    s_fields_reset(), s_field_add(VL_OBS_F32, 8, ones);
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    s_fields_reset(), s_field_add(VL_OBS_F32, 1, (const uint32_t[]){32768}); // the sum is over
    s_field_add(VL_OBS_U1, 1, (const uint32_t[]){32769});
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
}

/* Up to VL_OBS_FIELDS_MAX fields pass the count check (then disagree with
   raw_size); one more is too big. */
static void test_too_many_fields(void)
{
    s_fields_reset();
    for (int i = 0; i < VL_OBS_FIELDS_MAX; i++)
        s_field_add(VL_OBS_U1, 1, (const uint32_t[]){1});
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    s_field_add(VL_OBS_U1, 1, (const uint32_t[]){1});
    VL_CHECK(s_decode_fields() == VL_ETOOBIG);
    VL_CHECK(s_peek_edited(s_edit_fields) == VL_ETOOBIG);
    s_fields_reset(); // 4 f32 fields of one value: as many bytes as the real one
    for (int i = 0; i < 4; i++)
        s_field_add(VL_OBS_F32, 1, (const uint32_t[]){1});
    VL_CHECK(s_decode_fields() == VL_OK);
}

static void test_unknown_encoding(void)
{
    const uint32_t dims[2] = {2, 2};
    s_fields_reset(), s_field_add(7, 2, dims);
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    VL_CHECK(s_peek_edited(s_edit_fields) == VL_ESHAPE);
    s_fields_reset(), s_field_add(VL_OBS_ENCODINGS, 2, dims);
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    s_fields_reset(), s_field_add(-1, 2, dims);
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    s_fields_reset(), s_field_add(VL_OBS_U1, 2, (const uint32_t[]){8, 2});
    s_field_add(7, 1, (const uint32_t[]){1}); // a bad second field
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
}

static void s_edit_horizon_zero(Volley__Segment *msg)
{
    msg->horizon = 0;
}

static void s_edit_no_fields(Volley__Segment *msg)
{
    msg->n_obs_fields = 0;
}

/* The replacement action space s_edit_choices installs: one discrete
   dimension of s_choices_arg choices. */
static uint32_t s_choices_arg;

static void s_edit_choices(Volley__Segment *msg)
{
    static Volley__ActionSpace space;
    volley__action_space__init(&space);
    space.kind = VOLLEY__ACTION_KIND__DISCRETE;
    space.n_n = 1;
    space.n = &s_choices_arg;
    msg->action = &space;
}

/* Zero sizes are VL_ESHAPE, not VL_ETOOBIG (see vl_segment.c), even when
   another dimension is over the limit: zero dims are checked first. */
static void test_zero_sizes(void)
{
    VL_CHECK(s_decode_edited(s_edit_horizon_zero) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_no_fields) == VL_ESHAPE);
    VL_CHECK(s_peek_edited(s_edit_no_fields) == VL_ESHAPE);
    s_fields_reset(), s_field_add(VL_OBS_F32, 0, NULL); // rank 0
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    s_fields_reset(), s_field_add(VL_OBS_F32, 2, (const uint32_t[]){1u << 20, 0});
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
    s_fields_reset(), s_field_add(VL_OBS_F32, 2, (const uint32_t[]){2, 2});
    s_field_add(VL_OBS_U2, 3, (const uint32_t[]){4, 0, 4});
    VL_CHECK(s_decode_fields() == VL_ESHAPE);
}

/* The choices of a discrete space: 2 .. max_actions, anything else makes
   the space itself invalid (VL_EACTION), checked in the header (peek). */
static void test_action_choices_over_limit(void)
{
    s_choices_arg = S_ACTIONS; // the real space, rebuilt: the control
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_OK);
    s_choices_arg = 1024;
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_OK);
    s_choices_arg = 1025;
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_EACTION);
    VL_CHECK(s_peek_edited(s_edit_choices) == VL_EACTION);
    s_choices_arg = UINT32_MAX;
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_EACTION);
    s_choices_arg = 0;
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_EACTION);
    s_choices_arg = 1;
    VL_CHECK(s_decode_edited(s_edit_choices) == VL_EACTION);
}

static void s_edit_raw_plus4(Volley__Segment *msg)
{
    msg->raw_size += 4;
}

static void s_edit_raw_minus4(Volley__Segment *msg)
{
    msg->raw_size -= 4;
}

static void s_edit_raw_huge(Volley__Segment *msg)
{
    msg->raw_size = UINT32_MAX;
}

/* A field declared u2 instead of f32: raw_size no longer agrees. */
static void s_edit_other_encoding(Volley__Segment *msg)
{
    s_fields_reset(), s_field_add(VL_OBS_U2, 2, (const uint32_t[]){2, 2});
    s_edit_fields(msg);
}

static void test_raw_size_inconsistent(void)
{
    VL_CHECK(s_decode_edited(s_edit_raw_plus4) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_raw_minus4) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_raw_huge) == VL_ESHAPE);
    VL_CHECK(s_peek_edited(s_edit_raw_plus4) == VL_ESHAPE);
    VL_CHECK(s_decode_edited(s_edit_other_encoding) == VL_ESHAPE);
}

/* The standard segment's payload against max_raw_bytes: at the limit it
   passes, one byte under it is refused, before any other check of the
   block. */
static void test_raw_size_over_limit(void)
{
    size_t size;
    uint8_t *buf = s_edited(s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    vl_obs_spec_t spec = s_std_spec();
    size_t cap = vl_segment_arrays_size(S_T, &spec, 1, 0);
    uint32_t raw = (S_T + 1) * S_WIRE + S_STEP_BYTES * S_T;
    lim.max_raw_bytes = raw;
    vl_reason_t at_limit = s_decode(buf, size, &lim, cap);
    lim.max_raw_bytes = raw - 1;
    vl_reason_t over = s_decode(buf, size, &lim, cap);
    vl_segment_t out;
    vl_reason_t over_peek = vl_segment_peek(buf, size, &lim, &out);
    free(buf);
    VL_CHECK(at_limit == VL_OK);
    VL_CHECK(over == VL_ETOOBIG);
    VL_CHECK(over_peek == VL_ETOOBIG);
}

/* A ~1 KB message claiming a 1 GB payload: the largest shape the other
   limits allow (f32 [65536] for 4096 steps), raw_size consistent with it. */
static void s_edit_gigabyte(Volley__Segment *msg)
{
    s_fields_reset(), s_field_add(VL_OBS_F32, 1, (const uint32_t[]){1u << 16});
    s_edit_fields(msg);
    msg->horizon = 4096;
    msg->raw_size = (uint32_t)(4097ull * 4 * 65536 + S_STEP_BYTES * 4096);
}

/* The same ~1 KB message claiming a u8 [4096] observation for 4096 steps:
   16.8 MB, under max_raw_bytes and consistent with the shape, but more
   than 255 times the block's length, which no LZ4 block can expand to. */
#define S_BOMB_RAW (4097u * 4096 + S_STEP_BYTES * 4096)
static void s_edit_bomb(Volley__Segment *msg)
{
    s_fields_reset(), s_field_add(VL_OBS_U8, 1, (const uint32_t[]){4096});
    s_edit_fields(msg);
    msg->horizon = 4096;
    msg->raw_size = S_BOMB_RAW;
}

/* Neither is decompressed nor given storage: the gigabyte is over
   max_raw_bytes, the bomb is refused by LZ4's expansion bound, both
   before the storage is looked at, so a few bytes of it do. */
static void test_lz4_bomb(void)
{
    VL_CHECK(s_peek_edited(s_edit_gigabyte) == VL_ETOOBIG);
    VL_CHECK(s_decode_edited(s_edit_gigabyte) == VL_ETOOBIG);
    size_t size;
    uint8_t *buf = s_edited(s_edit_bomb, &size);
    vl_limits_t lim = vl_limits_default();
    vl_segment_t out;
    uint32_t small[16];
    vl_reason_t peek = vl_segment_peek(buf, size, &lim, &out);
    vl_reason_t tiny = vl_segment_decode(buf, size, &lim, &out, small, sizeof small);
    vl_reason_t none = vl_segment_decode(buf, size, &lim, &out, NULL, 0);
    free(buf);
    VL_CHECK(size < 2048 && S_BOMB_RAW <= lim.max_raw_bytes);
    VL_CHECK(peek == VL_ELZ4);
    VL_CHECK(tiny == VL_ELZ4);
    VL_CHECK(none == VL_ELZ4);
}

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
    VL_CHECK(vl_probe_round_trip(&seg) == VL_OK);
    seg.rewards[S_T - 1] = NAN;
    vl_reason_t reason = vl_probe_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(reason == VL_ENONFINITE);
}

/* +Inf in the bootstrap observation, the last float of obs. */
static void test_inf_observation(void)
{
    vl_segment_t seg = s_segment_new(5);
    ((float *)seg.obs)[(S_T + 1) * S_D - 1] = INFINITY;
    vl_reason_t reason = vl_probe_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(reason == VL_ENONFINITE);
}

/* Returns the j-th value of the f32 field in observation k of a pixel-like
   segment's rows (the field starts after 256 screen and 32 flag bytes). */
static float *s_pix_f32(vl_segment_t *seg, size_t k, size_t j)
{
    return (float *)(seg->obs + k * seg->obs_row_bytes + 256 + 32) + j;
}

/* In a mixed segment only the f32 field can carry a non-finite value (rows
   hold the others as bytes): a NaN or Inf there is refused wherever it is. */
static void test_nonfinite_in_mixed_fields(void)
{
    vl_segment_t seg = s_pixel_new(6);
    VL_CHECK(seg.obs_row_bytes == 256 + 32 + 8);
    VL_CHECK(vl_probe_round_trip(&seg) == VL_OK);
    *s_pix_f32(&seg, 5, 1) = NAN;
    vl_reason_t middle = vl_probe_round_trip(&seg);
    *s_pix_f32(&seg, 5, 1) = 0.5f;
    *s_pix_f32(&seg, S_T, 1) = -INFINITY; // the bootstrap's last float
    vl_reason_t last = vl_probe_round_trip(&seg);
    *s_pix_f32(&seg, S_T, 1) = 0.5f;
    *s_pix_f32(&seg, 0, 0) = NAN; // the first f32 value
    vl_reason_t first = vl_probe_round_trip(&seg);
    *s_pix_f32(&seg, 0, 0) = 0.5f;
    vl_reason_t clean = vl_probe_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(middle == VL_ENONFINITE);
    VL_CHECK(last == VL_ENONFINITE);
    VL_CHECK(first == VL_ENONFINITE);
    VL_CHECK(clean == VL_OK);
}

static void test_nonfinite_logp_and_return(void)
{
    vl_segment_t seg = s_segment_new(6);
    seg.logp[0] = -INFINITY;
    vl_reason_t logp_reason = vl_probe_round_trip(&seg);
    seg.logp[0] = -1.0f;
    seg.episode_returns[1] = NAN;
    vl_reason_t return_reason = vl_probe_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(logp_reason == VL_ENONFINITE);
    VL_CHECK(return_reason == VL_ENONFINITE);
}

static void test_action_out_of_range(void)
{
    vl_segment_t seg = s_segment_new(7);
    seg.actions[5] = -1;
    vl_reason_t negative = vl_probe_round_trip(&seg);
    seg.actions[5] = S_ACTIONS;
    vl_reason_t too_big = vl_probe_round_trip(&seg);
    seg.actions[5] = S_ACTIONS - 1;
    vl_reason_t last_valid = vl_probe_round_trip(&seg);
    free(seg.obs);
    VL_CHECK(negative == VL_EACTION);
    VL_CHECK(too_big == VL_EACTION);
    VL_CHECK(last_valid == VL_OK);
}

/* Done flags travel as one byte each; the encoder writes 0 or 1, so a
   byte of 2 (or 255) can only come from a hostile sender. */
static void test_done_not_binary(void)
{
    vl_segment_t seg = s_segment_new(8), pix = s_pixel_new(8);
    VL_CHECK(seg.dones[3] == 0.0f);
    s_raw_at = s_dones_at(&seg, 3), s_raw_byte = 1; // the control: a valid flag
    vl_reason_t one = s_decode_edited_from(&seg, s_edit_raw_byte);
    s_raw_byte = 2;
    vl_reason_t two = s_decode_edited_from(&seg, s_edit_raw_byte);
    s_raw_byte = 255;
    vl_reason_t all = s_decode_edited_from(&seg, s_edit_raw_byte);
    s_raw_at = s_dones_at(&pix, S_T - 1), s_raw_byte = 2; // the last byte of the payload
    vl_reason_t pix_two = s_decode_edited_from(&pix, s_edit_raw_byte);
    free(seg.obs);
    free(pix.obs);
    VL_CHECK(one == VL_OK);
    VL_CHECK(two == VL_EDONE);
    VL_CHECK(all == VL_EDONE);
    VL_CHECK(pix_two == VL_EDONE);
}

static void test_logp_positive(void)
{
    vl_segment_t seg = s_segment_new(9);
    seg.logp[4] = 0.0f; // log-prob of a sure action: allowed
    vl_reason_t zero = vl_probe_round_trip(&seg);
    seg.logp[4] = 1e-6f;
    vl_reason_t positive = vl_probe_round_trip(&seg);
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
    vl_segment_t pix = s_pixel_new(10);
    size_t size;
    uint8_t *buf = s_edited_from(&pix, s_edit_nothing, &size);
    vl_limits_t lim = vl_limits_default();
    size_t cap = vl_probe_cap(&pix);
    free(pix.obs);
    vl_reason_t short_by_one = s_decode(buf, size, &lim, cap - 1);
    vl_reason_t no_wire = s_decode(buf, size, &lim, cap - (S_T + 1) * S_PIX_WIRE);
    void *arrays = malloc(cap);
    vl_segment_t out;
    vl_reason_t no_storage = vl_segment_decode(buf, size, &lim, &out, NULL, 0);
    vl_reason_t exact = vl_segment_decode(buf, size, &lim, &out, arrays, cap);
    free(arrays);
    free(buf);
    VL_CHECK(short_by_one == VL_ETOOBIG);
    VL_CHECK(no_wire == VL_ETOOBIG);
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
/* Marks step t of seg truncated, its final observation row filled with
   `value` in every f32 value (the std spec is all f32). */
static void s_truncate_at(vl_segment_t *seg, uint32_t t, float value)
{
    seg->dones[t] = 1.0f;
    seg->truncated[t] = 1;
    float *row = (float *)(seg->final_obs + (size_t)seg->n_truncated++ * seg->obs_row_bytes);
    for (uint32_t j = 0; j < seg->obs_dim; j++)
        row[j] = value + (float)j;
}

/* Terminations and truncations travel apart: dones stay 1 for both, the
   truncated flags and final observations (in step order) come back. */
static void test_segment_truncation_round_trip(void)
{
    vl_segment_t seg = s_segment_new(21), out;
    s_truncate_at(&seg, 3, 100.0f);
    s_truncate_at(&seg, 20, 200.0f);
    VL_CHECK(seg.dones[9] == 1.0f && !seg.truncated[9]); // s_segment_make's termination
    void *arrays;
    vl_reason_t r = vl_probe_encode_decode(&seg, &out, &arrays);
    VL_CHECK(r == VL_OK);
    if (r == VL_OK) {
        VL_CHECK(s_same_segment(&seg, &out));
        VL_CHECK(out.n_truncated == 2 && out.truncated[3] && out.truncated[20]);
        VL_CHECK(!out.truncated[9] && out.dones[9] == 1.0f && out.dones[3] == 1.0f);
        int other = 0;
        for (uint32_t t = 0; t < S_T; t++)
            other += out.truncated[t] && t != 3 && t != 20;
        VL_CHECK(other == 0);
        VL_CHECK(memcmp(out.final_obs, seg.final_obs, 2 * (size_t)seg.obs_row_bytes) == 0);
        VL_CHECK(((float *)out.final_obs)[0] == 100.0f);
        VL_CHECK(((float *)(out.final_obs + out.obs_row_bytes))[1] == 201.0f);
    }
    free(arrays);
    free(seg.obs);
}

/* The encoder refuses a count that disagrees with the flags; the decoder
   refuses a header count that disagrees with the payload or the horizon. */
static void s_edit_truncations_down(Volley__Segment *msg)
{
    msg->truncations--;
}
static void s_edit_truncations_past_horizon(Volley__Segment *msg)
{
    msg->truncations = msg->horizon + 1;
}

static void test_segment_truncation_refused(void)
{
    vl_segment_t seg = s_segment_new(22);
    s_truncate_at(&seg, 5, 1.0f);
    s_truncate_at(&seg, 6, 2.0f);
    vl_reason_t down = s_decode_edited_from(&seg, s_edit_truncations_down);
    vl_reason_t past = s_decode_edited_from(&seg, s_edit_truncations_past_horizon);
    uint8_t *buf = NULL;
    size_t size;
    seg.n_truncated = 1; // two flags set
    int encoded = vl_segment_encode(&seg, &buf, &size);
    seg.n_truncated = 2;
    seg.truncated[6] = 0; // one flag, a count of two
    int encoded2 = vl_segment_encode(&seg, &buf, &size);
    seg.truncated[6] = 1;
    s_raw_at = s_dones_at(&seg, 2), s_raw_byte = 3; // no such done value
    vl_reason_t three = s_decode_edited_from(&seg, s_edit_raw_byte);
    free(seg.obs);
    VL_CHECK(down == VL_ESHAPE); // the payload is the size of two final observations
    VL_CHECK(past == VL_ESHAPE);
    VL_CHECK(encoded == -1 && encoded2 == -1);
    VL_CHECK(three == VL_EDONE);
}

int main(void)
{
    VL_RUN(test_reason_str);
    VL_RUN(test_limits_default);
    VL_RUN(test_float_is_finite);
    VL_RUN(test_wire_all_finite_and_names);
    VL_RUN(test_wire_check_block);
    VL_RUN(test_set_spec);
    VL_RUN(test_arrays_size_and_bind);
    VL_RUN(test_arrays_size_overflow);
    VL_RUN(test_segment_round_trip);
    VL_RUN(test_segment_round_trip_pixels);
    VL_RUN(test_segment_round_trip_odd_fields);
    VL_RUN(test_segment_payload_layout);
    VL_RUN(test_segment_encode_unbound_arrays);
    VL_RUN(test_segment_peek);
    VL_RUN(test_segment_encode_rejects_bad_input);
    VL_RUN(test_truncated_segment);
    VL_RUN(test_garbage_bytes);
    VL_RUN(test_bit_flipped_segment);
    VL_RUN(test_wrong_schema);
    VL_RUN(test_horizon_over_limit);
    VL_RUN(test_obs_fields_over_limit);
    VL_RUN(test_too_many_fields);
    VL_RUN(test_unknown_encoding);
    VL_RUN(test_zero_sizes);
    VL_RUN(test_action_choices_over_limit);
    VL_RUN(test_raw_size_inconsistent);
    VL_RUN(test_raw_size_over_limit);
    VL_RUN(test_lz4_bomb);
    VL_RUN(test_payload_over_compress_bound);
    VL_RUN(test_corrupt_lz4);
    VL_RUN(test_nan_reward);
    VL_RUN(test_inf_observation);
    VL_RUN(test_nonfinite_in_mixed_fields);
    VL_RUN(test_nonfinite_logp_and_return);
    VL_RUN(test_action_out_of_range);
    VL_RUN(test_done_not_binary);
    VL_RUN(test_logp_positive);
    VL_RUN(test_episode_counts_mismatched);
    VL_RUN(test_arrays_cap_too_small);
    VL_RUN(test_bad_policy_id);
    VL_RUN(test_segment_truncation_round_trip);
    VL_RUN(test_segment_truncation_refused);
    return VL_DONE();
}
