/*  vl_obs_test: observation specs and packing. Every encoding round trips at
    odd sizes and several observations in a row (so the padding that ends
    each observation's field is crossed); the bit order is pinned byte for
    byte; quantisation rounds and clamps as vl_obs.h promises; a spec from the
    wire is refused for its own reason, overflowing products included. */
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_obs.h"

#define S_GUARD   16    // bytes (or floats) past every buffer, checked untouched
#define S_POISON  0xa5u // what the guard bytes hold
#define S_SENTRY  -7.0f // what the guard floats hold
#define S_N_OBS   3     // observations in a row in the round trips
#define S_N_SIZES 8

/* Field sizes: under, at and over a byte's worth of u2 (4) and u1 (8) values,
   and one that ends a long field with a partial byte. */
static const uint32_t s_sizes[S_N_SIZES] = {1, 3, 5, 7, 8, 9, 13, 4097};

/* Returns a spec of one field of the given encoding, rank and dims. */
static vl_obs_spec_t s_spec1(uint32_t encoding, uint32_t ndim, const uint32_t *dims)
{
    vl_obs_spec_t s = {.n_fields = 1};
    s.fields[0].encoding = encoding;
    s.fields[0].ndim = ndim;
    memcpy(s.fields[0].shape, dims, (ndim < VL_OBS_NDIM_MAX ? ndim : VL_OBS_NDIM_MAX) * 4);
    return s;
}

/* Appends a field to spec (no checks: specs here may be meant to be bad). */
static void s_add(vl_obs_spec_t *spec, uint32_t encoding, uint32_t ndim, const uint32_t *dims)
{
    spec->fields[spec->n_fields++] = s_spec1(encoding, ndim, dims).fields[0];
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
   range, any finite float for f32. */
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
        return (float)(1e3 * vl_rng_normal(rng));
    }
}

/* Returns the bits a field of n values leaves unused in its last packed
   byte, as a mask (0 for f32, u8 and whole bytes). */
static uint8_t s_padding_mask(uint32_t encoding, size_t n)
{
    size_t bits = encoding == VL_OBS_U2 ? 2 : encoding == VL_OBS_U1 ? 1 : 0;
    size_t used = bits * n % 8;
    return bits && used ? (uint8_t)(0xffu << used) : 0;
}

/* Packs n_obs random valid observations of spec and unpacks them: checks
   the packed size is n_obs * wire_bytes exactly, padding bits are zero,
   the values come back bit for bit, nothing past either buffer is written,
   and setting the padding bits changes nothing on unpacking. */
static void s_check_round_trip(const vl_obs_spec_t *spec, size_t n_obs, uint64_t seed)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0;
    VL_CHECK(vl_obs_spec_check(spec, &lim, &dim, &wire) == VL_OK);
    size_t n_values = n_obs * dim, n_bytes = n_obs * wire;
    float *in = malloc(n_values * sizeof(float));
    float *out = malloc((n_values + S_GUARD) * sizeof(float));
    uint8_t *packed = malloc(n_bytes + S_GUARD);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t k = 0, v = 0; k < n_obs; k++)
        for (uint32_t i = 0; i < spec->n_fields; i++)
            for (size_t j = 0; j < s_count(&spec->fields[i]); j++)
                in[v++] = s_valid_value(&rng, spec->fields[i].encoding);
    memset(packed, S_POISON, n_bytes + S_GUARD);
    vl_obs_pack(spec, n_obs, in, packed);
    int guard_ok = 1, padding_zero = 1, same = 1, same_dirty = 1;
    for (size_t b = n_bytes; b < n_bytes + S_GUARD; b++)
        guard_ok &= packed[b] == S_POISON;
    for (size_t i = 0; i < n_values + S_GUARD; i++)
        out[i] = S_SENTRY;
    vl_obs_unpack(spec, n_obs, packed, out);
    same = memcmp(in, out, n_values * sizeof(float)) == 0;
    for (size_t i = n_values; i < n_values + S_GUARD; i++)
        guard_ok &= out[i] == S_SENTRY;
    uint8_t *p = packed; // set every padding bit, then unpack again
    for (size_t k = 0; k < n_obs; k++)
        for (uint32_t i = 0; i < spec->n_fields; i++) {
            const vl_obs_field_t *f = &spec->fields[i];
            size_t n = s_count(f);
            size_t bytes = f->encoding == VL_OBS_F32  ? 4 * n
                           : f->encoding == VL_OBS_U8 ? n
                           : f->encoding == VL_OBS_U2 ? (n + 3) / 4
                                                      : (n + 7) / 8;
            uint8_t mask = s_padding_mask(f->encoding, n);
            padding_zero &= (p[bytes - 1] & mask) == 0;
            p[bytes - 1] |= mask;
            p += bytes;
        }
    vl_obs_unpack(spec, n_obs, packed, out);
    same_dirty = memcmp(in, out, n_values * sizeof(float)) == 0;
    int layout_ok = p == packed + n_bytes; // the test's own layout agrees with wire_bytes
    free(in);
    free(out);
    free(packed);
    VL_CHECK(layout_ok);
    VL_CHECK(guard_ok);
    VL_CHECK(same);
    VL_CHECK(padding_zero);
    VL_CHECK(same_dirty);
}

