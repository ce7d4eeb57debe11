/*  vl_obs: observation fields in their three forms.

    - floats: what environments write and networks read, fields in order;
    - rows: what segments and the learner's buffer hold, one row per
      observation: an f32 field as its floats, any other field one byte a
      value, each field starting 4-byte aligned (so an all-f32 row is exactly
      its floats);
    - wire: each field packed (u2 four values a byte, u1 eight), padded to a
      whole byte.

    The learner's ingest path turns wire into rows through 256-entry tables
    (a packed byte becomes 4 or 8 bytes with one store); rows become floats
    only when a batch is gathered. */
#include "vl_obs.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Where one field lives in the three forms. */
typedef struct {
    uint32_t encoding;
    uint32_t count; // values
    uint32_t wire;  // packed bytes
    uint32_t row;   // offset of the field in a row
} s_field_t;

static uint32_t s_u2_table[256]; // packed byte -> four value bytes
static uint64_t s_u1_table[256]; // packed byte -> eight flag bytes
static pthread_once_t s_tables_once = PTHREAD_ONCE_INIT;

static void s_fill_tables(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        for (uint32_t i = 0; i < 4; i++)
            s_u2_table[b] |= ((b >> (2 * i)) & 3u) << (8 * i);
        for (uint32_t i = 0; i < 8; i++)
            s_u1_table[b] |= (uint64_t)((b >> i) & 1u) << (8 * i);
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

/* Returns the packed bytes of one observation of a field of n values. */
static uint64_t s_wire_bytes(uint32_t encoding, uint64_t n)
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

/* Fills the layout of a checked spec; returns the row bytes. */
static uint32_t s_layout(const vl_obs_spec_t *spec, s_field_t *out)
{
    uint32_t row = 0;
    for (uint32_t i = 0; i < spec->n_fields; i++) {
        const vl_obs_field_t *f = &spec->fields[i];
        uint32_t n = 1;
        for (uint32_t d = 0; d < f->ndim; d++)
            n *= f->shape[d];
        out[i] = (s_field_t){f->encoding, n, (uint32_t)s_wire_bytes(f->encoding, n), row};
        row += (f->encoding == VL_OBS_F32 ? 4 * n : (n + 3) & ~3u);
    }
    return row;
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
    uint64_t total = 0, bytes = 0, row = 0;
    for (uint32_t i = 0; i < spec->n_fields; i++) {
        uint64_t before = total;
        vl_reason_t r = s_check_field(&spec->fields[i], lim->max_obs_dim, &total);
        if (r != VL_OK)
            return r;
        uint64_t n = total - before;
        bytes += s_wire_bytes(spec->fields[i].encoding, n);
        row += spec->fields[i].encoding == VL_OBS_F32 ? 4 * n : (n + 3) & ~3ull;
    }
    if (bytes > UINT32_MAX || row > UINT32_MAX) // sizes are 32-bit everywhere after this
        return VL_ETOOBIG;
    *dim = (uint32_t)total;
    *wire_bytes = (uint32_t)bytes;
    return VL_OK;
}

uint32_t vl_obs_row_bytes(const vl_obs_spec_t *spec)
{
    s_field_t l[VL_OBS_FIELDS_MAX];
    return s_layout(spec, l);
}

int vl_obs_spec_equal(const vl_obs_spec_t *a, const vl_obs_spec_t *b)
{
    if (a->n_fields != b->n_fields)
        return 0;
    for (uint32_t i = 0; i < a->n_fields && i < VL_OBS_FIELDS_MAX; i++) {
        const vl_obs_field_t *x = &a->fields[i], *y = &b->fields[i];
        if (x->encoding != y->encoding || x->ndim != y->ndim || x->ndim > VL_OBS_NDIM_MAX ||
            memcmp(x->shape, y->shape, x->ndim * sizeof x->shape[0]) != 0)
            return 0;
    }
    return 1;
}

/* Returns v rounded to the nearest integer in [0, max]; NaN gives 0. */
static uint8_t s_quantise(float v, uint32_t max)
{
    if (!(v > 0))
        return 0;
    return (uint8_t)(v >= (float)max ? max : (uint32_t)lrintf(v));
}

void vl_obs_to_rows(const vl_obs_spec_t *spec, size_t n, const float *obs, uint8_t *rows)
{
    s_field_t l[VL_OBS_FIELDS_MAX];
    uint32_t row = s_layout(spec, l);
    static const uint32_t max[VL_OBS_ENCODINGS] = {0, 255, 3, 1};
    for (size_t k = 0; k < n; k++, rows += row) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            if (l[i].encoding == VL_OBS_F32)
                memcpy(rows + l[i].row, obs, 4 * l[i].count);
            else
                for (uint32_t j = 0; j < l[i].count; j++)
                    rows[l[i].row + j] = s_quantise(obs[j], max[l[i].encoding]);
            obs += l[i].count;
        }
    }
}

