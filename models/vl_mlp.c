/*  vl_mlp: fully connected tanh net with a linear output layer; see vl_mlp.h.

    A layer's products (forward y = x W^T + b, weight gradient dW += g^T x,
    input gradient gx = g W) are vl_matmul_linear's, on oneDNN (DNNL) or on
    its portable loops (PORTABLE: the one fixed order volley replay runs
    on), or, by default on a CPU with AVX2 and FMA, the register-blocked
    kernels below. Why these stay: bench/vl_mlp_bench times the sets at
    CartPole's size (4 -> 64 -> 64 -> 2, 8 to 256 samples); on one thread
    oneDNN matches them forward and is up to a quarter faster forward +
    backward from 32 samples, but these run on the calling thread alone, so
    actors and a learner sharing cores never wait at an OpenMP barrier:
    `volley up` solves CartPole in 1.0 to 1.6 s on them, 1.4 to 6.3 s on
    oneDNN's products with one OpenMP thread and 5 to 117 s with two. And a
    sample's result is the same bits in any batch by their construction. */
#include "vl_mlp.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vl_init.h"
#include "vl_matmul.h"
#include "vl_tanh.h"

#define S_LANES 8 // floats per chunk: two SSE or one AVX register

struct vl_mlp_s {
    uint32_t n_layers;
    uint32_t sizes[VL_MLP_MAX_LAYERS + 1];
    size_t offset[VL_MLP_MAX_LAYERS]; // of layer l's weight; its bias follows
    size_t n_params;
    uint32_t max_width;             // widest of sizes[]
    float *params;                  // [n_params]
    float *grads;                   // [n_params]
    float *wt;                      // weights transposed [in][out], params' offsets
    float *acts[VL_MLP_MAX_LAYERS]; // input of layer l, [cap][sizes[l]]
    float *delta[2];                // backward ping-pong, [cap][max_width]
    uint32_t cap;                   // samples the scratch buffers hold
    uint32_t n_cached;              // samples of the last forward
    uint8_t act[VL_MLP_MAX_LAYERS]; // VL_MLP_ACT_* after each layer
    int kernels;                    // VL_MLP_KERNELS_*, chosen at vl_mlp_new
    vl_matmul_t *mm;                // the DNNL and PORTABLE kernels' products, made at first use
};

/* y[k] = tanh(y[k]) for k < n. Always inlined: s_tanh_avx2 is this loop
   compiled for AVX2+FMA, which a call to the portable copy would lose (it
   did: the learner's update ran 15% slower). */