static void test_round_trip_every_encoding(void)
{
    for (uint32_t enc = 0; enc < VL_OBS_ENCODINGS; enc++)
        for (int s = 0; s < S_N_SIZES; s++) {
            vl_obs_spec_t spec = s_spec1(enc, 1, &s_sizes[s]);
            s_check_round_trip(&spec, S_N_OBS, 100 * enc + (uint64_t)s);
            if (vl_test_case_failed) {
                fprintf(stderr, "  encoding %s, %u values\n", vl_obs_encoding_str(enc), s_sizes[s]);
                return;
            }
        }
}

/* The same fields in higher ranks: only the product of the shape counts. */
static void test_round_trip_ranks(void)
{
    const uint32_t dims[][4] = {{5, 3}, {3, 1, 3}, {1, 1, 1, 13}, {7, 3, 2, 1}};
    const uint32_t ndim[] = {2, 3, 4, 4};
    for (uint32_t enc = 0; enc < VL_OBS_ENCODINGS; enc++)
        for (int s = 0; s < 4; s++) {
            vl_obs_spec_t spec = s_spec1(enc, ndim[s], dims[s]);
            s_check_round_trip(&spec, S_N_OBS, 1000 + 10 * enc + (uint64_t)s);
            if (vl_test_case_failed)
                return;
        }
}

/* Odd fields after odd fields: each is padded to a byte of its own. */
static void test_round_trip_mixed(void)
{
    vl_obs_spec_t spec = {0};
    s_add(&spec, VL_OBS_U2, 2, (const uint32_t[]){5, 3});
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){13});
    s_add(&spec, VL_OBS_F32, 1, (const uint32_t[]){3});
    s_add(&spec, VL_OBS_U8, 1, (const uint32_t[]){7});
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){1});
    s_add(&spec, VL_OBS_U2, 1, (const uint32_t[]){1});
    s_add(&spec, VL_OBS_U1, 2, (const uint32_t[]){3, 3});
    s_add(&spec, VL_OBS_U2, 1, (const uint32_t[]){9}); // VL_OBS_FIELDS_MAX fields
    s_check_round_trip(&spec, S_N_OBS, 77);
    s_check_round_trip(&spec, 1, 78);
    vl_obs_spec_t pixels = {0}; // a 2-bit screen, a bit vector and a small f32 vector
    s_add(&pixels, VL_OBS_U2, 2, (const uint32_t[]){72, 80});
    s_add(&pixels, VL_OBS_U1, 1, (const uint32_t[]){2048});
    s_add(&pixels, VL_OBS_F32, 1, (const uint32_t[]){3});
    s_check_round_trip(&pixels, S_N_OBS, 79);
}

/* Two observations of a u2 field of 6 values: value i is bits 2 * (i % 4)
   of byte i / 4, and each observation starts on a byte of its own. */
static void test_u2_bytes_exact(void)
{
    vl_obs_spec_t spec = s_spec1(VL_OBS_U2, 1, (const uint32_t[]){6});
    const float in[12] = {1, 2, 3, 0, 3, 1, /* */ 0, 0, 0, 3, 2, 2};
    const uint8_t want[4] = {0x39, 0x07, 0xc0, 0x0a}; // 1|2<<2|3<<4, 3|1<<2, 3<<6, 2|2<<2
    uint8_t got[4 + S_GUARD];
    memset(got, S_POISON, sizeof got);
    vl_obs_pack(&spec, 2, in, got);
    VL_CHECK(memcmp(got, want, sizeof want) == 0);
    VL_CHECK(got[4] == S_POISON);
    float back[12];
    vl_obs_unpack(&spec, 2, want, back);
    VL_CHECK(memcmp(back, in, sizeof in) == 0);
}

