/*  vl_weights_test: weights round trips, and every hostile weights message
    refused with its reason before anything big is allocated. A bad message
    is a good one with one field of its unpacked protobuf edited. */
#include <lz4.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

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
    bad = t[0], bad.ndim = 3; // rank 3 without its shape
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.ndim = 0;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.ndim = 5;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad = t[0], bad.ndim = 4, bad.shape[0] = 3, bad.shape[1] = 5, bad.shape[2] = 1;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1); // shape[3] is 0
    bad.shape[3] = 2; // 3 x 5 x 1 x 2: rows 3, cols 10, not the 5 cols it says
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad.shape[3] = 1, bad.shape[0] = 1; // rows 3, shape[0] 1
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == -1);
    bad.shape[0] = 3;
    VL_CHECK(vl_weights_encode("p", 1, &bad, 1, &buf, &size) == 0); // [3, 5, 1, 1] is fine
    free(buf);
    buf = NULL;
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

static uint32_t s_tensor_shape_arg[VL_TENSOR_NDIM_MAX + 1];
static size_t s_tensor_ndim_arg = 2;

/* Sets the edit's shape to the n dims given. */
static void s_shape_arg(size_t n, uint32_t d0, uint32_t d1, uint32_t d2, uint32_t d3, uint32_t d4)
{
    uint32_t dims[] = {d0, d1, d2, d3, d4};
    memcpy(s_tensor_shape_arg, dims, sizeof dims);
    s_tensor_ndim_arg = n;
}

static void s_edit_tensor_shape(Volley__Weights *msg)
{
    msg->tensors[0]->shape = s_tensor_shape_arg;
    msg->tensors[0]->n_shape = s_tensor_ndim_arg;
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
    s_shape_arg(2, (1u << 24) + 1, 1, 0, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ETOOBIG);
    s_shape_arg(2, 65536, 65536, 0, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ETOOBIG);
}

/* 1 << 24 floats (the limit) claimed by a block of ~100 bytes: refused as
   a bomb by LZ4's 255x expansion bound, before the 64 MB is allocated. */
static void test_weights_lz4_bomb(void)
{
    s_shape_arg(2, 1u << 12, 1u << 12, 0, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_too_big) == VL_ELZ4);
}

/* A tensor's block against max_raw_bytes: the 3 x 5 tensor's 60 bytes pass
   at a limit of 60 and are refused at 59. */
static void test_weights_raw_over_limit(void)
{
    vl_tensor_t t[2];
    float storage[20];
    s_tensors_fill(t, storage, 15);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_weights_encode("cartpole-a2c", 1, t, 2, &buf, &size) == 0);
    vl_limits_t lim = vl_limits_default();
    lim.max_raw_bytes = 60;
    vl_weights_t *w = NULL;
    vl_reason_t at_limit = vl_weights_decode(buf, size, &lim, &w);
    vl_weights_destroy(&w);
    lim.max_raw_bytes = 59;
    vl_reason_t over = vl_weights_decode(buf, size, &lim, &w);
    free(buf);
    VL_CHECK(at_limit == VL_OK);
    VL_CHECK(over == VL_ETOOBIG && w == NULL);
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

static void s_edit_weights_schema_old(Volley__Weights *msg)
{
    msg->schema = 1;
}

static void s_edit_weights_policy(Volley__Weights *msg)
{
    msg->policy_id = "";
}

static void s_edit_tensor_name(Volley__Weights *msg)
{
    msg->tensors[0]->name = "0123456789abcdef0123456789abcdef"; // 32 bytes
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
    VL_CHECK(s_weights_decode_edited(s_edit_weights_schema_old) == VL_EVERSION);
    VL_CHECK(s_weights_decode_edited(s_edit_weights_policy) == VL_EPOLICY);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_name) == VL_EPOLICY);
    s_shape_arg(2, 3, 0, 0, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_shape) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_raw_size) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_block_cut) == VL_ELZ4);
}

/* The 15 floats of the 3 x 5 "w1" under another shape: a consistent
   raw_size, so only the rank and dims are judged. */
static void s_edit_tensor_reshaped(Volley__Weights *msg)
{
    s_edit_tensor_shape(msg);
}

/* Weights of every rank from 1 to 4 decode as they were sent; a rank of 0
   or 5, a dimension of 0, a product over the limit (however it would wrap)
   and a raw_size that is not 4 x the product are each refused. */
static void test_weights_ranks_on_the_wire(void)
{
    s_shape_arg(3, 3, 5, 1, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_OK);
    s_shape_arg(4, 1, 3, 1, 5, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_OK);
    s_shape_arg(0, 0, 0, 0, 0, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ESHAPE);
    s_shape_arg(5, 1, 3, 1, 5, 1);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ESHAPE);
    s_shape_arg(4, 3, 5, 0, 1, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ESHAPE);
    // 2^64 floats: 0 if multiplied in 64 bits, 2^32 x 2^32 in two halves
    s_shape_arg(4, 65536, 65536, 65536, 65536, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ETOOBIG);
    s_shape_arg(4, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 0);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ETOOBIG);
    s_shape_arg(4, 1, 3, 2, 5, 0); // 30 floats, raw_size says 15
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_reshaped) == VL_ESHAPE);
    s_shape_arg(2, 3, 5, 0, 0, 0);
}