static inline __attribute__((always_inline)) void s_tanh_inplace(size_t n, float *y)
{
    size_t k = 0;
    for (; k + S_LANES <= n; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            y[k + j] = vl_tanhf(y[k + j]);
    for (; k < n; k++)
        y[k] = vl_tanhf(y[k]);
}

/* y[k] += alpha * x[k] for k < n. */
static inline void s_axpy(size_t n, float alpha, const float *restrict x, float *restrict y)
{
    size_t k = 0;
    for (; k + S_LANES <= n; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            y[k + j] += alpha * x[k + j];
    for (; k < n; k++)
        y[k] += alpha * x[k];
}

/* ---- AVX2+FMA kernels, chosen at run time (vl_mlp_new). ------------------
   Every output is accumulated in one fixed order: start from the bias (or
   zero), then one fused multiply-add per input in increasing input order.
   So a sample's result does not depend on which samples share its block,
   and a zero input adds a zero. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define S_HAVE_AVX2 1
#include <immintrin.h>

#define S_AVX2   __attribute__((target("avx2,fma")))
#define S_INLINE static inline __attribute__((always_inline))
#define S_WTILE  64 // samples per weight-gradient pass

/* Returns the lane mask of the first r lanes, r <= 8. */
S_INLINE S_AVX2 __m256i s_mask8(size_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* c[s][0:16] = init (or 0) + sum_k a[s][k] b[k][0:16] for nb <= 4 samples. */
S_INLINE S_AVX2 void s_gemm16_avx2(const int nb, size_t p, const float *a, size_t lda,
                                   const float *b, size_t ldb, const float *init, float *c,
                                   size_t ldc)
{
    __m256 acc0[4], acc1[4];
    __m256 i0 = init ? _mm256_loadu_ps(init) : _mm256_setzero_ps();
    __m256 i1 = init ? _mm256_loadu_ps(init + 8) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++) {
        acc0[s] = i0;
        acc1[s] = i1;
    }
    for (size_t k = 0; k < p; k++) {
        __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + 8);
#pragma GCC unroll 4
        for (int s = 0; s < nb; s++) {
            __m256 x = _mm256_broadcast_ss(a + s * lda + k);
            acc0[s] = _mm256_fmadd_ps(x, b0, acc0[s]);
            acc1[s] = _mm256_fmadd_ps(x, b1, acc1[s]);
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++) {
        _mm256_storeu_ps(c + s * ldc, acc0[s]);
        _mm256_storeu_ps(c + s * ldc + 8, acc1[s]);
    }
}

/* As s_gemm16_avx2 for the columns of mask, at most 8. */
S_INLINE S_AVX2 void s_gemm8_avx2(const int nb, size_t p, const float *a, size_t lda,
                                  const float *b, size_t ldb, const float *init, float *c,
                                  size_t ldc, __m256i mask)
{
    __m256 acc[4];
    __m256 i0 = init ? _mm256_maskload_ps(init, mask) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++)
        acc[s] = i0;
    for (size_t k = 0; k < p; k++) {
        __m256 b0 = _mm256_maskload_ps(b + k * ldb, mask);
#pragma GCC unroll 4
        for (int s = 0; s < nb; s++)
            acc[s] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + s * lda + k), b0, acc[s]);
    }
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++)
        _mm256_maskstore_ps(c + s * ldc, mask, acc[s]);
}

/* c [n][m] = init (or 0, when NULL) + a [n][p] b [p][m], row strides lda,
   ldb, ldc. Four samples per pass reuse every load of b. */
static S_AVX2 void s_gemm_avx2(size_t n, size_t p, size_t m, const float *a, size_t lda,
                               const float *b, size_t ldb, const float *init, float *c, size_t ldc)
{
    for (size_t i = 0; i < n; i += 4) {
        const float *ai = a + i * lda;
        float *ci = c + i * ldc;
        size_t nb = n - i < 4 ? n - i : 4, j = 0;
        for (; j + 16 <= m; j += 16) {
            const float *ij = init ? init + j : NULL;
            switch (nb) {
            case 4:
                s_gemm16_avx2(4, p, ai, lda, b + j, ldb, ij, ci + j, ldc);
                break;
            case 3:
                s_gemm16_avx2(3, p, ai, lda, b + j, ldb, ij, ci + j, ldc);
                break;
            case 2:
                s_gemm16_avx2(2, p, ai, lda, b + j, ldb, ij, ci + j, ldc);
                break;
            default:
                s_gemm16_avx2(1, p, ai, lda, b + j, ldb, ij, ci + j, ldc);
                break;
            }
        }
        for (; j < m; j += 8) {
            const float *ij = init ? init + j : NULL;
            __m256i mask = s_mask8(m - j < 8 ? m - j : 8);
            switch (nb) {
            case 4:
                s_gemm8_avx2(4, p, ai, lda, b + j, ldb, ij, ci + j, ldc, mask);
                break;
            case 3:
                s_gemm8_avx2(3, p, ai, lda, b + j, ldb, ij, ci + j, ldc, mask);
                break;
            case 2:
                s_gemm8_avx2(2, p, ai, lda, b + j, ldb, ij, ci + j, ldc, mask);
                break;
            default:
                s_gemm8_avx2(1, p, ai, lda, b + j, ldb, ij, ci + j, ldc, mask);
                break;
            }
        }
    }
}

/* Returns the sum of the lanes of v, in a fixed order. */
S_INLINE S_AVX2 float s_hsum_avx2(__m256 v)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

