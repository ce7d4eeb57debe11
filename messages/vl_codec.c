/*  vl_codec: volley's messages to and from wire bytes (contract in vl_codec.h,
    wire in volley.proto). protobuf-c parses; this file bounds and validates.

    A decoder checks in a fixed order, so a message with one fault always gets
    the same reason: parse, schema, policy id, declared sizes against the
    limits, sizes against each other, LZ4 block, then values. Zero sizes are
    VL_ESHAPE (no sender can mean them), sizes above a limit VL_ETOOBIG. A
    compressed length above LZ4_compressBound(raw_size) is VL_ELZ4: the block
    is not one LZ4 could have produced. Nothing is allocated or decompressed
    before every size it depends on has passed its limit. */
#include "vl_codec.h"

#include <assert.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "volley.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "volley payloads are little-endian arrays copied as is; this host is big-endian"
#endif

// An LZ4 sequence costs at least one byte per 255 bytes it produces, so a
// block of n bytes never decompresses to more than 255 * n: anything claiming
// more is refused before its buffer is allocated.
#define S_LZ4_MAX_RATIO 255

static const char *s_reason_names[VL_EREASONS] = {
    [VL_OK] = "ok",
    [VL_EPROTO] = "malformed protobuf",
    [VL_EVERSION] = "wrong schema version",
    [VL_ETOOBIG] = "declared size over limit",
    [VL_ESHAPE] = "sizes inconsistent",
    [VL_ELZ4] = "bad lz4 payload",
    [VL_ENONFINITE] = "non-finite float",
    [VL_EACTION] = "action out of range",
    [VL_EDONE] = "bad done flag or log-prob",
    [VL_EPOLICY] = "bad policy id",
    [VL_EMISMATCH] = "not what this receiver serves",
};

/* Returns a short constant name for reason, "unknown" if out of range. */
const char *vl_reason_str(vl_reason_t reason)
{
    if ((unsigned)reason >= VL_EREASONS)
        return "unknown";
    return s_reason_names[reason];
}

/* Returns the default limits. */
vl_limits_t vl_limits_default(void)
{
    vl_limits_t lim = {
        .max_horizon = 4096,
        .max_obs_dim = 1u << 16,
        .max_actions = 1024,
        .max_tensors = 64,
        .max_tensor_elems = 1u << 24,
    };
    return lim;
}

/* Returns 1 if f is finite, judged by its exponent bits (-ffast-math safe). */
int vl_float_is_finite(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (bits & 0x7f800000u) != 0x7f800000u;
}

/* Returns 1 if d is finite, judged by its exponent bits. */
static int s_double_is_finite(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/* Returns 1 if all n floats are finite, else 0. */
static int s_all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!vl_float_is_finite(x[i]))
            return 0;
    return 1;
}

/* Returns 1 if s is non-empty printable ASCII shorter than cap bytes (NUL
   included), else 0. Reads at most cap bytes of s; NULL gives 0. */
static int s_name_ok(const char *s, size_t cap)
{
    if (!s)
        return 0;
    size_t len = 0;
    for (; len < cap && s[len]; len++) {
        unsigned char c = (unsigned char)s[len];
        if (c < 0x20 || c > 0x7e)
            return 0;
    }
    return len > 0 && len < cap;
}

/* Copies a name that passed s_name_ok into dst (cap bytes). */
static void s_name_copy(char *dst, const char *src)
{
    memcpy(dst, src, strlen(src) + 1);
}

/* Returns the payload bytes of a segment of horizon T and obs_dim D, or
   UINT64_MAX when that does not fit in 64 bits (T and D are 32-bit). */
static uint64_t s_payload_bytes(uint64_t T, uint64_t D)
{
    if (D != 0 && T + 1 > (UINT64_MAX / 8) / D)
        return UINT64_MAX;
    return 4 * ((T + 1) * D + 4 * T);
}

/* Returns payload bytes plus room for T episode returns and lengths, or
   SIZE_MAX when that does not fit in a size_t. */
