/*  vl_obs: packing and unpacking observation fields. Unpacking is on the
    learner's ingest path, so the bit encodings go through 256-entry tables:
    one packed byte becomes 4 (u2) or 8 (u1) floats with one copy. */
#include "vl_obs.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static float s_u2_table[256][4];
static float s_u1_table[256][8];
static pthread_once_t s_tables_once = PTHREAD_ONCE_INIT;

static void s_fill_tables(void)
{
    for (int b = 0; b < 256; b++) {
        for (int i = 0; i < 4; i++)
            s_u2_table[b][i] = (float)((b >> (2 * i)) & 3);
        for (int i = 0; i < 8; i++)
            s_u1_table[b][i] = (float)((b >> i) & 1);
    }
}

vl_obs_spec_t vl_obs_spec_flat(uint32_t n)
{
    vl_obs_spec_t s = {.n_fields = 1};
    s.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {n}};
    return s;
}

const char *vl_obs_encoding_str(uint32_t encoding)
{
    static const char *names[VL_OBS_ENCODINGS] = {"f32", "u8", "u2", "u1"};
    return encoding < VL_OBS_ENCODINGS ? names[encoding] : "?";
}

/* Returns the values in a checked field (product of its shape). */
static uint32_t s_count(const vl_obs_field_t *f)
{
    uint32_t n = 1;
    for (uint32_t d = 0; d < f->ndim; d++)
        n *= f->shape[d];
    return n;
}

/* Returns the packed bytes of one observation of a field of n values. */
static uint64_t s_bytes(uint32_t encoding, uint64_t n)
{
    switch (encoding) {
    case VL_OBS_F32:
        return 4 * n;
    case VL_OBS_U8:
        return n;
    case VL_OBS_U2:
        return (n + 3) / 4;
    default:
        return (n + 7) / 8;
    }
}

/* Checks one field's rank and dims; adds its values to *dim (bounded by
   max_dim). Returns VL_OK or the reason. */
static vl_reason_t s_check_field(const vl_obs_field_t *f, uint64_t max_dim, uint64_t *dim)
{
    if (f->ndim > VL_OBS_NDIM_MAX)
        return VL_ETOOBIG;
    if (f->encoding >= VL_OBS_ENCODINGS || f->ndim == 0)
        return VL_ESHAPE;
    for (uint32_t d = 0; d < f->ndim; d++)
        if (f->shape[d] == 0)
            return VL_ESHAPE;
    uint64_t n = 1; // stays <= max_dim < 2^32, so each product fits
    for (uint32_t d = 0; d < f->ndim; d++) {
        n *= f->shape[d];
        if (n > max_dim)
            return VL_ETOOBIG;
    }
    *dim += n;
    return *dim > max_dim ? VL_ETOOBIG : VL_OK;
}

vl_reason_t vl_obs_spec_check(const vl_obs_spec_t *spec, const vl_limits_t *lim, uint32_t *dim,
                              uint32_t *wire_bytes)
{
    if (spec->n_fields == 0)
        return VL_ESHAPE;
    if (spec->n_fields > VL_OBS_FIELDS_MAX)
        return VL_ETOOBIG;
    uint64_t total = 0, bytes = 0;
    for (uint32_t i = 0; i < spec->n_fields; i++) {
        uint64_t before = total;
        vl_reason_t r = s_check_field(&spec->fields[i], lim->max_obs_dim, &total);
        if (r != VL_OK)
            return r;
        bytes += s_bytes(spec->fields[i].encoding, (uint32_t)(total - before));
    }
    if (bytes > UINT32_MAX) // 2^30 or more f32 values: wire_bytes cannot hold it
        return VL_ETOOBIG;
    *dim = (uint32_t)total;
    *wire_bytes = (uint32_t)bytes;
    return VL_OK;
}

int vl_obs_spec_equal(const vl_obs_spec_t *a, const vl_obs_spec_t *b)
{
    if (a->n_fields != b->n_fields)
        return 0;
    for (uint32_t i = 0; i < a->n_fields && i < VL_OBS_FIELDS_MAX; i++) {
        const vl_obs_field_t *x = &a->fields[i], *y = &b->fields[i];
        if (x->encoding != y->encoding || x->ndim != y->ndim ||
            memcmp(x->shape, y->shape, x->ndim * sizeof x->shape[0]) != 0)
            return 0;
    }
    return 1;
}

/* Returns v rounded to the nearest integer in [0, max]; NaN gives 0. */
static uint32_t s_quantise(float v, uint32_t max)
{
    if (!(v > 0))
        return 0;
    return v >= (float)max ? max : (uint32_t)lrintf(v);
}

/* Packs one field's n values; returns the bytes written. */
static uint32_t s_pack_field(uint32_t encoding, uint32_t n, const float *v, uint8_t *out)
{
    uint32_t bytes = s_bytes(encoding, n);
    if (encoding == VL_OBS_F32) {
        memcpy(out, v, bytes);
        return bytes;
    }
    if (encoding == VL_OBS_U8) {
        for (uint32_t i = 0; i < n; i++)
            out[i] = (uint8_t)s_quantise(v[i], 255);
        return bytes;
    }
    memset(out, 0, bytes);
    uint32_t bits = encoding == VL_OBS_U2 ? 2 : 1, per = 8 / bits;
    for (uint32_t i = 0; i < n; i++)
        out[i / per] |= (uint8_t)(s_quantise(v[i], (1u << bits) - 1) << (bits * (i % per)));
    return bytes;
}

void vl_obs_pack(const vl_obs_spec_t *spec, size_t n, const float *obs, uint8_t *out)
{
    for (size_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            uint32_t count = s_count(&spec->fields[i]);
            out += s_pack_field(spec->fields[i].encoding, count, obs, out);
            obs += count;
        }
    }
}

/* Unpacks one field's n values from in into v; returns the bytes read. */
static uint32_t s_unpack_field(uint32_t encoding, uint32_t n, const uint8_t *in, float *v)
{
    uint32_t bytes = s_bytes(encoding, n), i = 0;
    switch (encoding) {
    case VL_OBS_F32:
        memcpy(v, in, bytes);
        break;
    case VL_OBS_U8:
        for (; i < n; i++)
            v[i] = (float)in[i];
        break;
    case VL_OBS_U2:
        for (; i + 4 <= n; i += 4)
            memcpy(v + i, s_u2_table[in[i / 4]], sizeof s_u2_table[0]);
        for (; i < n; i++)
            v[i] = s_u2_table[in[i / 4]][i % 4];
        break;
    default:
        for (; i + 8 <= n; i += 8)
            memcpy(v + i, s_u1_table[in[i / 8]], sizeof s_u1_table[0]);
        for (; i < n; i++)
            v[i] = s_u1_table[in[i / 8]][i % 8];
        break;
    }
    return bytes;
}

void vl_obs_unpack(const vl_obs_spec_t *spec, size_t n, const uint8_t *in, float *obs)
{
    pthread_once(&s_tables_once, s_fill_tables);
    for (size_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            uint32_t count = s_count(&spec->fields[i]);
            in += s_unpack_field(spec->fields[i].encoding, count, in, obs);
            obs += count;
        }
    }
}