/* c[s][o] = bias[o] + dot(a[s], w[o]) over p, for nb <= 4 samples and no <= 2
   outputs: the narrow output heads, w [out][p] untransposed. */
S_INLINE S_AVX2 void s_dot_blk_avx2(const int nb, const int no, size_t p, const float *a,
                                    size_t lda, const float *w, const float *bias, float *c,
                                    size_t ldc)
{
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++)
#pragma GCC unroll 2
        for (int o = 0; o < no; o++)
            acc[s][o] = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= p; k += 8) {
        __m256 wv[2];
#pragma GCC unroll 2
        for (int o = 0; o < no; o++)
            wv[o] = _mm256_loadu_ps(w + o * p + k);
#pragma GCC unroll 4
        for (int s = 0; s < nb; s++) {
            __m256 x = _mm256_loadu_ps(a + s * lda + k);
#pragma GCC unroll 2
            for (int o = 0; o < no; o++)
                acc[s][o] = _mm256_fmadd_ps(x, wv[o], acc[s][o]);
        }
    }
    if (k < p) {
        __m256i mask = s_mask8(p - k);
        __m256 wv[2];
#pragma GCC unroll 2
        for (int o = 0; o < no; o++)
            wv[o] = _mm256_maskload_ps(w + o * p + k, mask);
#pragma GCC unroll 4
        for (int s = 0; s < nb; s++) {
            __m256 x = _mm256_maskload_ps(a + s * lda + k, mask);
#pragma GCC unroll 2
            for (int o = 0; o < no; o++)
                acc[s][o] = _mm256_fmadd_ps(x, wv[o], acc[s][o]);
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < nb; s++)
#pragma GCC unroll 2
        for (int o = 0; o < no; o++)
            c[s * ldc + o] = bias[o] + s_hsum_avx2(acc[s][o]);
}

/* c [n][m] = bias + a [n][p] w^T, w [m][p]: for narrow outputs. */
static S_AVX2 void s_dot_avx2(size_t n, size_t p, size_t m, const float *a, const float *w,
                              const float *bias, float *c)
{
    for (size_t i = 0; i < n; i += 4) {
        size_t nb = n - i < 4 ? n - i : 4;
        for (size_t o = 0; o < m; o += 2) {
            const float *ai = a + i * p, *wo = w + o * p;
            float *co = c + i * m + o;
            int two = m - o >= 2;
            // Constant block sizes in every call, so that each inlined copy of
            // s_dot_blk_avx2 keeps its accumulators in registers.
            switch (nb * 2 + (size_t)two) {
            case 9:
                s_dot_blk_avx2(4, 2, p, ai, p, wo, bias + o, co, m);
                break;
            case 8:
                s_dot_blk_avx2(4, 1, p, ai, p, wo, bias + o, co, m);
                break;
            case 7:
                s_dot_blk_avx2(3, 2, p, ai, p, wo, bias + o, co, m);
                break;
            case 6:
                s_dot_blk_avx2(3, 1, p, ai, p, wo, bias + o, co, m);
                break;
            case 5:
                s_dot_blk_avx2(2, 2, p, ai, p, wo, bias + o, co, m);
                break;
            case 4:
                s_dot_blk_avx2(2, 1, p, ai, p, wo, bias + o, co, m);
                break;
            case 3:
                s_dot_blk_avx2(1, 2, p, ai, p, wo, bias + o, co, m);
                break;
            default:
                s_dot_blk_avx2(1, 1, p, ai, p, wo, bias + o, co, m);
                break;
            }
        }
    }
}

/* dw[o][0:16 or the columns of mask] += sum_i g[i][o] x[i][...] for no <= 4
   rows o, over n samples; nv vectors, the last masked when `masked`. */
S_INLINE S_AVX2 void s_wgrad_blk_avx2(const int no, const int nv, const int masked, size_t n,
                                      const float *x, size_t in, const float *g, size_t out,
                                      float *dw, __m256i mask)
{
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int o = 0; o < no; o++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++)
            acc[o][v] = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i++) {
        __m256 xv[2];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++)
            xv[v] = masked && v == nv - 1 ? _mm256_maskload_ps(x + i * in + 8 * v, mask)
                                          : _mm256_loadu_ps(x + i * in + 8 * v);