size_t vl_segment_arrays_size(uint32_t T, uint32_t D)
{
    uint64_t bytes = s_payload_bytes(T, D);
    if (bytes == UINT64_MAX)
        return SIZE_MAX;
    uint64_t total = bytes + 8 * (uint64_t)T; // bytes < 2^62: no overflow
#if SIZE_MAX < UINT64_MAX
    if (total > SIZE_MAX)
        return SIZE_MAX;
#endif
    return (size_t)total;
}

/* Points seg's arrays into `arrays`: the payload first and contiguous, so
   LZ4 can decompress straight into it, then the episode arrays. */
void vl_segment_bind(vl_segment_t *seg, void *arrays)
{
    size_t T = seg->horizon;
    seg->obs = arrays;
    seg->actions = (int32_t *)(seg->obs + (T + 1) * (size_t)seg->obs_dim);
    seg->rewards = (float *)(seg->actions + T);
    seg->dones = seg->rewards + T;
    seg->logp = seg->dones + T;
    seg->episode_returns = seg->logp + T;
    seg->episode_lengths = (uint32_t *)(seg->episode_returns + T);
}

/* Checks an LZ4 block: `expected` raw bytes implied by its shape, raw_size
   as declared, len compressed bytes. A block over LZ4_MAX_INPUT_SIZE cannot
   exist, so a shape needing one is VL_ETOOBIG. Returns VL_OK or the reason. */
static vl_reason_t s_check_block(uint64_t expected, uint32_t raw_size, size_t len)
{
    if (expected > LZ4_MAX_INPUT_SIZE)
        return VL_ETOOBIG;
    if (raw_size != expected)
        return VL_ESHAPE;
    if (len == 0 || len > (size_t)LZ4_compressBound((int)raw_size))
        return VL_ELZ4;
    return VL_OK;
}

/* Decompresses a block that passed s_check_block into dst (raw_size bytes).
   Returns VL_OK, or VL_ELZ4 if it is corrupt or not exactly raw_size. */
static vl_reason_t s_decompress(const ProtobufCBinaryData *block, uint32_t raw_size, void *dst)
{
    int n = LZ4_decompress_safe((const char *)block->data, dst, (int)block->len, (int)raw_size);
    return n >= 0 && (uint32_t)n == raw_size ? VL_OK : VL_ELZ4;
}

/* Checks horizon, obs shape and num_actions against lim in the contract's
   order and copies them into seg. Returns VL_OK or the reason. */
static vl_reason_t s_check_shape(const Volley__Segment *msg, const vl_limits_t *lim,
                                 vl_segment_t *seg)
{
    if (msg->horizon == 0)
        return VL_ESHAPE;
    if (msg->horizon > lim->max_horizon)
        return VL_ETOOBIG;
    if (msg->n_obs_shape == 0)
        return VL_ESHAPE;
    if (msg->n_obs_shape > VL_OBS_NDIM_MAX)
        return VL_ETOOBIG;
    for (size_t i = 0; i < msg->n_obs_shape; i++)
        if (msg->obs_shape[i] == 0)
            return VL_ESHAPE;
    uint64_t dim = 1; // stays <= max_obs_dim < 2^32, so each product fits
    for (size_t i = 0; i < msg->n_obs_shape; i++) {
        dim *= msg->obs_shape[i];
        if (dim > lim->max_obs_dim)
            return VL_ETOOBIG;
        seg->obs_shape[i] = msg->obs_shape[i];
    }
    if (msg->num_actions == 0)
        return VL_ESHAPE;
    if (msg->num_actions > lim->max_actions)
        return VL_ETOOBIG;
    seg->horizon = msg->horizon;
    seg->obs_ndim = (uint32_t)msg->n_obs_shape;
    seg->obs_dim = (uint32_t)dim;
    seg->num_actions = msg->num_actions;
    return VL_OK;
}

/* Runs every header check on msg and fills seg's scalar fields; its arrays
   are NULL and n_episodes 0 until decoded. Returns VL_OK or the reason. */
