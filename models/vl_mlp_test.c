/*  vl_mlp_test: the MLP's forward against hand-computed values, its backward
    against central finite differences, its initialization, and batching. */
#include "vl_mlp.h"

#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

/* Fills count floats with uniform values in [-scale, scale). */
static void s_fill(vl_rng_t *rng, float *x, size_t count, double scale)
{
    for (size_t i = 0; i < count; i++)
        x[i] = (float)(scale * (2.0 * vl_rng_uniform(rng) - 1.0));
}

/* Returns sum c[i] * y[i] for the net's output y on x [n][in], a loss whose
   d/dy is c; y is scratch [n][out]. */
static double s_linear_loss(vl_mlp_t *net, uint32_t n, const float *x, const float *c, float *y)
{
    uint32_t out = vl_mlp_size(net, vl_mlp_layers(net));
    if (vl_mlp_forward(net, n, x, y) != 0)
        return NAN;
    double loss = 0.0;
    for (uint32_t i = 0; i < n * out; i++)
        loss += (double)c[i] * y[i];
    return loss;
}

/* Returns |a - b| scaled: relative to the larger of them, absolute near 0. */
static double s_grad_error(double a, double b)
{
    double big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) / (big > 0.1 ? big : 0.1);
}

static void test_forward_matches_hand_computed_values(void)
{
    uint32_t sizes[] = {2, 2, 1};
    vl_mlp_t *net = vl_mlp_new(2, sizes);
    VL_CHECK(net);
    // Layer 0: W = [[1, 2], [3, 4]], b = [0.5, -0.5]; layer 1: W = [[1, -2]], b = [0.25].
    const float params[] = {1, 2, 3, 4, 0.5f, -0.5f, 1, -2, 0.25f};
    VL_CHECK(vl_mlp_param_count(net) == 9);
    VL_CHECK(vl_mlp_weight_offset(net, 1) == 6);
    memcpy(vl_mlp_params(net), params, sizeof params);
    const float x[] = {0.1f, -0.2f, 0.3f, 0.05f};
    float y[2];
    VL_CHECK(vl_mlp_forward(net, 2, x, y) == 0);
    for (int i = 0; i < 2; i++) {
        double h0 = tanh(0.5 + 1 * x[2 * i] + 2 * x[2 * i + 1]);
        double h1 = tanh(-0.5 + 3 * x[2 * i] + 4 * x[2 * i + 1]);
        VL_CHECK_NEAR(y[i], 0.25 + h0 - 2 * h1, 1e-6);
    }
    vl_mlp_destroy(&net);
    vl_mlp_destroy(&net);
    VL_CHECK(net == NULL);
}

/* The hidden layer's tanh (vl_mlp's own, vectorized) against libm's in
   double: a 1 -> 8 -> 1 net whose output is tanh(x) for every input. */
static void test_tanh_matches_libm(void)
{
    enum { N = 4000 + 6 };
    uint32_t sizes[] = {1, 8, 1};
    vl_mlp_t *net = vl_mlp_new(2, sizes);
    VL_CHECK(net);
    float *p = vl_mlp_params(net);
    for (int o = 0; o < 8; o++)
        p[o] = 1.0f; // every hidden unit is tanh(x)
    p[8 + 8] = 1.0f; // the output reads the first
    static float x[N], y[N];
    for (int i = 0; i < 4000; i++)
        x[i] = -20.0f + 0.01f * (float)i;
    const float special[6] = {0.0f, -0.0f, 1e-30f, INFINITY, -INFINITY, NAN};
    memcpy(x + 4000, special, sizeof special);
    VL_CHECK(vl_mlp_forward(net, N, x, y) == 0);
    vl_mlp_destroy(&net);
    double worst = 0.0;
    for (int i = 0; i < N - 1; i++) {
        double want = tanh((double)x[i]);
        double err = want == 0.0 ? fabs(y[i]) : fabs(y[i] - want) / fabs(want);
        worst = err > worst ? err : worst;
    }
    VL_CHECK_NEAR(worst, 0.0, 3e-7);
    VL_CHECK(y[4003] == 1.0f && y[4004] == -1.0f);
    VL_CHECK(isnan(y[N - 1]));
}

static void test_new_refuses_bad_sizes(void)
{
    uint32_t zero[] = {3, 0, 2}, ok[] = {3, 4, 2};
    VL_CHECK(vl_mlp_new(2, zero) == NULL);
    VL_CHECK(vl_mlp_new(0, ok) == NULL);
    VL_CHECK(vl_mlp_new(VL_MLP_MAX_LAYERS + 1, ok) == NULL);
}