#pragma GCC unroll 4
        for (int o = 0; o < no; o++) {
            __m256 gb = _mm256_broadcast_ss(g + i * out + o);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++)
                acc[o][v] = _mm256_fmadd_ps(gb, xv[v], acc[o][v]);
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < no; o++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            float *d = dw + o * in + 8 * v;
            if (masked && v == nv - 1)
                _mm256_maskstore_ps(d, mask, _mm256_add_ps(_mm256_maskload_ps(d, mask), acc[o][v]));
            else
                _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), acc[o][v]));
        }
}

/* Rows o0 .. o0 + no of dw for one column chunk of n samples. */
S_INLINE S_AVX2 void s_wgrad_rows_avx2(const int nv, const int masked, size_t no, size_t n,
                                       const float *x, size_t in, const float *g, size_t out,
                                       float *dw, __m256i mask)
{
    switch (no) {
    case 4:
        s_wgrad_blk_avx2(4, nv, masked, n, x, in, g, out, dw, mask);
        break;
    case 3:
        s_wgrad_blk_avx2(3, nv, masked, n, x, in, g, out, dw, mask);
        break;
    case 2:
        s_wgrad_blk_avx2(2, nv, masked, n, x, in, g, out, dw, mask);
        break;
    default:
        s_wgrad_blk_avx2(1, nv, masked, n, x, in, g, out, dw, mask);
        break;
    }
}

/* dw [out][in] += g^T x over n samples, x [n][in], g [n][out]; db += sum g. */
static S_AVX2 void s_weight_grad_avx2(float *dw, size_t in, size_t out, size_t n, const float *x,
                                      const float *g)
{
    const __m256i ones = _mm256_set1_epi32(-1);
    for (size_t i0 = 0; i0 < n; i0 += S_WTILE) {
        size_t tile = n - i0 < S_WTILE ? n - i0 : S_WTILE;
        const float *xt = x + i0 * in, *gt = g + i0 * out;
        size_t k = 0;
        for (; k + 16 <= in; k += 16)
            for (size_t o = 0; o < out; o += 4)
                s_wgrad_rows_avx2(2, 0, out - o < 4 ? out - o : 4, tile, xt + k, in, gt + o, out,
                                  dw + o * in + k, ones);
        if (k + 8 <= in) {
            for (size_t o = 0; o < out; o += 4)
                s_wgrad_rows_avx2(1, 0, out - o < 4 ? out - o : 4, tile, xt + k, in, gt + o, out,
                                  dw + o * in + k, ones);
            k += 8;
        }
        if (k < in) {
            __m256i mask = s_mask8(in - k);
            for (size_t o = 0; o < out; o += 4)
                s_wgrad_rows_avx2(1, 1, out - o < 4 ? out - o : 4, tile, xt + k, in, gt + o, out,
                                  dw + o * in + k, mask);
        }
    }
    float *db = dw + out * in;
    for (size_t i = 0; i < n; i++)
        s_axpy(out, 1.0f, g + i * out, db);
}

/* y[k] = tanh(y[k]) for k < n, eight lanes wide. */
static S_AVX2 void s_tanh_avx2(size_t n, float *y)
{
    s_tanh_inplace(n, y);
}

/* g[k] *= 1 - h[k]^2, eight lanes wide. */
static S_AVX2 void s_tanh_backward_avx2(size_t count, const float *restrict h, float *restrict g)
{
    size_t k = 0;
    for (; k + 8 <= count; k += 8) {
        __m256 hv = _mm256_loadu_ps(h + k);
        __m256 d = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(hv, hv));
        _mm256_storeu_ps(g + k, _mm256_mul_ps(_mm256_loadu_ps(g + k), d));
    }
    for (; k < count; k++)
        g[k] *= 1.0f - h[k] * h[k];
}

/* Returns whether this CPU runs the AVX2 kernels. */
static int s_cpu_has_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#define S_HAVE_AVX2 0
static int s_cpu_has_avx2(void)
{
    return 0;
}
#endif

