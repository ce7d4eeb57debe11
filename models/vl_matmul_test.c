/*  vl_matmul_test: the products on oneDNN and on the portable loops against
    a double-precision sum, over strided and transposed operands, with bias
    and accumulation; the portable loops to the bit in the order vl_matmul.c
    gives (what volley replay's checksums rest on), and a row's portable
    result the same bits whatever rows share its call. */
#include "vl_matmul.h"

#include <math.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_LANES 8 // as vl_matmul.c: a narrow output's partial sums
#define S_ROWS  9
#define S_MAXK  150
#define S_MAXN  20

/* Fills n floats with uniform values in [-1, 1) from seed. */
static void s_fill(float *x, size_t n, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * vl_rng_uniform(&rng) - 1.0);
}

/* The shapes: y = x W^T + b (B read transposed, n < 8 takes the dot
   products), a weight gradient g^T x (A read transposed), several k tiles
   with a tail, accumulation into C with a row stride past n. */
// clang-format off
static const vl_matmul_shape_t s_shapes[] = {
    // m   k    n  a_rs a_cs b_rs b_cs c_rs accumulate bias
    {5,    4,   2,    4,   1,   1,   4,   2,  0, 1},
    {7,   19,   3,   19,   1,   1,  19,   5,  0, 1},
    {9,   13,  17,   13,   1,   1,  13,  17,  0, 1},
    {6,    9,   4,    1,   6,   4,   1,   4,  1, 0},
    {3,  150,  11,  150,   1,  11,   1,  20,  1, 1},
};
// clang-format on
enum { S_SHAPES = sizeof s_shapes / sizeof s_shapes[0] };

static float s_a[S_ROWS * S_MAXK], s_b[S_MAXK * S_MAXN], s_bias[S_MAXN], s_c0[S_ROWS * S_MAXN];

/* Returns A[i][k] and B[k][j] of shape s over the fixed operands. */
static float s_at(const vl_matmul_shape_t *s, int64_t i, int64_t k)
{
    return s_a[i * s->a_rs + k * s->a_cs];
}

static float s_bt(const vl_matmul_shape_t *s, int64_t k, int64_t j)
{
    return s_b[k * s->b_rs + j * s->b_cs];
}

/* Fills the operands and returns a new runner, portable or on oneDNN
   (caller destroys), or NULL. */
static vl_matmul_t *s_setup(int portable)
{
    s_fill(s_a, sizeof s_a / 4, 1), s_fill(s_b, sizeof s_b / 4, 2);
    s_fill(s_bias, S_MAXN, 3), s_fill(s_c0, sizeof s_c0 / 4, 4);
    vl_matmul_t *mm = vl_matmul_new();
    if (mm && portable)
        vl_matmul_set_portable(mm);
    return mm;
}

/* Runs shape s on mm into c (from s_c0). Returns vl_matmul_run's result. */
static int s_run(vl_matmul_t *mm, const vl_matmul_shape_t *s, float *c)
{
    memcpy(c, s_c0, sizeof s_c0);
    return vl_matmul_run(mm, s, s_a, s_b, s_bias, c);
}

static void test_products_match_a_double_sum(void)
{
    for (int portable = 0; portable < 2; portable++) {
        vl_matmul_t *mm = s_setup(portable);
        VL_CHECK(mm);
        for (int t = 0; t < S_SHAPES; t++) {
            const vl_matmul_shape_t *s = &s_shapes[t];
            float c[S_ROWS * S_MAXN];
            VL_CHECK(s_run(mm, s, c) == 0);
            for (int64_t i = 0; i < s->m; i++)
                for (int64_t j = 0; j < s->c_rs; j++) {
                    double want = s_c0[i * s->c_rs + j];
                    if (j < s->n) {
                        want = (s->accumulate ? want : 0) + (s->bias ? s_bias[j] : 0);
                        for (int64_t k = 0; k < s->k; k++)
                            want += (double)s_at(s, i, k) * s_bt(s, k, j);
                    }
                    VL_CHECK_NEAR(c[i * s->c_rs + j], want, 1e-5 * (1 + fabs(want)));
                }
        }
        vl_matmul_destroy(&mm);
        VL_CHECK(mm == NULL);
        vl_matmul_destroy(&mm);
    }
}

/* The portable loops' order, written out: a narrow output with contiguous
   operands as one dot product (lane sums, the tail first), any other as
   bias then four k at a time, then added to C when accumulating. */
static float s_portable_order(const vl_matmul_shape_t *s, int64_t i, int64_t j)
{
    float sum = s->bias ? s_bias[j] : 0.0f;
    if (s->n < S_LANES && s->a_cs == 1 && s->b_rs == 1) {
        float acc[S_LANES] = {0}, dot = 0.0f;
        int64_t k = 0;
        for (; k + S_LANES <= s->k; k += S_LANES)
            for (int l = 0; l < S_LANES; l++)
                acc[l] += s_bt(s, k + l, j) * s_at(s, i, k + l);
        for (; k < s->k; k++)
            dot += s_bt(s, k, j) * s_at(s, i, k);
        for (int l = 0; l < S_LANES; l++)
            dot += acc[l];
        sum += dot;
    } else {
        int64_t k = 0;
        for (; k + 4 <= s->k; k += 4)
            sum += (s_at(s, i, k) * s_bt(s, k, j) + s_at(s, i, k + 1) * s_bt(s, k + 1, j)) +
                   (s_at(s, i, k + 2) * s_bt(s, k + 2, j) + s_at(s, i, k + 3) * s_bt(s, k + 3, j));
        for (; k < s->k; k++)
            sum += s_at(s, i, k) * s_bt(s, k, j);
    }
    return s->accumulate ? s_c0[i * s->c_rs + j] + sum : sum;
}

static void test_portable_products_keep_their_order(void)
{
    vl_matmul_t *mm = s_setup(1);
    VL_CHECK(mm);
    for (int t = 0; t < S_SHAPES; t++) {
        const vl_matmul_shape_t *s = &s_shapes[t];
        float c[S_ROWS * S_MAXN];
        VL_CHECK(s_run(mm, s, c) == 0);
        for (int64_t i = 0; i < s->m; i++)
            for (int64_t j = 0; j < s->n; j++)
                VL_CHECK(c[i * s->c_rs + j] == s_portable_order(s, i, j));
    }
    vl_matmul_destroy(&mm);
}

static void test_a_portable_row_is_the_same_bits_in_any_batch(void)
{
    vl_matmul_t *mm = s_setup(1);
    VL_CHECK(mm);
    for (int t = 0; t < S_SHAPES; t++) {
        vl_matmul_shape_t one = s_shapes[t];
        float all[S_ROWS * S_MAXN], row[S_ROWS * S_MAXN];
        VL_CHECK(s_run(mm, &one, all) == 0);
        int64_t m = one.m;
        one.m = 1;
        for (int64_t i = 0; i < m; i++) {
            memcpy(row, s_c0 + i * one.c_rs, (size_t)one.c_rs * sizeof(float));
            VL_CHECK(vl_matmul_run(mm, &one, s_a + i * one.a_rs, s_b, s_bias, row) == 0);
            for (int64_t j = 0; j < one.n; j++)
                VL_CHECK(row[j] == all[i * one.c_rs + j]);
        }
    }
    vl_matmul_destroy(&mm);
}

int main(void)
{
    VL_RUN(test_products_match_a_double_sum);
    VL_RUN(test_portable_products_keep_their_order);
    VL_RUN(test_a_portable_row_is_the_same_bits_in_any_batch);
    return VL_DONE();
}