/* Two observations of a u1 field of 11 flags: flag i is bit i % 8 of byte
   i / 8. */
static void test_u1_bytes_exact(void)
{
    vl_obs_spec_t spec = s_spec1(VL_OBS_U1, 1, (const uint32_t[]){11});
    const float in[22] = {1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, /* */ 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
    const uint8_t want[4] = {0x8d, 0x06, 0x00, 0x01};
    uint8_t got[4 + S_GUARD];
    memset(got, S_POISON, sizeof got);
    vl_obs_pack(&spec, 2, in, got);
    VL_CHECK(memcmp(got, want, sizeof want) == 0);
    VL_CHECK(got[4] == S_POISON);
    float back[22];
    vl_obs_unpack(&spec, 2, want, back);
    VL_CHECK(memcmp(back, in, sizeof in) == 0);
}

/* One observation of u1 [3], u2 [3], u8 [2], f32 [1]: fields in declared
   order, each padded to a byte, f32 little-endian. */
static void test_mixed_bytes_exact(void)
{
    vl_obs_spec_t spec = {0};
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){3});
    s_add(&spec, VL_OBS_U2, 1, (const uint32_t[]){3});
    s_add(&spec, VL_OBS_U8, 1, (const uint32_t[]){2});
    s_add(&spec, VL_OBS_F32, 1, (const uint32_t[]){1});
    const float in[9] = {1, 0, 1, 3, 0, 2, 9, 200, -2.0f};
    const uint8_t want[8] = {0x05, 0x23, 9, 200, 0x00, 0x00, 0x00, 0xc0};
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0;
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 9 && wire == 8);
    uint8_t got[8 + S_GUARD];
    memset(got, S_POISON, sizeof got);
    vl_obs_pack(&spec, 1, in, got);
    VL_CHECK(memcmp(got, want, sizeof want) == 0);
    VL_CHECK(got[8] == S_POISON);
    float back[9];
    vl_obs_unpack(&spec, 1, want, back);
    VL_CHECK(memcmp(back, in, sizeof in) == 0);
}

/* Returns what the receiver sees for v sent as one value of the encoding. */
static float s_sent(uint32_t encoding, float v)
{
    vl_obs_spec_t spec = s_spec1(encoding, 1, (const uint32_t[]){1});
    uint8_t packed[4];
    float out;
    vl_obs_pack(&spec, 1, &v, packed);
    vl_obs_unpack(&spec, 1, packed, &out);
    return out;
}

/* Returns 1 if v sent as the encoding arrives as lo or hi (a tie rounds to
   either neighbour: vl_obs.h says "round to nearest" only). */
static int s_sent_either(uint32_t encoding, float v, float lo, float hi)
{
    float got = s_sent(encoding, v);
    return got == lo || got == hi;
}

static void test_quantise_u8(void)
{
    VL_CHECK(s_sent(VL_OBS_U8, -3.0f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 300.0f) == 255.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 2.6f) == 3.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 2.4f) == 2.0f);
    VL_CHECK(s_sent(VL_OBS_U8, NAN) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U8, -NAN) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U8, INFINITY) == 255.0f);
    VL_CHECK(s_sent(VL_OBS_U8, -INFINITY) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 1e30f) == 255.0f);
    VL_CHECK(s_sent(VL_OBS_U8, -0.4f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 0.51f) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 254.6f) == 255.0f);
    VL_CHECK(s_sent(VL_OBS_U8, 255.4f) == 255.0f);
    VL_CHECK(s_sent_either(VL_OBS_U8, 2.5f, 2.0f, 3.0f));
    for (int v = 0; v < 256; v++) // every value it can carry, exactly
        VL_CHECK(s_sent(VL_OBS_U8, (float)v) == (float)v);
}

