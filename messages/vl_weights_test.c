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
    VL_CHECK(s_weights_decode_edited(s_edit_weights_schema_old) == VL_EVERSION);
    VL_CHECK(s_weights_decode_edited(s_edit_weights_policy) == VL_EPOLICY);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_name) == VL_EPOLICY);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_rank3) == VL_ESHAPE);
    s_tensor_shape_arg[0] = 3, s_tensor_shape_arg[1] = 0;
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_shape) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_raw_size) == VL_ESHAPE);
    VL_CHECK(s_weights_decode_edited(s_edit_tensor_block_cut) == VL_ELZ4);
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
    return VL_DONE();
}