static vl_reason_t s_check_header(const Volley__Segment *msg, const vl_limits_t *lim,
                                  vl_segment_t *seg)
{
    memset(seg, 0, sizeof *seg);
    if (msg->schema != VL_SCHEMA_VERSION)
        return VL_EVERSION;
    if (!s_name_ok(msg->policy_id, VL_POLICY_ID_MAX))
        return VL_EPOLICY;
    vl_reason_t reason = s_check_shape(msg, lim, seg);
    if (reason != VL_OK)
        return reason;
    uint64_t expected = s_payload_bytes(seg->horizon, seg->obs_dim);
    reason = s_check_block(expected, msg->raw_size, msg->payload.len);
    if (reason != VL_OK)
        return reason;
    seg->actor_id = msg->actor_id;
    seg->env_id = msg->env_id;
    seg->seq = msg->seq;
    s_name_copy(seg->policy_id, msg->policy_id);
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

/* Returns 1 if d is exactly 0 or 1 (either zero), judged by its bits. */
static int s_done_ok(float d)
{
    uint32_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (bits & 0x7fffffffu) == 0 || bits == 0x3f800000u;
}

/* Checks a decoded segment's values: finite floats, actions in range, done
   flags 0 or 1 and log-probs <= 0. Returns VL_OK or the reason. */
static vl_reason_t s_check_values(const vl_segment_t *seg)
{
    size_t T = seg->horizon;
    if (!s_all_finite(seg->obs, (T + 1) * (size_t)seg->obs_dim) || !s_all_finite(seg->rewards, T) ||
        !s_all_finite(seg->logp, T) || !s_all_finite(seg->episode_returns, seg->n_episodes))
        return VL_ENONFINITE;
    for (size_t t = 0; t < T; t++)
        if (seg->actions[t] < 0 || (uint32_t)seg->actions[t] >= seg->num_actions)
            return VL_EACTION;
    for (size_t t = 0; t < T; t++)
        if (!s_done_ok(seg->dones[t]) || seg->logp[t] > 0.0f)
            return VL_EDONE;
    return VL_OK;
}

/* Validates an unpacked segment into seg, decompressing into `arrays`.
   Returns VL_OK or the reason. */
static vl_reason_t s_segment_from_msg(const Volley__Segment *msg, const vl_limits_t *lim,
                                      vl_segment_t *seg, void *arrays, size_t arrays_cap)
{
    vl_reason_t reason = s_check_header(msg, lim, seg);
    if (reason != VL_OK)
        return reason;
    if (!arrays || arrays_cap < vl_segment_arrays_size(seg->horizon, seg->obs_dim))
        return VL_ETOOBIG;
    vl_segment_bind(seg, arrays);
    reason = s_decompress(&msg->payload, msg->raw_size, arrays);
    if (reason != VL_OK)
        return reason;
    reason = s_copy_episodes(msg, seg);
    if (reason != VL_OK)
        return reason;
    return s_check_values(seg);
}

/* Checks a segment's header only; *seg is written on VL_OK alone. */
vl_reason_t vl_segment_peek(const uint8_t *data, size_t size, const vl_limits_t *lim,
                            vl_segment_t *seg)
{
    assert(lim && seg);
    Volley__Segment *msg = volley__segment__unpack(NULL, size, data);
    if (!msg)
        return VL_EPROTO;
    vl_segment_t tmp;
    vl_reason_t reason = s_check_header(msg, lim, &tmp);
    volley__segment__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *seg = tmp;
    return reason;
}

/* Decodes and validates a segment into `arrays`; *seg is written on VL_OK
   alone. */
vl_reason_t vl_segment_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_segment_t *seg, void *arrays, size_t arrays_cap)
{
    assert(lim && seg);
    Volley__Segment *msg = volley__segment__unpack(NULL, size, data);
    if (!msg)
        return VL_EPROTO;
    vl_segment_t tmp;
    vl_reason_t reason = s_segment_from_msg(msg, lim, &tmp, arrays, arrays_cap);
    volley__segment__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *seg = tmp;
    return reason;
}

/* Compresses n bytes (n <= LZ4_MAX_INPUT_SIZE) into a new block. Returns it
   (caller frees) and sets *len, or NULL on no memory. */
static uint8_t *s_compress(const void *src, size_t n, size_t *len)
{
    int bound = LZ4_compressBound((int)n);
    uint8_t *dst = malloc((size_t)bound);
    if (!dst)
        return NULL;
    int got = LZ4_compress_default(src, (char *)dst, (int)n, bound);
    if (got <= 0) {
        free(dst);
        return NULL;
    }
    *len = (size_t)got;
    return dst;
}