/* Returns the central difference of the linear loss in *v (a parameter or
   an input), restoring it. */
static double s_central_difference(vl_mlp_t *net, uint32_t n, const float *x, const float *c,
                                   float *y, float *v)
{
    const float eps = 1e-3f, saved = *v;
    *v = saved + eps;
    double up = s_linear_loss(net, n, x, c, y);
    *v = saved - eps;
    double down = s_linear_loss(net, n, x, c, y);
    *v = saved;
    return (up - down) / (2.0 * eps);
}

/* Returns the worst error of the backward's gradients, of every parameter
   and every input, against central differences, for a 3-layer net of the
   given sizes with random weights (biases too) over n random inputs. */
static double s_gradient_error_acts(const uint32_t *sizes, uint32_t n, uint64_t seed,
                                    const int *acts)
{
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    for (uint32_t l = 0; net && acts && l < 2; l++)
        vl_mlp_set_activation(net, l, acts[l]);
    uint32_t in = sizes[0], out = sizes[3];
    float *x = malloc(n * in * sizeof *x), *dx = malloc(n * in * sizeof *dx);
    float *c = malloc(n * out * sizeof *c), *y = malloc(n * out * sizeof *y);
    double worst = net && x && dx && c && y ? 0.0 : INFINITY;
    if (worst == 0.0) {
        vl_rng_t rng;
        vl_rng_seed(&rng, seed);
        size_t count = vl_mlp_param_count(net);
        float *params = vl_mlp_params(net);
        s_fill(&rng, params, count, 0.8);
        s_fill(&rng, x, n * in, 1.0);
        s_fill(&rng, c, n * out, 1.0);
        vl_mlp_zero_grad(net);
        worst = vl_mlp_forward(net, n, x, y) == 0 ? 0.0 : INFINITY;
        vl_mlp_backward(net, n, c, dx);
        for (size_t k = 0; k < count; k++)
            worst = fmax(worst, s_grad_error(s_central_difference(net, n, x, c, y, params + k),
                                             vl_mlp_grads(net)[k]));
        for (size_t k = 0; k < n * in; k++)
            worst = fmax(worst, s_grad_error(s_central_difference(net, n, x, c, y, x + k), dx[k]));
    }
    free(x);
    free(dx);
    free(c);
    free(y);
    vl_mlp_destroy(&net);
    return worst;
}

/* As s_gradient_error_acts with the default activations. */
static double s_gradient_error(const uint32_t *sizes, uint32_t n, uint64_t seed)
{
    return s_gradient_error_acts(sizes, n, seed, NULL);
}

/* relu and no activation take their own paths forward and backward, on
   every kernel set (a relu's kink is met with probability 0 here). */
static void test_relu_and_none_match_finite_differences(void)
{
    const uint32_t wide[] = {5, 13, 9, 3};
    const int relu[3] = {VL_MLP_ACT_RELU, VL_MLP_ACT_RELU, VL_MLP_ACT_NONE};
    const int mixed[3] = {VL_MLP_ACT_NONE, VL_MLP_ACT_TANH, VL_MLP_ACT_NONE};
    VL_CHECK_NEAR(s_gradient_error_acts(wide, 19, 13, relu), 0.0, 1e-2);
    VL_CHECK_NEAR(s_gradient_error_acts(wide, 19, 14, mixed), 0.0, 1e-2);
    vl_mlp_t *net = vl_mlp_new(3, wide);
    VL_CHECK(net && vl_mlp_set_activation(net, 2, VL_MLP_ACT_RELU) == -1); // the output layer
    VL_CHECK(vl_mlp_set_activation(net, 0, 7) == -1);
    vl_mlp_destroy(&net);
}

static void test_gradients_match_finite_differences(void)
{
    const uint32_t small[] = {3, 5, 5, 2};
    VL_CHECK_NEAR(s_gradient_error(small, 4, 11), 0.0, 1e-2);
}

/* Widths and a batch that take every path of the kernels: full chunks and
   tails, four-row blocks and leftovers, a full sample tile and a partial. */
static void test_wide_gradients_match_finite_differences(void)
{
    const uint32_t wide[] = {5, 13, 9, 3};
    VL_CHECK_NEAR(s_gradient_error(wide, 19, 12), 0.0, 1e-2);
}

/* Returns the worst error (relative above 1) of the forward against a plain
   double computation, for a 3-layer net of the given sizes, n random inputs. */