void vl_obs_from_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows, float *obs)
{
    s_field_t l[VL_OBS_FIELDS_MAX];
    uint32_t row = s_layout(spec, l);
    for (size_t k = 0; k < n; k++, rows += row) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            const uint8_t *in = rows + l[i].row;
            if (l[i].encoding == VL_OBS_F32)
                memcpy(obs, in, 4 * l[i].count);
            else
                for (uint32_t j = 0; j < l[i].count; j++)
                    obs[j] = (float)in[j];
            obs += l[i].count;
        }
    }
}

/* Packs one field's row bytes into wire bytes. */
static void s_pack_field(const s_field_t *f, const uint8_t *in, uint8_t *out)
{
    uint32_t n = f->count;
    if (f->encoding == VL_OBS_F32 || f->encoding == VL_OBS_U8) {
        memcpy(out, in, f->wire);
        return;
    }
    uint32_t bits = f->encoding == VL_OBS_U2 ? 2 : 1, per = 8 / bits, mask = (1u << bits) - 1;
    for (uint32_t b = 0; b < f->wire; b++) {
        uint32_t byte = 0;
        for (uint32_t i = 0; i < per && b * per + i < n; i++)
            byte |= (in[b * per + i] & mask) << (bits * i);
        out[b] = (uint8_t)byte;
    }
}

void vl_obs_pack_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows, uint8_t *wire)
{
    s_field_t l[VL_OBS_FIELDS_MAX];
    uint32_t row = s_layout(spec, l);
    for (size_t k = 0; k < n; k++, rows += row) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            s_pack_field(&l[i], rows + l[i].row, wire);
            wire += l[i].wire;
        }
    }
}

#ifdef __SSE2__
#include <emmintrin.h>

/* Expands 16 packed u2 bytes into 64 value bytes with SSE2: the four 2-bit
   planes are masked out, then interleaved back into value order. */
static void s_u2_expand16(const uint8_t *in, uint8_t *out)
{
    const __m128i three = _mm_set1_epi8(3);
    __m128i v = _mm_loadu_si128((const __m128i *)in);
    __m128i p0 = _mm_and_si128(v, three), p1 = _mm_and_si128(_mm_srli_epi16(v, 2), three);
    __m128i p2 = _mm_and_si128(_mm_srli_epi16(v, 4), three);
    __m128i p3 = _mm_and_si128(_mm_srli_epi16(v, 6), three);
    __m128i lo01 = _mm_unpacklo_epi8(p0, p1), hi01 = _mm_unpackhi_epi8(p0, p1);
    __m128i lo23 = _mm_unpacklo_epi8(p2, p3), hi23 = _mm_unpackhi_epi8(p2, p3);
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(out + 32), _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128((__m128i *)(out + 48), _mm_unpackhi_epi16(hi01, hi23));
}

