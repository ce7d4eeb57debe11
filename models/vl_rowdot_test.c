/*  vl_rowdot_test: the small-batch products against a double-precision sum
    over every block remainder (rows and outputs 1 to 9, k with a masked
    tail), with one and two parts and each start (init, accumulate, zero),
    and each row's result the same bits whatever rows share its call; and
    the same sums run as the LSTM runs them where vl_rowdot is not
    available, on vl_matmul (oneDNN and its portable loops). On a CPU
    without AVX-512 the vl_rowdot cases do not run: the program prints
    "SKIP:" naming them and exits 77 (ctest's SKIP_RETURN_CODE) unless a
    case that ran failed. */
#include "vl_rowdot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../tests/vl_test.h"
#include "vl_matmul.h"

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

/* Returns base + the sum over the first np parts of row i of A_p dotted with
   row j of W_p, in double precision. */
static double s_want(const vl_rowdot_part_t *parts, int np, size_t i, size_t j, double base)
{
    for (int p = 0; p < np; p++)
        for (size_t k = 0; k < parts[p].k; k++)
            base += (double)parts[p].a[i * parts[p].lda + k] * parts[p].w[j * parts[p].k + k];
    return base;
}

static void test_products_match_a_double_sum(void)
{
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
                            double base = mode == 1 ? init[j] : mode == 2 ? c0[i * ldc + j] : 0;
                            VL_CHECK_NEAR(c[i * ldc + j], s_want(parts, np, i, j, base), 1e-5);
                        }
                    for (size_t j = n; j < ldc; j++) // past n: untouched
                        VL_CHECK(c[j] == c0[j]);
                }
}

static void test_a_row_is_the_same_bits_in_any_batch(void)
{
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

/* Runs vl_rowdot_run's sum on mm as the LSTM does where vl_rowdot is not
   available: part p as C (+)= A_p W_p^T (W_p read transposed in place), the
   first part starting from init, C or 0, the second accumulating. Returns 0 or -1. */
static int s_matmul_parts(vl_matmul_t *mm, size_t m, size_t n, const vl_rowdot_part_t *parts,
                          int nparts, const float *init, int accumulate, float *c, size_t ldc)
{
    for (int p = 0; p < nparts; p++) {
        vl_matmul_shape_t s = {.m = (int64_t)m,
                               .k = (int64_t)parts[p].k,
                               .n = (int64_t)n,
                               .a_rs = (int64_t)parts[p].lda,
                               .a_cs = 1,
                               .b_rs = 1,
                               .b_cs = (int64_t)parts[p].k,
                               .c_rs = (int64_t)ldc,
                               .accumulate = p > 0 || accumulate,
                               .bias = p == 0 && init};
        if (vl_matmul_run(mm, &s, parts[p].a, parts[p].w, init, c) != 0)
            return -1;
    }
    return 0;
}

/* The products case's sums on vl_matmul, on oneDNN and on the portable loops. */
static void test_matmul_in_its_place_matches_a_double_sum(void)
{
    size_t k0 = 37, k1 = 21, lda0 = 40, lda1 = 23, ldc = 12;
    float a0[S_MAX * 40], a1[S_MAX * 23], w0[S_MAX * 37], w1[S_MAX * 21], init[S_MAX];
    float c[S_MAX * 12], c0[S_MAX * 12];
    s_fill(a0, sizeof a0 / 4, 1), s_fill(a1, sizeof a1 / 4, 2), s_fill(w0, sizeof w0 / 4, 3);
    s_fill(w1, sizeof w1 / 4, 4), s_fill(init, S_MAX, 5), s_fill(c0, sizeof c0 / 4, 6);
    vl_rowdot_part_t parts[2] = {{a0, lda0, w0, k0}, {a1, lda1, w1, k1}};
    for (int portable = 0; portable < 2; portable++) {
        vl_matmul_t *mm = vl_matmul_new();
        VL_CHECK(mm);
        if (portable)
            vl_matmul_set_portable(mm);
        for (size_t m = 1; m <= S_MAX; m += 4)
            for (size_t n = 1; n <= S_MAX; n++)
                for (int np = 1; np <= 2; np++)
                    for (int mode = 0; mode < 3; mode++) { // 0: zero, 1: init, 2: accumulate
                        for (size_t i = 0; i < sizeof c / 4; i++)
                            c[i] = c0[i];
                        VL_CHECK(s_matmul_parts(mm, m, n, parts, np, mode == 1 ? init : NULL,
                                                mode == 2, c, ldc) == 0);
                        for (size_t i = 0; i < m; i++)
                            for (size_t j = 0; j < n; j++) {
                                double base = mode == 1 ? init[j] : mode == 2 ? c0[i * ldc + j] : 0;
                                VL_CHECK_NEAR(c[i * ldc + j], s_want(parts, np, i, j, base), 1e-5);
                            }
                    }
        vl_matmul_destroy(&mm);
    }
}

int main(void)
{
    VL_RUN(test_matmul_in_its_place_matches_a_double_sum);
    if (!vl_rowdot_available()) {
        int failed = VL_DONE();
        if (failed)
            return failed;
        printf("SKIP: this CPU has no AVX-512: test_products_match_a_double_sum and "
               "test_a_row_is_the_same_bits_in_any_batch not run\n");
        return 77;
    }
    VL_RUN(test_products_match_a_double_sum);
    VL_RUN(test_a_row_is_the_same_bits_in_any_batch);
    return VL_DONE();
}
