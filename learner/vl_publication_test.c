/*  Tests of vl_publication: weights a receiver would refuse are refused
    before sending, with the tensor and the reason; volley's MLP is checked
    by name and shape; what passes decodes back as sent. */
#include "vl_publication.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

#define D 4
#define A 2
#define H 8

static float s_zeros[H * H];

/* The 12 tensors of volley's MLP for D, A, H, all pointing at zeros. */
static uint32_t s_mlp_tensors(vl_transport_tensor_t *t, char names[][32])
{
    uint32_t dims[3][2] = {{H, D}, {H, H}, {0, H}}, n = 0;
    for (int net = 0; net < 2; net++)
        for (int layer = 0; layer < 3; layer++)
            for (int bias = 0; bias < 2; bias++) {
                uint32_t rows = layer == 2 ? (net == 0 ? A : 1) : dims[layer][0];
                snprintf(names[n], 32, "%s.%d.%s", net ? "v" : "pi", layer,
                         bias ? "bias" : "weight");
                t[n] = (vl_transport_tensor_t){.name = names[n],
                                               .ndim = bias ? 1 : 2,
                                               .shape = {rows, bias ? 0 : dims[layer][1]},
                                               .data = s_zeros};
                n++;
            }
    return n;
}

/* Returns 1 if the check refuses t with a reason containing `want`. */
static int s_refused(const vl_transport_tensor_t *t, uint32_t n, vl_policy_t *mlp, const char *want)
{
    vl_tensor_t out[VL_TRANSPORT_TENSORS_MAX];
    char why[256] = "";
    int rc = vl_publication_check(t, n, mlp, out, why, sizeof why);
    if (rc == 0 || !strstr(why, want))
        fprintf(stderr, "  wanted a refusal with '%s', got rc %d '%s'\n", want, rc, why);
    return rc != 0 && strstr(why, want) != NULL;
}

static void test_receiver_checks(void)
{
    float bad[3] = {0, NAN, 0};
    vl_transport_tensor_t t[2] = {{.name = "w", .ndim = 1, .shape = {3}, .data = bad},
                                  {.name = "w", .ndim = 1, .shape = {3}, .data = s_zeros}};
    VL_CHECK(s_refused(t, 1, NULL, "tensor w: value 1 is nan"));
    t[0].data = s_zeros;
    VL_CHECK(s_refused(t, 2, NULL, "tensor w: named twice"));
    VL_CHECK(s_refused(t, 0, NULL, "0 tensors"));
    t[0].ndim = 5;
    VL_CHECK(s_refused(t, 1, NULL, "rank 5 shape [3, 0, 0, 0, ...]: expected rank 1 .. 4"));
    t[0].ndim = 0;
    VL_CHECK(s_refused(t, 1, NULL, "rank 0 shape []: expected rank 1 .. 4"));
    t[0].ndim = 2;
    t[0].shape[1] = 0;
    VL_CHECK(s_refused(t, 1, NULL, "no dim of 0"));
    t[0].ndim = 4, t[0].shape[1] = 256, t[0].shape[2] = 256, t[0].shape[3] = 256;
    VL_CHECK(s_refused(t, 1, NULL,
                       "[3, 256, 256, 256]: expected rank 1 .. 4, no dim of 0, at "
                       "most 16777216 values"));
    t[0] = (vl_transport_tensor_t){.name = "tab\there", .ndim = 1, .shape = {3}, .data = s_zeros};
    VL_CHECK(s_refused(t, 1, NULL, "printable"));
    t[0].name = "w";
    t[0].data = NULL;
    VL_CHECK(s_refused(t, 1, NULL, "no data"));
}