/* Packs msg into a new buffer. Returns 0 and sets *out (caller frees) and
 *out_size, or -1 on no memory. */
static int s_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *out_size)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return -1;
    *out_size = protobuf_c_message_pack(msg, buf);
    *out = buf;
    return 0;
}

/* Returns the payload bytes of seg if it is a segment some receiver could
   accept (sizes nonzero and consistent, arrays set, policy id valid), else
   0. Values are not checked: receivers do that. */
static uint64_t s_encodable_bytes(const vl_segment_t *seg)
{
    if (seg->horizon == 0 || seg->obs_ndim == 0 || seg->obs_ndim > VL_OBS_NDIM_MAX ||
        seg->num_actions == 0 || seg->n_episodes > seg->horizon)
        return 0;
    if (!s_name_ok(seg->policy_id, VL_POLICY_ID_MAX))
        return 0;
    uint64_t dim = 1; // stays <= UINT32_MAX, so each product fits
    for (uint32_t i = 0; i < seg->obs_ndim; i++) {
        dim *= seg->obs_shape[i];
        if (dim == 0 || dim > UINT32_MAX)
            return 0;
    }
    if (dim != seg->obs_dim || !seg->obs || !seg->actions || !seg->rewards || !seg->dones ||
        !seg->logp)
        return 0;
    if (seg->n_episodes > 0 && (!seg->episode_returns || !seg->episode_lengths))
        return 0;
    uint64_t bytes = s_payload_bytes(seg->horizon, dim);
    return bytes <= LZ4_MAX_INPUT_SIZE ? bytes : 0;
}

/* Returns seg's payload as one contiguous block: its own arrays when laid
   out as vl_segment_bind does, else a copy in *scratch (caller frees).
   Returns NULL on no memory. */
static const void *s_gather(const vl_segment_t *seg, void **scratch)
{
    size_t T4 = (size_t)seg->horizon * 4;
    size_t obs_bytes = ((size_t)seg->horizon + 1) * seg->obs_dim * 4;
    uintptr_t base = (uintptr_t)seg->obs;
    if ((uintptr_t)seg->actions == base + obs_bytes &&
        (uintptr_t)seg->rewards == base + obs_bytes + T4 &&
        (uintptr_t)seg->dones == base + obs_bytes + 2 * T4 &&
        (uintptr_t)seg->logp == base + obs_bytes + 3 * T4)
        return seg->obs;
    char *buf = malloc(obs_bytes + 4 * T4);
    if (!buf)
        return NULL;
    memcpy(buf, seg->obs, obs_bytes);
    memcpy(buf + obs_bytes, seg->actions, T4);
    memcpy(buf + obs_bytes + T4, seg->rewards, T4);
    memcpy(buf + obs_bytes + 2 * T4, seg->dones, T4);
    memcpy(buf + obs_bytes + 3 * T4, seg->logp, T4);
    *scratch = buf;
    return buf;
}

/* Fills msg's header and episode fields from seg (pointers borrowed). */
static void s_segment_to_msg(const vl_segment_t *seg, Volley__Segment *msg)
{
    msg->schema = VL_SCHEMA_VERSION;
    msg->actor_id = seg->actor_id;
    msg->env_id = seg->env_id;
    msg->seq = seg->seq;
    msg->policy_id = (char *)seg->policy_id;
    msg->policy_version = seg->policy_version;
    msg->horizon = seg->horizon;
    msg->n_obs_shape = seg->obs_ndim;
    msg->obs_shape = (uint32_t *)seg->obs_shape;
    msg->num_actions = seg->num_actions;
    msg->n_episode_returns = seg->n_episodes;
    msg->episode_returns = seg->episode_returns;
    msg->n_episode_lengths = seg->n_episodes;
    msg->episode_lengths = seg->episode_lengths;
    msg->send_ns = seg->send_ns;
}

/* Encodes seg into a new buffer. Returns 0 and sets *out, *out_size, or -1
   on invalid sizes or no memory. */