vl_mlp_t *vl_mlp_new(uint32_t n_layers, const uint32_t *sizes)
{
    if (n_layers == 0 || n_layers > VL_MLP_MAX_LAYERS)
        return NULL;
    vl_mlp_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n_layers = n_layers;
    for (uint32_t i = 0; i <= n_layers; i++) {
        if (sizes[i] == 0) {
            free(self);
            return NULL;
        }
        self->sizes[i] = sizes[i];
        if (sizes[i] > self->max_width)
            self->max_width = sizes[i];
    }
    for (uint32_t l = 0; l < n_layers; l++) {
        self->act[l] = l + 1 < n_layers ? VL_MLP_ACT_TANH : VL_MLP_ACT_NONE;
        self->offset[l] = self->n_params;
        self->n_params += (size_t)sizes[l + 1] * (sizes[l] + 1);
    }
    self->params = calloc(self->n_params, sizeof(float));
    self->grads = calloc(self->n_params, sizeof(float));
    self->wt = calloc(self->n_params, sizeof(float));
    self->kernels = s_cpu_has_avx2() ? VL_MLP_KERNELS_AVX2 : VL_MLP_KERNELS_PORTABLE;
    if (!self->params || !self->grads || !self->wt)
        vl_mlp_destroy(&self);
    return self;
}

void vl_mlp_destroy(vl_mlp_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_mlp_t *self = *self_p;
    for (uint32_t l = 0; l < self->n_layers; l++)
        free(self->acts[l]);
    free(self->delta[0]);
    free(self->delta[1]);
    free(self->params);
    free(self->grads);
    free(self->wt);
    vl_matmul_destroy(&self->mm);
    free(self);
    *self_p = NULL;
}

int vl_mlp_init(vl_mlp_t *self, vl_rng_t *rng, float hidden_gain, float out_gain)
{
    size_t most = 0;
    for (uint32_t l = 0; l < self->n_layers; l++) {
        size_t size = (size_t)self->sizes[l] * self->sizes[l + 1];
        if (size > most)
            most = size;
    }
    double *q = malloc(most * sizeof *q);
    if (!q)
        return -1;
    for (uint32_t l = 0; l < self->n_layers; l++) {
        uint32_t in = self->sizes[l], out = self->sizes[l + 1];
        float gain = l + 1 == self->n_layers ? out_gain : hidden_gain;
        float *w = self->params + self->offset[l];
        vl_orthogonal(w, out, in, gain, q, rng);
        memset(w + (size_t)out * in, 0, out * sizeof(float));
    }
    free(q);
    return 0;
}

uint32_t vl_mlp_layers(const vl_mlp_t *self)
{
    return self->n_layers;
}

uint32_t vl_mlp_size(const vl_mlp_t *self, uint32_t i)
{
    return self->sizes[i];
}

size_t vl_mlp_param_count(const vl_mlp_t *self)
{
    return self->n_params;
}

float *vl_mlp_params(vl_mlp_t *self)
{
    return self->params;
}

float *vl_mlp_grads(vl_mlp_t *self)
{
    return self->grads;
}

size_t vl_mlp_weight_offset(const vl_mlp_t *self, uint32_t l)
{
    return self->offset[l];
}

/* Grows buf to hold count floats; on failure the old buffer stays. */
static int s_grow(float **buf, size_t count)
{
    float *grown = realloc(*buf, count * sizeof(float));
    if (!grown)
        return -1;
    *buf = grown;
    return 0;
}

/* Makes every scratch buffer hold n samples, doubling so that a slowly
   growing n reallocates rarely. Returns 0, or -1 on no memory. */
static int s_reserve(vl_mlp_t *self, uint32_t n)
{
    if (n <= self->cap)
        return 0;
    size_t cap = (size_t)self->cap * 2 > n ? (size_t)self->cap * 2 : n;
    if (cap > UINT32_MAX)
        cap = n;
    for (uint32_t l = 0; l < self->n_layers; l++)
        if (s_grow(&self->acts[l], cap * self->sizes[l]) != 0)
            return -1;
    if (s_grow(&self->delta[0], cap * self->max_width) != 0 ||
        s_grow(&self->delta[1], cap * self->max_width) != 0)
        return -1;
    self->cap = (uint32_t)cap;
    return 0;
}