static void test_mlp_checked_by_name_and_shape(void)
{
    vl_policy_t *mlp = vl_policy_new(D, A, H, 1);
    vl_transport_tensor_t t[16];
    char names[16][32];
    vl_tensor_t out[VL_TRANSPORT_TENSORS_MAX];
    uint32_t n = s_mlp_tensors(t, names);
    VL_CHECK(n == 12 && vl_publication_check(t, n, mlp, out, NULL, 0) == 0);
    VL_CHECK(out[0].rows == H && out[0].cols == D && out[0].ndim == 2);
    VL_CHECK(s_refused(t, n - 1, mlp, "they have no tensor v.2.bias"));
    t[0].shape[1] = D + 1;
    VL_CHECK(s_refused(t, n, mlp, "their pi.0.weight is [8, 5], this network's [8, 4]"));
    t[0].shape[1] = D;
    t[0].ndim = 4, t[0].shape[1] = 1, t[0].shape[2] = 2, t[0].shape[3] = 2; // 8 x 4 floats
    VL_CHECK(s_refused(t, n, mlp, "their pi.0.weight is [8, 1, 2, 2], this network's [8, 4]"));
    t[0].ndim = 3, t[0].shape[1] = D, t[0].shape[2] = 1; // as many rows and cols as [8, 4]
    VL_CHECK(s_refused(t, n, mlp, "their pi.0.weight is [8, 4, 1], this network's [8, 4]"));
    t[0].ndim = 2, t[0].shape[1] = D;
    t[n] = (vl_transport_tensor_t){.name = "extra", .ndim = 1, .shape = {1}, .data = s_zeros};
    VL_CHECK(s_refused(t, n + 1, mlp, "the others would be ignored"));
    VL_CHECK(vl_publication_check(t, n + 1, NULL, out, NULL, 0) == 0); // no model: any names
    vl_policy_destroy(&mlp);
}

static void test_encoded_decodes_as_sent(void)
{
    float w[6] = {1, 2, 3, 4, 5, 6};
    vl_transport_tensor_t t = {.name = "trunk", .ndim = 2, .shape = {2, 3}, .data = w};
    vl_tensor_t out[1];
    uint8_t *buf;
    size_t size;
    char why[128];
    VL_CHECK(vl_publication_check(&t, 1, NULL, out, why, sizeof why) == 0);
    VL_CHECK(vl_publication_encode("p", 9, out, 1, &buf, &size, why, sizeof why) == 0);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *got = NULL;
    VL_CHECK(vl_weights_decode(buf, size, &lim, &got) == VL_OK);
    VL_CHECK(got && got->version == 9 && got->n_tensors == 1 && strcmp(got->policy_id, "p") == 0);
    VL_CHECK(got && got->tensors[0].rows == 2 && got->tensors[0].cols == 3 &&
             memcmp(got->tensors[0].data, w, sizeof w) == 0);
    vl_weights_destroy(&got);
    free(buf);
}

/* A conv weight [32][4][8][8] and a rank-3 tensor pass the receiver's
   checks with every dimension and decode back as they were given. */
static void test_rank4_published_as_given(void)
{
    static float conv[32 * 4 * 8 * 8], cube[2 * 3 * 4];
    for (size_t i = 0; i < sizeof conv / sizeof *conv; i++)
        conv[i] = (float)i;
    vl_transport_tensor_t t[2] = {
        {.name = "conv.0.0.weight", .ndim = 4, .shape = {32, 4, 8, 8}, .data = conv},
        {.name = "cube", .ndim = 3, .shape = {2, 3, 4}, .data = cube}};
    vl_tensor_t out[2];
    uint8_t *buf;
    size_t size;
    char why[256], text[64];
    VL_CHECK(vl_publication_check(t, 2, NULL, out, why, sizeof why) == 0);
    VL_CHECK(out[0].ndim == 4 && out[0].rows == 32 && out[0].cols == 256);
    VL_CHECK(strcmp(vl_tensor_shape_str(&out[0], text, sizeof text), "[32, 4, 8, 8]") == 0);
    VL_CHECK(vl_publication_encode("p", 3, out, 2, &buf, &size, why, sizeof why) == 0);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *got = NULL;
    VL_CHECK(vl_weights_decode(buf, size, &lim, &got) == VL_OK && got->n_tensors == 2);
    for (int i = 0; got && i < 2; i++)
        VL_CHECK(vl_tensor_same_shape(&got->tensors[i], &out[i]) &&
                 memcmp(got->tensors[i].data, out[i].data, vl_tensor_size(&out[i]) * 4) == 0);
    VL_CHECK(strcmp(vl_tensor_shape_str(&got->tensors[1], text, sizeof text), "[2, 3, 4]") == 0);
    vl_weights_destroy(&got);
    free(buf);
}

int main(void)
{
    VL_RUN(test_receiver_checks);
    VL_RUN(test_mlp_checked_by_name_and_shape);
    VL_RUN(test_encoded_decodes_as_sent);
    VL_RUN(test_rank4_published_as_given);
    return VL_DONE();
}