int vl_segment_encode(const vl_segment_t *seg, uint8_t **out, size_t *out_size)
{
    if (!seg || !out || !out_size)
        return -1;
    uint64_t raw = s_encodable_bytes(seg);
    if (raw == 0)
        return -1;
    void *scratch = NULL;
    const void *payload = s_gather(seg, &scratch);
    if (!payload)
        return -1;
    size_t len = 0;
    uint8_t *block = s_compress(payload, (size_t)raw, &len);
    free(scratch);
    if (!block)
        return -1;
    Volley__Segment msg = VOLLEY__SEGMENT__INIT;
    s_segment_to_msg(seg, &msg);
    msg.raw_size = (uint32_t)raw;
    msg.payload.data = block;
    msg.payload.len = len;
    int rc = s_pack(&msg.base, out, out_size);
    free(block);
    return rc;
}

/* Checks one tensor's header: name, rank, dims, element count, raw_size and
   compressed length. A bad name is VL_EPOLICY, the reason for bad ids.
   Returns VL_OK or the reason. */
static vl_reason_t s_check_tensor(const Volley__Tensor *t, const vl_limits_t *lim)
{
    if (!s_name_ok(t->name, VL_TENSOR_NAME_MAX))
        return VL_EPOLICY;
    if (t->n_shape < 1 || t->n_shape > 2)
        return VL_ESHAPE;
    for (size_t i = 0; i < t->n_shape; i++)
        if (t->shape[i] == 0)
            return VL_ESHAPE;
    uint64_t elems = t->shape[0];
    if (t->n_shape == 2)
        elems *= t->shape[1]; // two 32-bit factors fit in 64 bits
    if (elems > lim->max_tensor_elems)
        return VL_ETOOBIG;
    vl_reason_t reason = s_check_block(4 * elems, t->raw_size, t->payload.len);
    if (reason != VL_OK)
        return reason;
    if ((uint64_t)t->raw_size > (uint64_t)t->payload.len * S_LZ4_MAX_RATIO)
        return VL_ELZ4;
    return VL_OK;
}

/* Checks a Weights message's header and every tensor's header, before
   anything is allocated. Returns VL_OK or the reason. */
static vl_reason_t s_check_weights(const Volley__Weights *msg, const vl_limits_t *lim)
{
    if (msg->schema != VL_SCHEMA_VERSION)
        return VL_EVERSION;
    if (!s_name_ok(msg->policy_id, VL_POLICY_ID_MAX))
        return VL_EPOLICY;
    if (msg->n_tensors > lim->max_tensors)
        return VL_ETOOBIG;
    for (size_t i = 0; i < msg->n_tensors; i++) {
        vl_reason_t reason = s_check_tensor(msg->tensors[i], lim);
        if (reason != VL_OK)
            return reason;
    }
    return VL_OK;
}

/* Decompresses a checked tensor into t (data malloc'd, owned by t).
   Returns VL_OK, VL_ELZ4, VL_ENONFINITE, or VL_ETOOBIG on no memory. */
static vl_reason_t s_tensor_from_msg(const Volley__Tensor *msg, vl_tensor_t *t)
{
    s_name_copy(t->name, msg->name);
    t->ndim = (uint32_t)msg->n_shape;
    t->rows = msg->shape[0];
    t->cols = msg->n_shape == 2 ? msg->shape[1] : 1;
    t->data = malloc(msg->raw_size);
    if (!t->data)
        return VL_ETOOBIG;
    vl_reason_t reason = s_decompress(&msg->payload, msg->raw_size, t->data);
    if (reason != VL_OK)
        return reason;
    if (!s_all_finite(t->data, (size_t)t->rows * t->cols))
        return VL_ENONFINITE;
    return VL_OK;
}

/* Builds weights from a checked message into *out (NULL on failure).
   Returns VL_OK or the reason. */
static vl_reason_t s_weights_from_msg(const Volley__Weights *msg, vl_weights_t **out)
{
    vl_weights_t *w = calloc(1, sizeof *w);
    if (!w)
        return VL_ETOOBIG;
    s_name_copy(w->policy_id, msg->policy_id);
    w->version = msg->version;
    vl_reason_t reason = VL_OK;
    if (msg->n_tensors > 0) {
        w->tensors = calloc(msg->n_tensors, sizeof *w->tensors);
        if (!w->tensors)
            reason = VL_ETOOBIG;
    }
    for (size_t i = 0; reason == VL_OK && i < msg->n_tensors; i++) {
        w->n_tensors++; // counted before filling, so destroy frees its data
        reason = s_tensor_from_msg(msg->tensors[i], &w->tensors[i]);
    }
    if (reason != VL_OK)
        vl_weights_destroy(&w);
    *out = w;
    return reason;
}

