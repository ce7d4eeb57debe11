/*  vl_wire: reasons, limits and the checks every decoder is built from. */
#include "vl_wire.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "volley payloads are little-endian arrays copied as is; this host is big-endian"
#endif

// An LZ4 sequence costs at least one byte per 255 bytes it produces, so a
// block of n bytes never decompresses to more than 255 * n.
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

const char *vl_reason_str(vl_reason_t reason)
{
    if ((unsigned)reason >= VL_EREASONS)
        return "unknown";
    return s_reason_names[reason];
}

vl_limits_t vl_limits_default(void)
{
    return (vl_limits_t){.max_horizon = 4096,
                         .max_obs_dim = 1u << 16,
                         .max_actions = 1024,
                         .max_tensors = 64,
                         .max_tensor_elems = 1u << 24,
                         .max_raw_bytes = 64u << 20};
}

int vl_float_is_finite(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (bits & 0x7f800000u) != 0x7f800000u;
}

int vl_double_is_finite(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

int vl_wire_all_finite(const float *x, size_t n)
{
    // An all-ones exponent plus one exponent step carries into bit 31; any
    // other exponent does not. Blocks of exactly 8 let gcc -O2 vectorise.
    uint32_t carry = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint32_t bits[8];
        memcpy(bits, x + i, sizeof bits);
        for (int k = 0; k < 8; k++)
            carry |= (bits[k] & 0x7f800000u) + 0x00800000u;
    }
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        carry |= (bits & 0x7f800000u) + 0x00800000u;
    }
    return !(carry & 0x80000000u);
}

int vl_wire_name_ok(const char *s, size_t cap)
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

int vl_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

// volley.proto nests a few levels deep; deeper input is refused, not recursed.
#define S_MAX_DEPTH 8

/* Walks one encoded message of type desc: 1 if no string field in it holds a NUL. */
static int s_strings_whole(const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                           const uint8_t *end, int depth)
{
    while (p < end) {
        uint64_t key, v;
        if (vl_wire_varint(&p, end, &key) != 0)
            return 0;
        unsigned type = (unsigned)(key & 7);
        if (type == 0 && vl_wire_varint(&p, end, &v) == 0)
            continue;
        if ((type == 1 || type == 5) && (size_t)(end - p) >= (type == 1 ? 8u : 4u)) {
            p += type == 1 ? 8 : 4;
            continue;
        }
        if (type != 2 || vl_wire_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p))
            return 0;
        const ProtobufCFieldDescriptor *f =
            key >> 3 <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
                : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, v))
            return 0;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
            (depth >= S_MAX_DEPTH || !s_strings_whole(f->descriptor, p, p + v, depth + 1)))
            return 0;
        p += v;
    }
    return 1;
}

int vl_wire_strings_whole(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size)
{
    return desc && (size == 0 || data) && s_strings_whole(desc, data, data + size, 0);
}

void *vl_wire_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
                     vl_reason_t *reason)
{
    ProtobufCMessage *msg = protobuf_c_message_unpack(desc, NULL, size, data);
    *reason = msg ? VL_OK : VL_EPROTO;
    if (msg && !vl_wire_strings_whole(desc, data, size)) {
        protobuf_c_message_free_unpacked(msg, NULL);
        msg = NULL;
        *reason = VL_EPOLICY;
    }
    return msg;
}

vl_reason_t vl_wire_check_head(uint32_t schema, const char *policy_id)
{
    if (schema < VL_SCHEMA_OLDEST || schema > VL_SCHEMA_VERSION)
        return VL_EVERSION;
    if (!vl_policy_id_ok(policy_id))
        return VL_EPOLICY;
    return VL_OK;
}

vl_reason_t vl_wire_check_block(const vl_limits_t *lim, uint64_t expected, uint32_t raw_size,
                                size_t len)
{
    if (expected > lim->max_raw_bytes || expected > LZ4_MAX_INPUT_SIZE)
        return VL_ETOOBIG;
    if (raw_size != expected)
        return VL_ESHAPE;
    if (len == 0 || len > (size_t)LZ4_compressBound((int)raw_size))
        return VL_ELZ4;
    if ((uint64_t)raw_size > (uint64_t)len * S_LZ4_MAX_RATIO)
        return VL_ELZ4;
    return VL_OK;
}

vl_reason_t vl_wire_decompress(const uint8_t *block, size_t len, uint32_t raw_size, void *dst)
{
    int n = LZ4_decompress_safe((const char *)block, dst, (int)len, (int)raw_size);
    return n >= 0 && (uint32_t)n == raw_size ? VL_OK : VL_ELZ4;
}

uint8_t *vl_wire_compress(const void *src, size_t n, size_t *len)
{
    if (n > LZ4_MAX_INPUT_SIZE)
        return NULL;
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

int vl_wire_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *out_size)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return -1;
    *out_size = protobuf_c_message_pack(msg, buf);
    *out = buf;
    return 0;
}