static double s_forward_error(const uint32_t *sizes, uint32_t n, uint64_t seed)
{
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    float *x = malloc(n * sizes[0] * sizeof *x), *y = malloc(n * sizes[3] * sizeof *y);
    double worst = net && x && y ? 0.0 : INFINITY, a[2][256];
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    if (worst == 0.0) {
        s_fill(&rng, vl_mlp_params(net), vl_mlp_param_count(net), 0.5);
        s_fill(&rng, x, n * sizes[0], 1.0);
        worst = vl_mlp_forward(net, n, x, y) == 0 ? 0.0 : INFINITY;
    }
    for (uint32_t i = 0; worst == 0.0 && i < n; i++) {
        for (uint32_t k = 0; k < sizes[0]; k++)
            a[0][k] = x[i * sizes[0] + k];
        for (uint32_t l = 0; l < 3; l++) {
            const float *w = vl_mlp_params(net) + vl_mlp_weight_offset(net, l);
            uint32_t in = sizes[l], out = sizes[l + 1];
            for (uint32_t o = 0; o < out; o++) {
                double z = w[out * in + o];
                for (uint32_t k = 0; k < in; k++)
                    z += (double)w[o * in + k] * a[l % 2][k];
                a[(l + 1) % 2][o] = l < 2 ? tanh(z) : z;
            }
        }
        for (uint32_t o = 0; o < sizes[3]; o++)
            worst = fmax(worst, fabs(y[i * sizes[3] + o] - a[1][o]) / fmax(fabs(a[1][o]), 1));
    }
    free(x);
    free(y);
    vl_mlp_destroy(&net);
    return worst;
}

static void test_forward_matches_a_plain_computation(void)
{
    const uint32_t wide[] = {5, 13, 9, 3}, cleanrl[] = {4, 64, 64, 2};
    VL_CHECK_NEAR(s_forward_error(wide, 19, 1), 0.0, 1e-5);
    VL_CHECK_NEAR(s_forward_error(cleanrl, 37, 2), 0.0, 1e-5);
}

static void test_backward_adds_into_gradients(void)
{
    uint32_t sizes[] = {3, 4, 2};
    vl_mlp_t *net = vl_mlp_new(2, sizes);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    size_t count = vl_mlp_param_count(net);
    float x[6], c[4], y[4], *once = malloc(count * sizeof *once);
    VL_CHECK(once);
    s_fill(&rng, vl_mlp_params(net), count, 1.0);
    s_fill(&rng, x, 6, 1.0);
    s_fill(&rng, c, 4, 1.0);
    VL_CHECK(vl_mlp_forward(net, 2, x, y) == 0);
    vl_mlp_backward(net, 2, c, NULL);
    memcpy(once, vl_mlp_grads(net), count * sizeof *once);
    vl_mlp_backward(net, 2, c, NULL);
    int doubled = 1, nonzero = 0;
    for (size_t k = 0; k < count; k++) {
        doubled &= fabsf(vl_mlp_grads(net)[k] - 2 * once[k]) <= 1e-6f * (1 + fabsf(once[k]));
        nonzero += once[k] != 0.0f;
    }
    vl_mlp_zero_grad(net);
    int zeroed = 1;
    for (size_t k = 0; k < count; k++)
        zeroed &= vl_mlp_grads(net)[k] == 0.0f;
    free(once);
    vl_mlp_destroy(&net);
    VL_CHECK(doubled);
    VL_CHECK(nonzero == (int)count);
    VL_CHECK(zeroed);
}

/* Returns the largest |(gain^-2) W W^T - I| (rows <= cols) or of W^T W. */
static double s_orthogonality_error(const float *w, uint32_t rows, uint32_t cols, float gain)
{
    int by_rows = rows <= cols;
    uint32_t count = by_rows ? rows : cols, len = by_rows ? cols : rows;
    double worst = 0.0;
    for (uint32_t a = 0; a < count; a++)
        for (uint32_t b = 0; b < count; b++) {
            double dot = 0.0;
            for (uint32_t k = 0; k < len; k++)
                dot += by_rows ? (double)w[a * cols + k] * w[b * cols + k]
                               : (double)w[k * cols + a] * w[k * cols + b];
            double err = fabs(dot / ((double)gain * gain) - (a == b));
            worst = err > worst ? err : worst;
        }
    return worst;
}