/* Decodes and validates weights. Returns VL_OK and sets *out (caller
   destroys), or the reason with *out NULL. Running out of memory is
   reported as VL_ETOOBIG. */
vl_reason_t vl_weights_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_weights_t **out)
{
    assert(lim && out);
    *out = NULL;
    Volley__Weights *msg = volley__weights__unpack(NULL, size, data);
    if (!msg)
        return VL_EPROTO;
    vl_reason_t reason = s_check_weights(msg, lim);
    if (reason == VL_OK)
        reason = s_weights_from_msg(msg, out);
    volley__weights__free_unpacked(msg, NULL);
    return reason;
}

/* Frees weights and their tensors' data; nulls the pointer. */
void vl_weights_destroy(vl_weights_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_weights_t *self = *self_p;
    for (uint32_t i = 0; i < self->n_tensors; i++)
        free(self->tensors[i].data);
    free(self->tensors);
    free(self);
    *self_p = NULL;
}

/* A Tensor message with room for its shape, so one allocation holds both. */
typedef struct {
    Volley__Tensor msg;
    uint32_t shape[2];
} s_tensor_msg_t;

/* Fills m from t, compressing t's data into m->msg.payload (caller frees).
   Returns 0, or -1 on invalid tensor or no memory. */
static int s_tensor_to_msg(const vl_tensor_t *t, s_tensor_msg_t *m)
{
    if (!s_name_ok(t->name, VL_TENSOR_NAME_MAX) || (t->ndim != 1 && t->ndim != 2) || t->rows == 0 ||
        t->cols == 0 || (t->ndim == 1 && t->cols != 1) || !t->data)
        return -1;
    uint64_t raw = 4 * (uint64_t)t->rows * t->cols;
    if (raw > LZ4_MAX_INPUT_SIZE)
        return -1;
    volley__tensor__init(&m->msg);
    m->shape[0] = t->rows;
    m->shape[1] = t->cols;
    m->msg.name = (char *)t->name;
    m->msg.n_shape = t->ndim;
    m->msg.shape = m->shape;
    m->msg.raw_size = (uint32_t)raw;
    m->msg.payload.data = s_compress(t->data, (size_t)raw, &m->msg.payload.len);
    return m->msg.payload.data ? 0 : -1;
}

/* Encodes tensors into a new buffer. Returns 0 and sets *out (caller frees)
   and *out_size, or -1 on invalid input or no memory. */
int vl_weights_encode(const char *policy_id, uint64_t version, const vl_tensor_t *tensors,
                      uint32_t n_tensors, uint8_t **out, size_t *out_size)
{
    if (!s_name_ok(policy_id, VL_POLICY_ID_MAX) || (n_tensors && !tensors) || !out || !out_size)
        return -1;
    int rc = -1;
    s_tensor_msg_t *msgs = calloc(n_tensors ? n_tensors : 1, sizeof *msgs);
    Volley__Tensor **ptrs = calloc(n_tensors ? n_tensors : 1, sizeof *ptrs);
    if (!msgs || !ptrs)
        goto err;
    for (uint32_t i = 0; i < n_tensors; i++) {
        if (s_tensor_to_msg(&tensors[i], &msgs[i]) != 0)
            goto err;
        ptrs[i] = &msgs[i].msg;
    }
    Volley__Weights msg = VOLLEY__WEIGHTS__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)policy_id;
    msg.version = version;
    msg.n_tensors = n_tensors;
    msg.tensors = ptrs;
    rc = s_pack(&msg.base, out, out_size);
err:
    for (uint32_t i = 0; msgs && i < n_tensors; i++)
        free(msgs[i].msg.payload.data);
    free(msgs);
    free(ptrs);
    return rc;
}