static void test_quantise_u2(void)
{
    VL_CHECK(s_sent(VL_OBS_U2, -1.0f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U2, 5.0f) == 3.0f);
    VL_CHECK(s_sent(VL_OBS_U2, 1.4f) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U2, 1.6f) == 2.0f);
    VL_CHECK(s_sent(VL_OBS_U2, 2.6f) == 3.0f);
    VL_CHECK(s_sent(VL_OBS_U2, 3.4f) == 3.0f);
    VL_CHECK(s_sent(VL_OBS_U2, NAN) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U2, INFINITY) == 3.0f);
    VL_CHECK(s_sent(VL_OBS_U2, -INFINITY) == 0.0f);
    VL_CHECK(s_sent_either(VL_OBS_U2, 0.5f, 0.0f, 1.0f));
    for (int v = 0; v < 4; v++)
        VL_CHECK(s_sent(VL_OBS_U2, (float)v) == (float)v);
}

/* u1 rounds and clamps like the other integer encodings (vl_obs.h): a flag
   of 0.3 or -1 is sent as 0, not as "nonzero, so 1". */
static void test_quantise_u1(void)
{
    VL_CHECK(s_sent(VL_OBS_U1, 0.0f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U1, 1.0f) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U1, 0.7f) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U1, 5.0f) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U1, 0.3f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U1, -1.0f) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U1, NAN) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U1, INFINITY) == 1.0f);
    VL_CHECK(s_sent(VL_OBS_U1, -INFINITY) == 0.0f);
    VL_CHECK(s_sent(VL_OBS_U1, -0.0f) == 0.0f);
}

/* Quantising one value never disturbs its neighbours in the same byte. */
static void test_quantise_in_place(void)
{
    vl_obs_spec_t spec = s_spec1(VL_OBS_U2, 1, (const uint32_t[]){4});
    const float in[4] = {3, 99, -5, 3};
    uint8_t packed;
    vl_obs_pack(&spec, 1, in, &packed);
    VL_CHECK(packed == (3 | 3 << 2 | 0 << 4 | 3 << 6));
    vl_obs_spec_t flags = s_spec1(VL_OBS_U1, 1, (const uint32_t[]){8});
    const float f[8] = {1, 7, NAN, 1, -2, 0, 1, 1};
    vl_obs_pack(&flags, 1, f, &packed);
    VL_CHECK(packed == 0xcb); // bits 0, 1, 3, 6, 7
}

/* f32 values travel as they are, non-finite ones included (the segment
   decoder, not vl_obs, refuses those). */
static void test_f32_copied_unchecked(void)
{
    vl_obs_spec_t spec = s_spec1(VL_OBS_F32, 1, (const uint32_t[]){5});
    const float in[5] = {NAN, -INFINITY, -0.0f, 1e-45f, 3.4028235e38f};
    uint8_t packed[20];
    float out[5];
    vl_obs_pack(&spec, 1, in, packed);
    VL_CHECK(memcmp(packed, in, sizeof packed) == 0);
    vl_obs_unpack(&spec, 1, packed, out);
    VL_CHECK(memcmp(out, in, sizeof out) == 0);
}

static void test_spec_flat_and_names(void)
{
    vl_obs_spec_t s = vl_obs_spec_flat(4);
    VL_CHECK(s.n_fields == 1 && s.fields[0].encoding == VL_OBS_F32);
    VL_CHECK(s.fields[0].ndim == 1 && s.fields[0].shape[0] == 4);
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0;
    VL_CHECK(vl_obs_spec_check(&s, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 4 && wire == 16);
    VL_CHECK(strcmp(vl_obs_encoding_str(VL_OBS_F32), "f32") == 0);
    VL_CHECK(strcmp(vl_obs_encoding_str(VL_OBS_U8), "u8") == 0);
    VL_CHECK(strcmp(vl_obs_encoding_str(VL_OBS_U2), "u2") == 0);
    VL_CHECK(strcmp(vl_obs_encoding_str(VL_OBS_U1), "u1") == 0);
    VL_CHECK(strcmp(vl_obs_encoding_str(VL_OBS_ENCODINGS), "?") == 0);
    VL_CHECK(strcmp(vl_obs_encoding_str(UINT32_MAX), "?") == 0);
}

/* Returns vl_obs_spec_check's reason for spec under lim. */
static vl_reason_t s_check(const vl_obs_spec_t *spec, const vl_limits_t *lim)
{
    uint32_t dim, wire;
    return vl_obs_spec_check(spec, lim, &dim, &wire);
}

static void test_spec_check_counts(void)
{
    vl_limits_t lim = vl_limits_default();
    const uint32_t one[] = {1};
    vl_obs_spec_t spec = {0};
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE); // no fields
    for (int i = 0; i < VL_OBS_FIELDS_MAX; i++)
        s_add(&spec, VL_OBS_U1, 1, one);
    VL_CHECK(s_check(&spec, &lim) == VL_OK); // 8 fields: the most allowed
    spec.n_fields = VL_OBS_FIELDS_MAX + 1;
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec.n_fields = UINT32_MAX;
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
}