static void test_init_is_orthogonal_with_gains(void)
{
    uint32_t sizes[] = {4, 64, 64, 2};
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    VL_CHECK(vl_mlp_init(net, &rng, sqrtf(2.0f), 0.01f) == 0);
    const float *p = vl_mlp_params(net);
    for (uint32_t l = 0; l < 3; l++) {
        uint32_t in = sizes[l], out = sizes[l + 1];
        const float *w = p + vl_mlp_weight_offset(net, l);
        float gain = l == 2 ? 0.01f : sqrtf(2.0f);
        VL_CHECK_NEAR(s_orthogonality_error(w, out, in, gain), 0.0, 1e-4);
        for (uint32_t o = 0; o < out; o++)
            VL_CHECK(w[out * in + o] == 0.0f);
    }
    vl_mlp_destroy(&net);
}

static void test_init_is_deterministic_from_seed(void)
{
    uint32_t sizes[] = {4, 8, 3};
    vl_mlp_t *a = vl_mlp_new(2, sizes), *b = vl_mlp_new(2, sizes), *c = vl_mlp_new(2, sizes);
    VL_CHECK(a && b && c);
    vl_rng_t ra, rb, rc;
    vl_rng_seed(&ra, 42);
    vl_rng_seed(&rb, 42);
    vl_rng_seed(&rc, 43);
    VL_CHECK(vl_mlp_init(a, &ra, 1.0f, 1.0f) == 0 && vl_mlp_init(b, &rb, 1.0f, 1.0f) == 0 &&
             vl_mlp_init(c, &rc, 1.0f, 1.0f) == 0);
    size_t bytes = vl_mlp_param_count(a) * sizeof(float);
    int same = memcmp(vl_mlp_params(a), vl_mlp_params(b), bytes) == 0;
    int differs = memcmp(vl_mlp_params(a), vl_mlp_params(c), bytes) != 0;
    vl_mlp_destroy(&a);
    vl_mlp_destroy(&b);
    vl_mlp_destroy(&c);
    VL_CHECK(same);
    VL_CHECK(differs);
}

/* A sample's output must not depend on the batch it is in, across the
   scratch buffers growing and the batch shrinking again. */
static void test_batch_sizes_give_the_same_outputs(void)
{
    enum { N = 100, IN = 4, OUT = 3 };
    uint32_t sizes[] = {IN, 16, 16, OUT};
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 9);
    VL_CHECK(vl_mlp_init(net, &rng, 1.4f, 1.0f) == 0);
    static float x[N * IN], batch[N * OUT];
    s_fill(&rng, x, N * IN, 2.0);
    float single[OUT], small[3 * OUT];
    VL_CHECK(vl_mlp_forward(net, 1, x + 7 * IN, single) == 0);
    VL_CHECK(vl_mlp_forward(net, N, x, batch) == 0);
    VL_CHECK(vl_mlp_forward(net, 3, x + 6 * IN, small) == 0);
    for (int o = 0; o < OUT; o++) {
        VL_CHECK(single[o] == batch[7 * OUT + o]);
        VL_CHECK(single[o] == small[OUT + o]);
    }
    vl_mlp_destroy(&net);
}

/* Runs forward and backward of a 3-layer net of the given sizes over n
   inputs with the given kernels; writes y, dx and the gradients. */
static int s_run_kernels(const uint32_t *sizes, int kernels, const float *params, uint32_t n,
                         const float *x, const float *c, float *y, float *dx, float *grads)
{
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    if (!net || vl_mlp_set_kernels(net, kernels) > kernels) {
        vl_mlp_destroy(&net);
        return -1;
    }
    size_t count = vl_mlp_param_count(net);
    memcpy(vl_mlp_params(net), params, count * sizeof(float));
    int rc = vl_mlp_forward(net, n, x, y);
    if (rc == 0) {
        vl_mlp_backward(net, n, c, dx);
        memcpy(grads, vl_mlp_grads(net), count * sizeof(float));
    }
    vl_mlp_destroy(&net);
    return rc;
}

/* Returns the worst of |a - b| / (1 + |b|) over count floats. */
static double s_worst(const float *a, const float *b, size_t count)
{
    double worst = 0.0;
    for (size_t k = 0; k < count; k++)
        worst = fmax(worst, fabs((double)a[k] - b[k]) / (1.0 + fabs(b[k])));
    return worst;
}

/* Every kernel set against oneDNN's products (kernel set 0), on shapes that take
   every block and tail of the blocked kernels (widths 1 .. 65, batches 1 ..
   9), with dense inputs and with sparse ones (mostly zeros). */