/* Encodes a Hello. Returns 0 and sets *out (caller frees), or -1. */
int vl_hello_encode(const char *policy_id, uint8_t **out, size_t *out_size)
{
    if (!s_name_ok(policy_id, VL_POLICY_ID_MAX) || !out || !out_size)
        return -1;
    Volley__Hello msg = VOLLEY__HELLO__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)policy_id;
    return s_pack(&msg.base, out, out_size);
}

/* Decodes a Hello into policy_id (written on VL_OK alone). */
vl_reason_t vl_hello_decode(const uint8_t *data, size_t size, char policy_id[VL_POLICY_ID_MAX])
{
    assert(policy_id);
    Volley__Hello *msg = volley__hello__unpack(NULL, size, data);
    if (!msg)
        return VL_EPROTO;
    vl_reason_t reason = VL_OK;
    if (msg->schema != VL_SCHEMA_VERSION)
        reason = VL_EVERSION;
    else if (!s_name_ok(msg->policy_id, VL_POLICY_ID_MAX))
        reason = VL_EPOLICY;
    else
        s_name_copy(policy_id, msg->policy_id);
    volley__hello__free_unpacked(msg, NULL);
    return reason;
}

/* Encodes stats into a new buffer. Returns 0 and sets *out (caller frees),
   or -1 on a bad policy id or no memory. */
int vl_stats_encode(const vl_stats_t *stats, uint8_t **out, size_t *out_size)
{
    if (!stats || !s_name_ok(stats->policy_id, VL_POLICY_ID_MAX) || !out || !out_size)
        return -1;
    Volley__Stats msg = VOLLEY__STATS__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)stats->policy_id;
    msg.version = stats->version;
    msg.env_steps = stats->env_steps;
    msg.episodes = stats->episodes;
    msg.mean_return = stats->mean_return;
    msg.window = stats->window;
    msg.lag_mean = stats->lag_mean;
    msg.lag_max = stats->lag_max;
    msg.policy_loss = stats->policy_loss;
    msg.value_loss = stats->value_loss;
    msg.entropy = stats->entropy;
    msg.segments_trained = stats->segments_trained;
    msg.segments_dropped = stats->segments_dropped;
    msg.uptime_s = stats->uptime_s;
    return s_pack(&msg.base, out, out_size);
}

/* Validates an unpacked Stats and copies it into stats. Returns VL_OK or
   the reason. */
static vl_reason_t s_stats_from_msg(const Volley__Stats *msg, vl_stats_t *stats)
{
    if (msg->schema != VL_SCHEMA_VERSION)
        return VL_EVERSION;
    if (!s_name_ok(msg->policy_id, VL_POLICY_ID_MAX))
        return VL_EPOLICY;
    if (!vl_float_is_finite(msg->mean_return) || !vl_float_is_finite(msg->lag_mean) ||
        !vl_float_is_finite(msg->policy_loss) || !vl_float_is_finite(msg->value_loss) ||
        !vl_float_is_finite(msg->entropy) || !s_double_is_finite(msg->uptime_s))
        return VL_ENONFINITE;
    s_name_copy(stats->policy_id, msg->policy_id);
    stats->version = msg->version;
    stats->env_steps = msg->env_steps;
    stats->episodes = msg->episodes;
    stats->mean_return = msg->mean_return;
    stats->window = msg->window;
    stats->lag_mean = msg->lag_mean;
    stats->lag_max = msg->lag_max;
    stats->policy_loss = msg->policy_loss;
    stats->value_loss = msg->value_loss;
    stats->entropy = msg->entropy;
    stats->segments_trained = msg->segments_trained;
    stats->segments_dropped = msg->segments_dropped;
    stats->uptime_s = msg->uptime_s;
    return VL_OK;
}

/* Decodes stats (floats finite). *stats is written on VL_OK alone. */
vl_reason_t vl_stats_decode(const uint8_t *data, size_t size, vl_stats_t *stats)
{
    assert(stats);
    Volley__Stats *msg = volley__stats__unpack(NULL, size, data);
    if (!msg)
        return VL_EPROTO;
    vl_stats_t tmp;
    memset(&tmp, 0, sizeof tmp);
    vl_reason_t reason = s_stats_from_msg(msg, &tmp);
    volley__stats__free_unpacked(msg, NULL);
    if (reason == VL_OK)
        *stats = tmp;
    return reason;
}