/* A conv weight [32][4][8][8] and a rank-3 tensor round trip with every
   dimension; a [32, 256] holding the same floats is another shape. */
static void test_weights_rank4_round_trip(void)
{
    enum { N = 32 * 4 * 8 * 8 };
    static float conv[N], cube[60];
    for (int i = 0; i < N; i++)
        conv[i] = (float)i / N - 0.5f;
    for (int i = 0; i < 60; i++)
        cube[i] = (float)i;
    vl_tensor_t t[2] = {{.name = "conv.0.0.weight", .data = conv}, {.name = "c3", .data = cube}};
    VL_CHECK(vl_tensor_set_shape(&t[0], 4, (uint32_t[]){32, 4, 8, 8}) == 0);
    VL_CHECK(vl_tensor_set_shape(&t[1], 3, (uint32_t[]){3, 4, 5}) == 0);
    VL_CHECK(t[0].rows == 32 && t[0].cols == 256 && vl_tensor_size(&t[0]) == N);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_weights_encode("cnn", 5, t, 2, &buf, &size) == 0);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    VL_CHECK(vl_weights_decode(buf, size, &lim, &w) == VL_OK);
    free(buf);
    char text[64];
    VL_CHECK(w->n_tensors == 2 && w->tensors[0].ndim == 4);
    VL_CHECK(strcmp(vl_tensor_shape_str(&w->tensors[0], text, sizeof text), "[32, 4, 8, 8]") == 0);
    VL_CHECK(strcmp(vl_tensor_shape_str(&w->tensors[1], text, sizeof text), "[3, 4, 5]") == 0);
    for (int i = 0; i < 2; i++)
        VL_CHECK(vl_tensor_same_shape(&w->tensors[i], &t[i]) &&
                 memcmp(w->tensors[i].data, t[i].data, vl_tensor_size(&t[i]) * 4) == 0);
    VL_CHECK(vl_tensors_checksum(w->tensors, 2) == vl_tensors_checksum(t, 2));
    vl_tensor_t flat = {.name = "conv.0.0.weight", .data = conv};
    VL_CHECK(vl_tensor_set_shape(&flat, 2, (uint32_t[]){32, 256}) == 0);
    VL_CHECK(!vl_tensor_same_shape(&flat, &t[0]) && !vl_tensor_same_shape(&t[0], &flat));
    VL_CHECK(vl_tensors_checksum(&flat, 1) != vl_tensors_checksum(&t[0], 1));
    VL_CHECK(strcmp(vl_tensor_shape_str(&flat, text, sizeof text), "[32, 256]") == 0);
    char why[128];
    VL_CHECK(vl_tensors_mismatch(t, 2, w->tensors, 2, why, sizeof why) == 0);
    VL_CHECK(vl_tensors_mismatch(&flat, 1, w->tensors, 2, why, sizeof why) == -1);
    VL_CHECK(strcmp(why, "their conv.0.0.weight is [32, 4, 8, 8], this network's [32, 256]") == 0);
    VL_CHECK(vl_tensors_mismatch(t, 2, w->tensors, 1, why, sizeof why) == -1);
    VL_CHECK(strcmp(why, "they have no tensor c3") == 0);
    vl_weights_destroy(&w);
    VL_CHECK(vl_tensor_set_shape(&flat, 5, (uint32_t[]){1, 1, 1, 1, 1}) == -1);
    VL_CHECK(vl_tensor_set_shape(&flat, 3, (uint32_t[]){1, 0, 1}) == -1);
    VL_CHECK(vl_tensor_set_shape(&flat, 3, (uint32_t[]){1, 65536, 65536}) == -1);
    VL_CHECK(flat.ndim == 2 && flat.cols == 256); // unchanged by the refusals
}

/* FNV-1a over bytes, as the checksum's contract states it. */
static uint64_t s_fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ULL;
    return h;
}

/* Ranks 1 and 2 hash {ndim, rows, cols} as they always did (a recorded run's
   checksum does not change), whatever the unused shape holds. */
static void test_checksum_of_ranks_1_and_2_unchanged(void)
{
    vl_tensor_t t[2];
    float storage[20];
    s_tensors_fill(t, storage, 16);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 2; i++) {
        uint32_t shape[3] = {t[i].ndim, t[i].rows, t[i].cols};
        h = s_fnv(h, t[i].name, strlen(t[i].name) + 1);
        h = s_fnv(h, shape, sizeof shape);
        h = s_fnv(h, t[i].data, (size_t)t[i].rows * t[i].cols * 4);
    }
    VL_CHECK(vl_tensors_checksum(t, 2) == h);
    t[0].shape[0] = 99; // unused at rank 2
    VL_CHECK(vl_tensors_checksum(t, 2) == h);
}

int main(void)
{
    VL_RUN(test_weights_round_trip);
    VL_RUN(test_weights_encode_rejects_bad_input);
    VL_RUN(test_weights_nonfinite);
    VL_RUN(test_weights_tensor_too_big);
    VL_RUN(test_weights_lz4_bomb);
    VL_RUN(test_weights_raw_over_limit);
    VL_RUN(test_weights_too_many_tensors);
    VL_RUN(test_weights_bad_header);
    VL_RUN(test_weights_ranks_on_the_wire);
    VL_RUN(test_weights_rank4_round_trip);
    VL_RUN(test_checksum_of_ranks_1_and_2_unchanged);
    return VL_DONE();
}