#if S_HAVE_AVX2
/* Writes w [out][in] transposed into wt [in][out]. */
static void s_transpose(const float *restrict w, size_t in, size_t out, float *restrict wt)
{
    for (size_t o = 0; o < out; o++)
        for (size_t k = 0; k < in; k++)
            wt[k * out + o] = w[o * in + k];
}

/* The AVX2 forward of layer l, then tanh when `hidden`: narrow layers (out <
   S_LANES: the output heads) as dot products with the rows of w, wide ones
   on W transposed. */
static void s_layer_forward_avx2(vl_mlp_t *self, uint32_t l, int hidden, size_t n, const float *x,
                                 float *y)
{
    size_t in = self->sizes[l], out = self->sizes[l + 1];
    const float *w = self->params + self->offset[l], *b = w + out * in;
    float *wt = self->wt + self->offset[l];
    if (out < S_LANES) {
        s_dot_avx2(n, in, out, x, w, b, y);
    } else {
        s_transpose(w, in, out, wt);
        s_gemm_avx2(n, in, out, x, in, wt, out, b, y, out);
    }
    if (hidden)
        s_tanh_avx2(n * out, y);
}
#endif

/* y[k] = max(y[k], 0) for k < n (NaN stays NaN, as torch's relu). */
static void s_relu_inplace(size_t n, float *y)
{
    for (size_t k = 0; k < n; k++)
        y[k] = y[k] < 0.0f ? 0.0f : y[k];
}

/* g[k] = 0 where the relu's output h[k] was 0, over count floats. */
static void s_relu_backward(size_t count, const float *restrict h, float *restrict g)
{
    for (size_t k = 0; k < count; k++)
        g[k] = h[k] > 0.0f ? g[k] : 0.0f;
}

/* Makes the products the DNNL and PORTABLE kernels run on, at their first
   use. Returns 0, or -1 (logged) without oneDNN's engine. */
static int s_products(vl_mlp_t *self)
{
    if (self->mm)
        return 0;
    if (!(self->mm = vl_matmul_new()))
        return -1;
    if (self->kernels == VL_MLP_KERNELS_PORTABLE)
        vl_matmul_set_portable(self->mm);
    return 0;
}

int vl_mlp_forward(vl_mlp_t *self, uint32_t n, const float *x, float *y)
{
    if (s_reserve(self, n) != 0)
        return -1;
    uint32_t last = self->n_layers - 1;
    if (self->kernels != VL_MLP_KERNELS_AVX2 && s_products(self) != 0)
        return -1;
    memcpy(self->acts[0], x, (size_t)n * self->sizes[0] * sizeof(float));
    for (uint32_t l = 0; l <= last; l++) {
        size_t in = self->sizes[l], out = self->sizes[l + 1];
        const float *w = self->params + self->offset[l];
        float *yl = l == last ? y : self->acts[l + 1];
        int tanh_after = self->act[l] == VL_MLP_ACT_TANH;
#if S_HAVE_AVX2
        if (self->kernels == VL_MLP_KERNELS_AVX2) {
            s_layer_forward_avx2(self, l, tanh_after, n, self->acts[l], yl);
        } else
#endif
        {
            if (vl_matmul_linear(self->mm, n, in, out, self->acts[l], w, w + out * in, yl) != 0)
                return -1;
            if (tanh_after)
                s_tanh_inplace((size_t)n * out, yl);
        }
        if (self->act[l] == VL_MLP_ACT_RELU)
            s_relu_inplace((size_t)n * out, yl);
    }
    self->n_cached = n;
    return 0;
}