static void test_spec_check_fields(void)
{
    vl_limits_t lim = vl_limits_default();
    vl_obs_spec_t spec = s_spec1(VL_OBS_U1, 4, (const uint32_t[]){2, 3, 1, 1});
    VL_CHECK(s_check(&spec, &lim) == VL_OK);    // the control: rank 4, 6 values
    spec.fields[0].encoding = VL_OBS_ENCODINGS; // 4
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
    spec.fields[0].encoding = UINT32_MAX;
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
    spec.fields[0].encoding = VL_OBS_U1;
    spec.fields[0].ndim = 0;
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
    spec.fields[0].ndim = VL_OBS_NDIM_MAX + 1;
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec.fields[0].ndim = UINT32_MAX;
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec = s_spec1(VL_OBS_U8, 2, (const uint32_t[]){3, 0});
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
    spec = s_spec1(VL_OBS_U8, 3, (const uint32_t[]){1u << 20, 1u << 20, 0}); // zeros first
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
    spec = s_spec1(VL_OBS_U8, 1, (const uint32_t[]){1}); // a bad field after a good one
    s_add(&spec, VL_OBS_U2, 2, (const uint32_t[]){4, 0});
    VL_CHECK(s_check(&spec, &lim) == VL_ESHAPE);
}

/* Products and sums that wrap in 32 (or 64) bits must still be too big. */
static void test_spec_check_too_many_values(void)
{
    vl_limits_t lim = vl_limits_default(); // max_obs_dim 1 << 16
    vl_obs_spec_t spec = s_spec1(VL_OBS_U1, 2, (const uint32_t[]){65536, 65536}); // 2^32
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec = s_spec1(VL_OBS_U1, 4, (const uint32_t[]){65536, 65536, 65536, 65536}); // 2^64
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec = s_spec1(VL_OBS_U1, 2, (const uint32_t[]){256, 257}); // one row over
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec = s_spec1(VL_OBS_U1, 2, (const uint32_t[]){256, 256}); // exactly the limit
    VL_CHECK(s_check(&spec, &lim) == VL_OK);
    spec = s_spec1(VL_OBS_F32, 1, (const uint32_t[]){32768});
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){32769}); // the sum is over
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec.fields[1].shape[0] = 32768;
    uint32_t dim = 0, wire = 0;
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 65536 && wire == 4 * 32768 + 32768 / 8);
    lim.max_obs_dim = UINT32_MAX; // two fields of 2^32 - 2^16 values: the sum wraps 32 bits
    spec = s_spec1(VL_OBS_U1, 2, (const uint32_t[]){65536, 65535});
    VL_CHECK(s_check(&spec, &lim) == VL_OK);
    s_add(&spec, VL_OBS_U1, 2, (const uint32_t[]){65536, 65535});
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
}

/* At the largest limit no size may wrap: a u1 or u2 field of 2^32 - 4
   values packs to 2^29 or 2^30 - 1 bytes; 2^32 - 1 values would need a
   2^32-byte row and 2^30 f32 values 2^32 wire bytes, which 32 bits cannot
   hold. */
