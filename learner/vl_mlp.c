/*  vl_mlp: fully connected tanh net with a linear output layer; see vl_mlp.h.

    Speed. Every inner loop runs over contiguous floats in fixed chunks of
    S_LANES: gcc's -O2 cost model ("very cheap") vectorizes a loop only when
    its trip count is a known multiple of the vector width, so the chunked
    form is what lets plain -O2 use SIMD. All three products (forward, weight
    gradient, input gradient) are sums of rows scaled by scalars (s_combine),
    four rows per pass so that the row being summed into is loaded and stored
    once per four multiply-adds, and none needs a horizontal sum. The forward
    works on a transposed copy of each wide weight matrix, refreshed at every
    call (out * in floats against n * out * in multiply-adds). */
#include "vl_mlp.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_LANES 8  // floats per chunk: two SSE or one AVX register
#define S_TILE  16 // samples per weight-gradient pass: their inputs stay in L1

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
};

/* Returns sum a[k] * b[k] over k < n. */
static inline float s_dot(size_t n, const float *restrict a, const float *restrict b)
{
    float acc[S_LANES] = {0};
    size_t k = 0;
    for (; k + S_LANES <= n; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            acc[j] += a[k + j] * b[k + j];
    float sum = 0.0f;
    for (; k < n; k++)
        sum += a[k] * b[k];
    for (size_t j = 0; j < S_LANES; j++)
        sum += acc[j];
    return sum;
}

/* Returns tanh(x) within 2.5e-7 relative; NaN stays NaN. libm's tanhf is
   scalar and was over half of a training step; this one vectorizes. It
   clamps with integer operations on the bits because under the default
   -ftrapping-math gcc does not turn a float compare into a vector select.
   tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2) with 2|x| = (n + f) ln 2,
   |f| <= 1/2, and 2^f - 1 by its Taylor polynomial (error below 5e-9). */
static inline float s_tanh(float x)
{
    int32_t bits, abs_bits, out_bits;
    memcpy(&bits, &x, sizeof bits);
    int32_t sign = bits & INT32_MIN, nan = (bits & INT32_MAX) > 0x7f800000 ? 0x7fc00000 : 0;
    abs_bits = bits & INT32_MAX;
    abs_bits = abs_bits < 0x41100000 ? abs_bits : 0x41100000; // 9.0f: tanh(9) is 1 in float
    float a;
    memcpy(&a, &abs_bits, sizeof a);
    float t = a * 2.88539008f;       // 2|x| / ln 2, in [0, 26]
    int32_t n = (int32_t)(t + 0.5f); // nearest integer, t >= 0
    float f = t - (float)n;
    float q = 1.52527338e-5f; // sum (f ln2)^k / k!, k = 7 down to 1
    q = q * f + 1.54035304e-4f;
    q = q * f + 1.33335581e-3f;
    q = q * f + 9.61812911e-3f;
    q = q * f + 5.55041087e-2f;
    q = q * f + 2.40226507e-1f;
    q = q * f + 6.93147181e-1f;
    q = q * f;
    int32_t scale_bits = (n + 127) << 23; // 2^n
    float scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    float em1 = scale * q + (scale - 1.0f); // e^{2|x|} - 1, exact-ish near 0
    float r = em1 / (em1 + 2.0f);
    memcpy(&out_bits, &r, sizeof out_bits);
    out_bits |= sign | nan;
    memcpy(&r, &out_bits, sizeof r);
    return r;
}

/* y[k] = tanh(y[k]) for k < n. */
static inline void s_tanh_inplace(size_t n, float *y)
{
    size_t k = 0;
    for (; k + S_LANES <= n; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            y[k + j] = s_tanh(y[k + j]);
    for (; k < n; k++)
        y[k] = s_tanh(y[k]);
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

/* y[k] += a[0] x0[k] + a[1] x1[k] + a[2] x2[k] + a[3] x3[k] for k < n. */
static inline void s_axpy4(size_t n, const float *a, const float *restrict x0,
                           const float *restrict x1, const float *restrict x2,
                           const float *restrict x3, float *restrict y)
{
    const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    size_t k = 0;
    for (; k + S_LANES <= n; k += S_LANES)
        for (size_t j = 0; j < S_LANES; j++)
            y[k + j] += (a0 * x0[k + j] + a1 * x1[k + j]) + (a2 * x2[k + j] + a3 * x3[k + j]);
    for (; k < n; k++)
        y[k] += (a0 * x0[k] + a1 * x1[k]) + (a2 * x2[k] + a3 * x3[k]);
}

/* y[k] += sum over r < m of a[r * a_step] * x[r * x_step + k], for k < n:
   adds to y a combination of m rows of x (row r scaled by a[r * a_step]). */
static void s_combine(size_t n, size_t m, const float *a, size_t a_step, const float *x,
                      size_t x_step, float *restrict y)
{
    size_t r = 0;
    for (; r + 4 <= m; r += 4) {
        const float c[4] = {a[r * a_step], a[(r + 1) * a_step], a[(r + 2) * a_step],
                            a[(r + 3) * a_step]};
        const float *xr = x + r * x_step;
        s_axpy4(n, c, xr, xr + x_step, xr + 2 * x_step, xr + 3 * x_step, y);
    }
    for (; r < m; r++)
        s_axpy(n, a[r * a_step], x + r * x_step, y);
}

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
        self->offset[l] = self->n_params;
        self->n_params += (size_t)sizes[l + 1] * (sizes[l] + 1);
    }
    self->params = calloc(self->n_params, sizeof(float));
    self->grads = calloc(self->n_params, sizeof(float));
    self->wt = calloc(self->n_params, sizeof(float));
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
    free(self);
    *self_p = NULL;
}

/* Draws `count` orthonormal vectors of length `len` (count <= len) into q
   [count][len]: Gaussian vectors, modified Gram-Schmidt in double. This is
   the Q of a QR of a Gaussian matrix with R's diagonal made positive, which
   is what torch's orthogonal_ returns. */
static void s_orthonormal(double *q, size_t count, size_t len, vl_rng_t *rng)
{
    for (size_t v = 0; v < count; v++) {
        double *qv = q + v * len, norm = 0.0;
        // A redraw is for a vector in the span of the others: probability 0.
        for (int tries = 0; tries < 8 && norm < 1e-6; tries++) {
            for (size_t k = 0; k < len; k++)
                qv[k] = vl_rng_normal(rng);
            for (size_t u = 0; u < v; u++) {
                const double *qu = q + u * len;
                double proj = 0.0;
                for (size_t k = 0; k < len; k++)
                    proj += qu[k] * qv[k];
                for (size_t k = 0; k < len; k++)
                    qv[k] -= proj * qu[k];
            }
            norm = 0.0;
            for (size_t k = 0; k < len; k++)
                norm += qv[k] * qv[k];
            norm = sqrt(norm);
        }
        for (size_t k = 0; k < len; k++)
            qv[k] /= norm;
    }
}

/* Writes gain * an orthogonal rows x cols matrix into w: orthonormal rows
   when rows <= cols, orthonormal columns otherwise. q is scratch of
   rows * cols doubles. */
static void s_orthogonal(float *w, uint32_t rows, uint32_t cols, float gain, double *q,
                         vl_rng_t *rng)
{
    if (rows <= cols) {
        s_orthonormal(q, rows, cols, rng);
        for (size_t i = 0; i < (size_t)rows * cols; i++)
            w[i] = (float)(gain * q[i]);
    } else {
        s_orthonormal(q, cols, rows, rng);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                w[r * cols + c] = (float)(gain * q[c * rows + r]);
    }
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
        s_orthogonal(w, out, in, gain, q, rng);
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

/* Writes w [out][in] transposed into wt [in][out]. */
static void s_transpose(const float *restrict w, size_t in, size_t out, float *restrict wt)
{
    for (size_t o = 0; o < out; o++)
        for (size_t k = 0; k < in; k++)
            wt[k * out + o] = w[o * in + k];
}

/* y[i] = b + W x[i] for n samples, then tanh when `hidden`. Wide layers sum
   the rows of wt (W transposed) along y; narrow ones (out < S_LANES: the
   output heads) take dot products with the rows of w instead. */
static void s_layer_forward(const float *w, const float *wt, size_t in, size_t out, int hidden,
                            size_t n, const float *x, float *y)
{
    const float *b = w + out * in;
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * in;
        float *yi = y + i * out;
        if (out >= S_LANES) {
            memcpy(yi, b, out * sizeof(float));
            s_combine(out, in, xi, 1, wt, out, yi);
        } else {
            for (size_t o = 0; o < out; o++)
                yi[o] = b[o] + s_dot(in, w + o * in, xi);
        }
        if (hidden)
            s_tanh_inplace(out, yi);
    }
}

int vl_mlp_forward(vl_mlp_t *self, uint32_t n, const float *x, float *y)
{
    if (s_reserve(self, n) != 0)
        return -1;
    uint32_t last = self->n_layers - 1;
    memcpy(self->acts[0], x, (size_t)n * self->sizes[0] * sizeof(float));
    for (uint32_t l = 0; l <= last; l++) {
        size_t in = self->sizes[l], out = self->sizes[l + 1];
        const float *w = self->params + self->offset[l];
        float *wt = self->wt + self->offset[l];
        if (out >= S_LANES)
            s_transpose(w, in, out, wt);
        s_layer_forward(w, wt, in, out, l != last, n, self->acts[l],
                        l == last ? y : self->acts[l + 1]);
    }
    self->n_cached = n;
    return 0;
}

/* Adds the weight and bias gradients of one layer over n samples: dw[o] +=
   sum_i g[i][o] x[i] and db += sum_i g[i], with x [n][in] the layer's input
   and g [n][out] d(loss)/d(its output before any tanh). Tiles of S_TILE
   samples keep their inputs in L1 while every row of dw passes by. */
static void s_weight_grad(float *dw, size_t in, size_t out, size_t n, const float *x,
                          const float *g)
{
    float *db = dw + out * in;
    for (size_t i0 = 0; i0 < n; i0 += S_TILE) {
        size_t tile = n - i0 < S_TILE ? n - i0 : S_TILE;
        const float *xt = x + i0 * in, *gt = g + i0 * out;
        for (size_t o = 0; o < out; o++)
            s_combine(in, tile, gt + o, out, xt, in, dw + o * in);
        for (size_t i = 0; i < tile; i++)
            s_axpy(out, 1.0f, gt + i * out, db);
    }
}

/* Writes gx [n][in] = d(loss)/d(x) = g W for one layer, g [n][out]. */
static void s_input_grad(const float *w, size_t in, size_t out, size_t n, const float *g, float *gx)
{
    for (size_t i = 0; i < n; i++) {
        float *gxi = gx + i * in;
        memset(gxi, 0, in * sizeof(float));
        s_combine(in, out, g + i * out, 1, w, in, gxi);
    }
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

void vl_mlp_backward(vl_mlp_t *self, uint32_t n, const float *dy, float *dx)
{
    assert(n == self->n_cached && "backward must follow a forward over the same n");
    const float *g = dy;
    for (uint32_t l = self->n_layers; l-- > 0;) {
        size_t in = self->sizes[l], out = self->sizes[l + 1];
        float *gx = l > 0 ? self->delta[l % 2] : dx;
        s_weight_grad(self->grads + self->offset[l], in, out, n, self->acts[l], g);
        if (gx)
            s_input_grad(self->params + self->offset[l], in, out, n, g, gx);
        if (l > 0)
            s_tanh_backward((size_t)n * in, self->acts[l], gx);
        g = gx;
    }
}

void vl_mlp_zero_grad(vl_mlp_t *self)
{
    memset(self->grads, 0, self->n_params * sizeof(float));
}
