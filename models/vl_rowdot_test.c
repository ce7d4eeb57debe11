/*  vl_rowdot_test: the small-batch products against a double-precision sum
    over every block remainder (rows and outputs 1 to 9, k with a masked
    tail), with one and two parts and each start (init, accumulate, zero),
    and each row's result the same bits whatever rows share its call. On a
    CPU without AVX-512 there is nothing to run: each test says so and
    passes. */
#include "vl_rowdot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../tests/vl_test.h"

#define S_MAX 9

/* Returns a fixed value in [-1, 1) for index i of stream s. */
static float s_val(size_t i, int s)
{
    return (float)(((i * 2654435761u + (size_t)s * 40503u) >> 7) % 2001) / 1000.0f - 1.0f;
}

/* Fills n floats of stream s. */
static void s_fill(float *x, size_t n, int s)
{
    for (size_t i = 0; i < n; i++)
        x[i] = s_val(i, s);
}

static int s_skip(const char *what)
{
    if (vl_rowdot_available())
        return 0;
    printf("  %s: this CPU has no AVX-512, nothing to run\n", what);
    return 1;
}

static void test_products_match_a_double_sum(void)
{
    if (s_skip("products"))
        return;
    size_t k0 = 37, k1 = 21, lda0 = 40, lda1 = 23, ldc = 12; // tails of 5 and 5 after 16s
    float a0[S_MAX * 40], a1[S_MAX * 23], w0[S_MAX * 37], w1[S_MAX * 21], init[S_MAX];
    float c[S_MAX * 12], c0[S_MAX * 12];
    s_fill(a0, sizeof a0 / 4, 1), s_fill(a1, sizeof a1 / 4, 2), s_fill(w0, sizeof w0 / 4, 3);
    s_fill(w1, sizeof w1 / 4, 4), s_fill(init, S_MAX, 5), s_fill(c0, sizeof c0 / 4, 6);
    vl_rowdot_part_t parts[2] = {{a0, lda0, w0, k0}, {a1, lda1, w1, k1}};
    for (size_t m = 1; m <= S_MAX; m++)
        for (size_t n = 1; n <= S_MAX; n++)
            for (int np = 1; np <= 2; np++)
                for (int mode = 0; mode < 3; mode++) { // 0: zero, 1: init, 2: accumulate
                    for (size_t i = 0; i < sizeof c / 4; i++)
                        c[i] = c0[i];
                    vl_rowdot_run(m, n, parts, np, mode == 1 ? init : NULL, mode == 2, c, ldc);
                    for (size_t i = 0; i < m; i++)
                        for (size_t j = 0; j < n; j++) {
                            double want = mode == 1 ? init[j] : mode == 2 ? c0[i * ldc + j] : 0;
                            for (size_t k = 0; k < k0; k++)
                                want += (double)a0[i * lda0 + k] * w0[j * k0 + k];
                            for (size_t k = 0; np == 2 && k < k1; k++)
                                want += (double)a1[i * lda1 + k] * w1[j * k1 + k];
                            VL_CHECK_NEAR(c[i * ldc + j], want, 1e-5);
                        }
                    for (size_t j = n; j < ldc; j++) // past n: untouched
                        VL_CHECK(c[j] == c0[j]);
                }
}

static void test_a_row_is_the_same_bits_in_any_batch(void)
{
    if (s_skip("rows"))
        return;
    size_t k = 53, n = 11, lda = 53;
    float a[S_MAX * 53], w[11 * 53], init[11], all[S_MAX * 11], one[11];
    s_fill(a, sizeof a / 4, 7), s_fill(w, sizeof w / 4, 8), s_fill(init, n, 9);
    vl_rowdot_part_t p = {a, lda, w, k};
    vl_rowdot_run(S_MAX, n, &p, 1, init, 0, all, n);
    for (size_t i = 0; i < S_MAX; i++) {
        vl_rowdot_part_t row = {a + i * lda, lda, w, k};
        vl_rowdot_run(1, n, &row, 1, init, 0, one, n);
        for (size_t j = 0; j < n; j++)
            VL_CHECK(one[j] == all[i * n + j]);
    }
}

int main(void)
{
    VL_RUN(test_products_match_a_double_sum);
    VL_RUN(test_a_row_is_the_same_bits_in_any_batch);
    return VL_DONE();
}