/* Expands 16 packed u1 bytes into 128 flag bytes with SSE2. */
static void s_u1_expand16(const uint8_t *in, uint8_t *out)
{
    const __m128i one = _mm_set1_epi8(1);
    __m128i v = _mm_loadu_si128((const __m128i *)in), b[8];
    for (int i = 0; i < 8; i++)
        b[i] = _mm_and_si128(_mm_srli_epi16(v, i), one);
    __m128i q[8], r[8];
    for (int i = 0; i < 4; i++) { // pairs of bits: (0,1) (2,3) (4,5) (6,7)
        q[2 * i] = _mm_unpacklo_epi8(b[2 * i], b[2 * i + 1]);
        q[2 * i + 1] = _mm_unpackhi_epi8(b[2 * i], b[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) { // quads: (0..3) (4..7), low and high halves
        r[4 * i] = _mm_unpacklo_epi16(q[4 * i], q[4 * i + 2]);
        r[4 * i + 1] = _mm_unpackhi_epi16(q[4 * i], q[4 * i + 2]);
        r[4 * i + 2] = _mm_unpacklo_epi16(q[4 * i + 1], q[4 * i + 3]);
        r[4 * i + 3] = _mm_unpackhi_epi16(q[4 * i + 1], q[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) { // eights: bits 0..3 from r[i], 4..7 from r[4 + i]
        _mm_storeu_si128((__m128i *)(out + 32 * i), _mm_unpacklo_epi32(r[i], r[4 + i]));
        _mm_storeu_si128((__m128i *)(out + 32 * i + 16), _mm_unpackhi_epi32(r[i], r[4 + i]));
    }
}
#endif

/* Unpacks one field's wire bytes into row bytes. */
static void s_unpack_field(const s_field_t *f, const uint8_t *in, uint8_t *out)
{
    uint32_t n = f->count, i = 0;
    if (f->encoding == VL_OBS_F32 || f->encoding == VL_OBS_U8) {
        memcpy(out, in, f->wire);
    } else if (f->encoding == VL_OBS_U2) {
#ifdef __SSE2__
        for (; i + 64 <= n; i += 64)
            s_u2_expand16(in + i / 4, out + i);
#endif
        for (; i + 4 <= n; i += 4)
            memcpy(out + i, &s_u2_table[in[i / 4]], 4);
        for (; i < n; i++)
            out[i] = (uint8_t)(s_u2_table[in[i / 4]] >> (8 * (i % 4)));
    } else {
#ifdef __SSE2__
        for (; i + 128 <= n; i += 128)
            s_u1_expand16(in + i / 8, out + i);
#endif
        for (; i + 8 <= n; i += 8)
            memcpy(out + i, &s_u1_table[in[i / 8]], 8);
        for (; i < n; i++)
            out[i] = (uint8_t)(s_u1_table[in[i / 8]] >> (8 * (i % 8)));
    }
}

void vl_obs_unpack_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *wire, uint8_t *rows)
{
    pthread_once(&s_tables_once, s_fill_tables);
    s_field_t l[VL_OBS_FIELDS_MAX];
    uint32_t row = s_layout(spec, l);
    if (spec->n_fields == 1 && l[0].encoding == VL_OBS_F32) {
        memcpy(rows, wire, n * row); // an all-f32 row is its wire bytes
        return;
    }
    for (size_t k = 0; k < n; k++, rows += row) {
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            s_unpack_field(&l[i], wire, rows + l[i].row);
            wire += l[i].wire;
        }
    }
}

int vl_obs_pack(const vl_obs_spec_t *spec, size_t n, const float *obs, uint8_t *out)
{
    uint32_t row = vl_obs_row_bytes(spec);
    uint8_t *rows = malloc(n * row + 1);
    if (!rows)
        return -1;
    vl_obs_to_rows(spec, n, obs, rows);
    vl_obs_pack_rows(spec, n, rows, out);
    free(rows);
    return 0;
}

int vl_obs_unpack(const vl_obs_spec_t *spec, size_t n, const uint8_t *in, float *obs)
{
    uint32_t row = vl_obs_row_bytes(spec);
    uint8_t *rows = malloc(n * row + 1);
    if (!rows)
        return -1;
    vl_obs_unpack_rows(spec, n, in, rows);
    vl_obs_from_rows(spec, n, rows, obs);
    free(rows);
    return 0;
}

int vl_obs_rows_finite(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows)
{
    s_field_t l[VL_OBS_FIELDS_MAX];
    uint32_t row = s_layout(spec, l);
    if (spec->n_fields == 1 && l[0].encoding == VL_OBS_F32)
        return vl_wire_all_finite((const float *)rows, n * l[0].count);
    for (size_t k = 0; k < n; k++, rows += row)
        for (uint32_t i = 0; i < spec->n_fields; i++)
            if (l[i].encoding == VL_OBS_F32 &&
                !vl_wire_all_finite((const float *)(rows + l[i].row), l[i].count))
                return 0;
    return 1;
}