/* g[k] *= tanh'(z) = 1 - h[k]^2 where h = tanh(z), over count floats. */
static void s_tanh_backward(size_t count, const float *restrict h, float *restrict g)
{
    size_t k = 0;
    for (; k + S_LANES <= count; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            g[k + j] *= 1.0f - h[k + j] * h[k + j];
    for (; k < count; k++)
        g[k] *= 1.0f - h[k] * h[k];
}

#if S_HAVE_AVX2
/* The AVX2 backward of layer l, given g = d(loss)/d(its output before any
   tanh); writes gx = d(loss)/d(its input) when not NULL. */
static void s_layer_backward_avx2(vl_mlp_t *self, uint32_t l, size_t n, const float *g, float *gx)
{
    size_t in = self->sizes[l], out = self->sizes[l + 1];
    float *dw = self->grads + self->offset[l];
    const float *x = self->acts[l];
    s_weight_grad_avx2(dw, in, out, n, x, g);
    if (gx)
        s_gemm_avx2(n, out, in, g, out, self->params + self->offset[l], in, NULL, gx, in);
}
#endif

/* The backward of layer l on vl_matmul, given g = d(loss)/d(its output
   before any activation); writes gx = d(loss)/d(its input) when not NULL.
   Returns 0, or -1 (logged) when vl_matmul fails. */
static int s_layer_backward_mm(vl_mlp_t *self, uint32_t l, size_t n, const float *g, float *gx)
{
    size_t in = self->sizes[l], out = self->sizes[l + 1];
    const float *w = self->params + self->offset[l];
    float *dw = self->grads + self->offset[l];
    return vl_matmul_linear_backward(self->mm, (int64_t)n, (int64_t)in, (int64_t)out, self->acts[l],
                                     w, g, dw, dw + out * in, gx, 0);
}

int vl_mlp_backward(vl_mlp_t *self, uint32_t n, const float *dy, float *dx)
{
    assert(n == self->n_cached && "backward must follow a forward over the same n");
    const float *g = dy;
    for (uint32_t l = self->n_layers; l-- > 0;) {
        size_t in = self->sizes[l];
        float *gx = l > 0 ? self->delta[l % 2] : dx;
        int tanh_before = l > 0 && self->act[l - 1] == VL_MLP_ACT_TANH;
#if S_HAVE_AVX2
        if (self->kernels == VL_MLP_KERNELS_AVX2) {
            s_layer_backward_avx2(self, l, n, g, gx);
            if (tanh_before)
                s_tanh_backward_avx2((size_t)n * in, self->acts[l], gx);
        } else
#endif
        {
            if (s_layer_backward_mm(self, l, n, g, gx) != 0)
                return -1;
            if (tanh_before)
                s_tanh_backward((size_t)n * in, self->acts[l], gx);
        }
        if (l > 0 && self->act[l - 1] == VL_MLP_ACT_RELU)
            s_relu_backward((size_t)n * in, self->acts[l], gx);
        g = gx;
    }
    return 0;
}

int vl_mlp_set_activation(vl_mlp_t *self, uint32_t l, int act)
{
    if (l + 1 >= self->n_layers || act < VL_MLP_ACT_NONE || act > VL_MLP_ACT_RELU)
        return -1; // the output layer stays linear: the backward starts from its output
    self->act[l] = (uint8_t)act;
    return 0;
}

int vl_mlp_set_kernels(vl_mlp_t *self, int kernels)
{
    if (kernels >= VL_MLP_KERNELS_AVX2 && !s_cpu_has_avx2())
        kernels = VL_MLP_KERNELS_PORTABLE;
    if (kernels > VL_MLP_KERNELS_AVX2)
        kernels = VL_MLP_KERNELS_AVX2;
    if (kernels < VL_MLP_KERNELS_DNNL)
        kernels = VL_MLP_KERNELS_DNNL;
    if (kernels != self->kernels)
        vl_matmul_destroy(&self->mm); // made again for the new set at the next forward
    self->kernels = kernels;
    self->n_cached = UINT32_MAX; // a backward needs a forward by the same kernels
    return kernels;
}

void vl_mlp_zero_grad(vl_mlp_t *self)
{
    memset(self->grads, 0, self->n_params * sizeof(float));
}