static void test_kernels_match_onednn(void)
{
    static const uint32_t widths[] = {1, 3, 5, 8, 16, 17, 24, 63, 64, 65};
    enum { W = sizeof widths / sizeof widths[0] };
    vl_rng_t rng;
    vl_rng_seed(&rng, 77);
    int compared = 0;
    for (int round = 0; round < 120; round++) {
        uint32_t sizes[4];
        for (int l = 0; l < 4; l++)
            sizes[l] = widths[vl_rng_below(&rng, W)];
        if (round % 3 == 0)
            sizes[1] = 8 * (1 + (uint32_t)vl_rng_below(&rng, 9)); // whole AVX2 blocks
        if (round % 2 == 0)
            sizes[0] = 16 + (uint32_t)vl_rng_below(&rng, 300);
        uint32_t n = 1 + (uint32_t)vl_rng_below(&rng, 9), in = sizes[0], out = sizes[3];
        int sparse = round % 4 < 2;
        vl_mlp_t *shape = vl_mlp_new(3, sizes);
        VL_CHECK(shape);
        size_t count = vl_mlp_param_count(shape);
        vl_mlp_destroy(&shape);
        float *params = malloc(count * sizeof(float)), *x = malloc(n * in * sizeof(float));
        float *c = malloc(n * out * sizeof(float));
        float *y[3], *dx[3], *g[3];
        for (int k = 0; k < 3; k++) {
            y[k] = malloc(n * out * sizeof(float));
            dx[k] = malloc(n * in * sizeof(float));
            g[k] = malloc(count * sizeof(float));
        }
        VL_CHECK(params && x && c && y[2] && dx[2] && g[2]);
        s_fill(&rng, params, count, 0.5);
        s_fill(&rng, x, n * in, 1.0);
        if (sparse)
            for (size_t k = 0; k < n * in; k++)
                x[k] = vl_rng_below(&rng, 7) == 0 ? x[k] : 0.0f;
        s_fill(&rng, c, n * out, 1.0);
        int ran[3];
        for (int k = 0; k < 3; k++)
            ran[k] = s_run_kernels(sizes, k, params, n, x, c, y[k], dx[k], g[k]) == 0;
        VL_CHECK(ran[0] && ran[1]);
        for (int k = 1; k < 3; k++) {
            if (!ran[k])
                continue; // no AVX2 here
            VL_CHECK_NEAR(s_worst(y[k], y[0], n * out), 0.0, 1e-5);
            VL_CHECK_NEAR(s_worst(dx[k], dx[0], n * in), 0.0, 1e-5);
            VL_CHECK_NEAR(s_worst(g[k], g[0], count), 0.0, 1e-5);
            compared++;
        }
        for (int k = 0; k < 3; k++) {
            free(y[k]);
            free(dx[k]);
            free(g[k]);
        }
        free(params);
        free(x);
        free(c);
    }
    VL_CHECK(compared >= 120);
}

/* A sample of mostly zero inputs gives the same output alone and among
   dense ones. */
static void test_sparse_inputs_give_the_same_outputs(void)
{
    enum { N = 6, IN = 100, OUT = 3 };
    uint32_t sizes[] = {IN, 64, 64, OUT};
    vl_mlp_t *net = vl_mlp_new(3, sizes);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 21);
    VL_CHECK(vl_mlp_init(net, &rng, 1.4f, 1.0f) == 0);
    static float x[N * IN], batch[N * OUT];
    s_fill(&rng, x, N * IN, 2.0);
    for (int k = 0; k < IN; k++)
        x[k] = k % 9 == 0 ? 1.0f + (float)(k % 3) : 0.0f;
    float single[OUT];
    VL_CHECK(vl_mlp_forward(net, 1, x, single) == 0);
    VL_CHECK(vl_mlp_forward(net, N, x, batch) == 0);
    for (int o = 0; o < OUT; o++)
        VL_CHECK(single[o] == batch[o]);
    vl_mlp_destroy(&net);
}

int main(void)
{
    VL_RUN(test_forward_matches_hand_computed_values);
    VL_RUN(test_tanh_matches_libm);
    VL_RUN(test_new_refuses_bad_sizes);
    VL_RUN(test_forward_matches_a_plain_computation);
    VL_RUN(test_gradients_match_finite_differences);
    VL_RUN(test_wide_gradients_match_finite_differences);
    VL_RUN(test_relu_and_none_match_finite_differences);
    VL_RUN(test_backward_adds_into_gradients);
    VL_RUN(test_init_is_orthogonal_with_gains);
    VL_RUN(test_init_is_deterministic_from_seed);
    VL_RUN(test_batch_sizes_give_the_same_outputs);
    VL_RUN(test_kernels_match_onednn);
    VL_RUN(test_sparse_inputs_give_the_same_outputs);
    return VL_DONE();
}