static void test_spec_check_wire_bytes_overflow(void)
{
    vl_limits_t lim = vl_limits_default();
    lim.max_obs_dim = UINT32_MAX;
    uint32_t dim = 0, wire = 0;
    // 2^32 - 1 values: packed they fit, but a row (a byte a value, 4-aligned) would not
    vl_obs_spec_t spec = s_spec1(VL_OBS_U1, 1, (const uint32_t[]){UINT32_MAX});
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
    spec.fields[0].shape[0] = UINT32_MAX - 3;
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == UINT32_MAX - 3 && wire == 1u << 29);
    VL_CHECK(vl_obs_row_bytes(&spec) == UINT32_MAX - 3);
    spec.fields[0].encoding = VL_OBS_U2;
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == UINT32_MAX - 3 && wire == (1u << 30) - 1);
    spec = s_spec1(VL_OBS_F32, 1, (const uint32_t[]){(1u << 30) - 1});
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(wire == UINT32_MAX - 3);
    spec.fields[0].shape[0] = 1u << 30;
    VL_CHECK(s_check(&spec, &lim) == VL_ETOOBIG);
}

static void test_spec_check_dims_mixed(void)
{
    vl_limits_t lim = vl_limits_default();
    vl_obs_spec_t spec = {0};
    s_add(&spec, VL_OBS_U2, 2, (const uint32_t[]){16, 16}); // 256 values, 64 bytes
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){32});     // 32, 4
    s_add(&spec, VL_OBS_F32, 1, (const uint32_t[]){2});     // 2, 8
    s_add(&spec, VL_OBS_U8, 1, (const uint32_t[]){3});      // 3, 3
    uint32_t dim = 0, wire = 0;
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 293 && wire == 79);
    spec = s_spec1(VL_OBS_U2, 2, (const uint32_t[]){5, 3}); // 15 values, 4 bytes
    s_add(&spec, VL_OBS_U1, 1, (const uint32_t[]){13});     // 13, 2
    VL_CHECK(vl_obs_spec_check(&spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 28 && wire == 6);
}

static void test_spec_equal(void)
{
    vl_obs_spec_t a = s_spec1(VL_OBS_U2, 2, (const uint32_t[]){16, 16});
    s_add(&a, VL_OBS_U1, 1, (const uint32_t[]){32});
    vl_obs_spec_t b = a;
    VL_CHECK(vl_obs_spec_equal(&a, &b) && vl_obs_spec_equal(&b, &a));
    b.fields[0].shape[3] = 99; // beyond ndim: not part of the spec
    b.fields[2] = b.fields[0]; // beyond n_fields: not part of the spec
    VL_CHECK(vl_obs_spec_equal(&a, &b));
    b = a, b.n_fields = 1;
    VL_CHECK(!vl_obs_spec_equal(&a, &b) && !vl_obs_spec_equal(&b, &a));
    b = a, b.fields[1].encoding = VL_OBS_U2;
    VL_CHECK(!vl_obs_spec_equal(&a, &b));
    b = a, b.fields[0].shape[1] = 17;
    VL_CHECK(!vl_obs_spec_equal(&a, &b));
    b = a, b.fields[0].ndim = 3, b.fields[0].shape[2] = 1; // same values, another rank
    VL_CHECK(!vl_obs_spec_equal(&a, &b));
    b = a, b.fields[0] = a.fields[1], b.fields[1] = a.fields[0]; // order matters
    VL_CHECK(!vl_obs_spec_equal(&a, &b));
    vl_obs_spec_t flat = vl_obs_spec_flat(4),
                  square = s_spec1(VL_OBS_F32, 2, (const uint32_t[]){2, 2});
    VL_CHECK(!vl_obs_spec_equal(&flat, &square));
}

int main(void)
{
    VL_RUN(test_round_trip_every_encoding);
    VL_RUN(test_round_trip_ranks);
    VL_RUN(test_round_trip_mixed);
    VL_RUN(test_u2_bytes_exact);
    VL_RUN(test_u1_bytes_exact);
    VL_RUN(test_mixed_bytes_exact);
    VL_RUN(test_quantise_u8);
    VL_RUN(test_quantise_u2);
    VL_RUN(test_quantise_u1);
    VL_RUN(test_quantise_in_place);
    VL_RUN(test_f32_copied_unchecked);
    VL_RUN(test_spec_flat_and_names);
    VL_RUN(test_spec_check_counts);
    VL_RUN(test_spec_check_fields);
    VL_RUN(test_spec_check_too_many_values);
    VL_RUN(test_spec_check_wire_bytes_overflow);
    VL_RUN(test_spec_check_dims_mixed);
    VL_RUN(test_spec_equal);
    return VL_DONE();
}
