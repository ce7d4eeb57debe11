/*  vl_lstm: one LSTM layer over batches of sequences; see vl_lstm.h.

    Forward: one product for the input side of every step at once, G [B*T]
    [4H] = X W_ih^T + b_ih + b_hh, then per step t the recurrent product
    added into the rows of step t, G[., t] += H_prev W_hh^T, and the gates
    in place (G keeps the activated i, f, g, o for the backward). The state
    a step starts from, H_prev and C_prev [B*T][H] (zero where a reset is),
    is kept per step: the backward's weight gradient needs all of H_prev.
    Backward: per step in reverse, the gate gradients dG (same layout as G)
    and dh_{t-1} = dG[., t] W_hh, then the weight gradients as three
    products over all steps at once, dW_ih += dG^T X, dW_hh += dG^T H_prev,
    dx = dG W_ih, and the biases' gradient, the column sums of dG.
    The products run on vl_matmul (oneDNN, or its portable loops), except,
    where the CPU has AVX-512 and the layer is not portable, the products
    of one step over the batch (the recurrent side of every step, and the
    whole step of a one-step call at an actor's batch, input and recurrent
    side as one sum): those run on vl_rowdot on the calling thread, as at
    these sizes oneDNN's fixed cost and its threads' wake-ups outweigh the
    work. The elementwise gates are plain C that gcc vectorizes. */
#include "vl_lstm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vl_matmul.h"
#include "vl_rowdot.h"
#include "vl_tanh.h"

#define S_MAX_SIZE     65536u
#define S_LANES        8     // floats per chunk: gcc -O2 vectorizes loops of known multiple trips
#define S_PARALLEL_MIN 16384 // floats of a step's state worth sharing among threads
#define S_ROWDOT_ROWS  64    // rows up to which a one-step call runs whole on vl_rowdot

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define S_HAVE_AVX2 1
#define S_AVX2      __attribute__((target("avx2,fma")))
/* gcc's AVX-512 cells fuse each multiply and add (every AVX-512 CPU has FMA): a third fewer
   operations in the tanh polynomials. The portable path keeps separate ones, and its bits. */
#if defined(__clang__)
#define S_AVX512 __attribute__((target("avx512f")))
#else
#define S_AVX512                                                                                   \
    __attribute__((target("avx512f,fma,prefer-vector-width=512"), optimize("fp-contract=fast")))
#endif
#else
#define S_HAVE_AVX2 0
#endif

struct vl_lstm_s {
    uint32_t in, hidden;
    float *params, *grads; // the caller's, vl_lstm_bind
    vl_matmul_t *mm;
    uint32_t B, T;    // of the last forward
    int ready;        // a forward ran and succeeded: the backward may follow
    size_t cap;       // rows (B * T) the sequence buffers hold
    float *x;         // [B*T][in], the last forward's input
    float *gates;     // [B*T][4H]: pre-activations, then i, f, g, o
    float *h_prev;    // [B*T][H]: the h each step started from
    float *c_prev;    // [B*T][H]
    float *c;         // [B*T][H]: the c each step ended with
    uint8_t *reset;   // [B*T]
    float *dgates;    // [B*T][4H]
    float *dh, *dc;   // [B][H] each, backward carries
    size_t carry_cap; // rows the carries hold
    float *bias;      // [4H]: b_ih + b_hh
    int avx2;         // the elementwise work runs the AVX2+FMA copy
    int rowdot;       // a step's products run on vl_rowdot
};

vl_lstm_t *vl_lstm_new(uint32_t in, uint32_t hidden)
{
    if (in == 0 || hidden == 0 || in > S_MAX_SIZE || hidden > S_MAX_SIZE)
        return NULL;
    vl_lstm_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->in = in, self->hidden = hidden;
    self->mm = vl_matmul_new();
#if S_HAVE_AVX2
    self->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    self->rowdot = vl_rowdot_available();
    self->bias = malloc(4 * (size_t)hidden * sizeof(float));
    if (!self->mm || !self->bias)
        vl_lstm_destroy(&self);
    return self;
}

void vl_lstm_destroy(vl_lstm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_lstm_t *self = *self_p;
    vl_matmul_destroy(&self->mm);
    float *bufs[] = {self->x,      self->gates, self->h_prev, self->c_prev, self->c,
                     self->dgates, self->dh,    self->dc,     self->bias};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(self->reset);
    free(self);
    *self_p = NULL;
}

size_t vl_lstm_param_count(const vl_lstm_t *self)
{
    size_t h4 = 4 * (size_t)self->hidden;
    return h4 * self->in + h4 * self->hidden + 2 * h4;
}

void vl_lstm_bind(vl_lstm_t *self, float *params, float *grads)
{
    self->params = params, self->grads = grads;
}

void vl_lstm_init(vl_lstm_t *self, vl_rng_t *rng)
{
    double bound = 1.0 / sqrt((double)self->hidden);
    size_t count = vl_lstm_param_count(self);
    for (size_t i = 0; i < count; i++)
        self->params[i] = (float)((2.0 * vl_rng_uniform(rng) - 1.0) * bound);
}

void vl_lstm_set_portable(vl_lstm_t *self)
{
    self->avx2 = 0;
    self->rowdot = 0;
    vl_matmul_set_portable(self->mm);
}

/* The parameter tensors within params (or grads): W_ih, W_hh, b_ih, b_hh. */
static float *s_w_ih(const vl_lstm_t *self, float *p)
{
    (void)self;
    return p;
}

static float *s_w_hh(const vl_lstm_t *self, float *p)
{
    return p + 4 * (size_t)self->hidden * self->in;
}

static float *s_b_ih(const vl_lstm_t *self, float *p)
{
    return s_w_hh(self, p) + 4 * (size_t)self->hidden * self->hidden;
}

static float *s_b_hh(const vl_lstm_t *self, float *p)
{
    return s_b_ih(self, p) + 4 * (size_t)self->hidden;
}

/* Grows *buf to count elements of size bytes. Returns 0, or -1. */
static int s_grow(void *buf, size_t count, size_t size)
{
    void **p = buf;
    void *grown = realloc(*p, count * size);
    if (!grown)
        return -1;
    *p = grown;
    return 0;
}

/* Makes the sequence buffers hold rows = B * T rows and the carries B.
   Returns 0, or -1 on no memory or a size past size_t. */
static int s_reserve(vl_lstm_t *self, uint32_t B, uint32_t T)
{
    size_t rows = (size_t)B * T, h = self->hidden, h4 = 4 * h;
    if (rows > SIZE_MAX / sizeof(float) / (h4 + self->in))
        return -1;
    if (rows > self->cap) {
        self->cap = 0; // stays 0 until every buffer has grown
        if (s_grow(&self->x, rows * self->in, sizeof(float)) ||
            s_grow(&self->gates, rows * h4, sizeof(float)) ||
            s_grow(&self->dgates, rows * h4, sizeof(float)) ||
            s_grow(&self->h_prev, rows * h, sizeof(float)) ||
            s_grow(&self->c_prev, rows * h, sizeof(float)) ||
            s_grow(&self->c, rows * h, sizeof(float)) || s_grow(&self->reset, rows, 1))
            return -1;
        self->cap = rows;
    }
    if (B > self->carry_cap) {
        self->carry_cap = 0;
        if (s_grow(&self->dh, (size_t)B * h, sizeof(float)) ||
            s_grow(&self->dc, (size_t)B * h, sizeof(float)))
            return -1;
        self->carry_cap = B;
    }
    return 0;
}

/* Returns the logistic function of x, as 1/2 + tanh(x/2)/2. */
static inline float s_sigmoid(float x)
{
    return 0.5f + 0.5f * vl_tanhf(0.5f * x);
}

/* One step's elementwise work over B rows (row b of step t is b * T + t). */
typedef struct {
    size_t B, T, t, h;
    float *gates;         // [B*T][4H]: activated in place by the forward
    const float *c_prev;  // [B*T][H]
    float *c;             // [B*T][H]
    float *y;             // [B*T][H], forward: written
    const float *dy;      // [B*T][H], backward
    const float *dh;      // [B][H], backward: from the next step
    float *dc;            // [B][H], backward: from the next step, then to the previous
    float *dgates;        // [B*T][4H], backward: written
    const uint8_t *reset; // [B*T]
} s_step_t;

/* Activates gates k of one row (i, f, o logistic, g tanh) in place and
   steps its state: c = f c_prev + i g, y = h = o tanh(c). A macro, each
   value loaded once into a local, so that the loops below vectorize. */
#define S_CELL_FWD(k)                                                                              \
    do {                                                                                           \
        float i = s_sigmoid(gi[k]), f = s_sigmoid(gf[k]), g = vl_tanhf(gg[k]);                     \
        float o = s_sigmoid(go[k]), cc = f * cp[k] + i * g;                                        \
        gi[k] = i, gf[k] = f, gg[k] = g, go[k] = o, c[k] = cc;                                     \
        y[k] = o * vl_tanhf(cc);                                                                   \
    } while (0)

/* The forward cell of one row: chunks of lanes (a constant) let gcc -O2
   vectorize it. */
static inline __attribute__((always_inline)) void
s_cell_fwd(const size_t lanes, size_t h, float *restrict gi, float *restrict gf, float *restrict gg,
           float *restrict go, const float *restrict cp, float *restrict c, float *restrict y)
{
    size_t j = 0;
    for (; j + lanes <= h; j += lanes)
        for (size_t l = 0; l < lanes; l++)
            S_CELL_FWD(j + l);
    for (; j < h; j++)
        S_CELL_FWD(j);
}

/* The forward cell of row b. */
static inline __attribute__((always_inline)) void s_cell_row(const size_t lanes, const s_step_t *a,
                                                             size_t b)
{
    size_t h = a->h, row = b * a->T + a->t;
    float *g = a->gates + row * 4 * h;
    s_cell_fwd(lanes, h, g, g + h, g + 2 * h, g + 3 * h, a->c_prev + row * h, a->c + row * h,
               a->y + row * h);
}

/* The gate gradients of gates k of one row from dh = dy + the next step's
   dh (d loss / d h, all paths) and dc (d loss / d c from the next step):
   writes them (before the activations) into d and turns dc into d loss /
   d c_prev. */
#define S_CELL_BACK(k)                                                                             \
    do {                                                                                           \
        float i = gi[k], f = gf[k], g = gg[k], o = go[k], tc = vl_tanhf(c[k]);                     \
        float dht = dy[k] + dh[k], dct = dc[k] + dht * o * (1.0f - tc * tc);                       \
        di[k] = dct * g * i * (1.0f - i);                                                          \
        df[k] = dct * cp[k] * f * (1.0f - f);                                                      \
        dgg[k] = dct * i * (1.0f - g * g);                                                         \
        dout[k] = dht * tc * o * (1.0f - o);                                                       \
        dc[k] = dct * f;                                                                           \
    } while (0)

/* The backward cell of one row, chunked as s_cell_fwd. */
static inline __attribute__((always_inline)) void
s_cell_back(const size_t lanes, size_t h, const float *restrict gi, const float *restrict gf,
            const float *restrict gg, const float *restrict go, const float *restrict cp,
            const float *restrict c, const float *restrict dy, const float *restrict dh,
            float *restrict dc, float *restrict di, float *restrict df, float *restrict dgg,
            float *restrict dout)
{
    size_t j = 0;
    for (; j + lanes <= h; j += lanes)
        for (size_t l = 0; l < lanes; l++)
            S_CELL_BACK(j + l);
    for (; j < h; j++)
        S_CELL_BACK(j);
}

/* The backward cell of row b; none of dc crosses a reset (the state before
   it is a constant). */
static inline __attribute__((always_inline)) void s_cell_back_row(const size_t lanes,
                                                                  const s_step_t *a, size_t b)
{
    size_t h = a->h, row = b * a->T + a->t;
    const float *g = a->gates + row * 4 * h;
    float *dc = a->dc + b * h, *dg = a->dgates + row * 4 * h;
    s_cell_back(lanes, h, g, g + h, g + 2 * h, g + 3 * h, a->c_prev + row * h, a->c + row * h,
                a->dy + row * h, a->dh + b * h, dc, dg, dg + h, dg + 2 * h, dg + 3 * h);
    if (a->reset[row])
        memset(dc, 0, h * sizeof(float));
}

/* Row b of the step, plain (SSE2 at most): the portable path's. */
static void s_row_plain(const s_step_t *a, size_t b, int backward)
{
    if (backward)
        s_cell_back_row(S_LANES, a, b);
    else
        s_cell_row(S_LANES, a, b);
}

#if S_HAVE_AVX2
/* Row b of the step, eight lanes wide with fused multiply-adds. A function
   of its own: the threads' outlined loop does not inherit a target. */
static S_AVX2 void s_row_avx2(const s_step_t *a, size_t b, int backward)
{
    if (backward)
        s_cell_back_row(S_LANES, a, b);
    else
        s_cell_row(S_LANES, a, b);
}

/* Row b of the step, sixteen lanes wide (AVX-512): the fast path's where
   the CPU has it (the step's products then run on vl_rowdot). */
static S_AVX512 void s_row_avx512(const s_step_t *a, size_t b, int backward)
{
    if (backward)
        s_cell_back_row(2 * S_LANES, a, b);
    else
        s_cell_row(2 * S_LANES, a, b);
}
#endif

/* Runs the step's rows on the layer's kernels, on the calling thread's
   OpenMP threads when the step is large enough to pay for them. Rows are independent, so their
   split among threads changes no bits. */
static void s_cells(const vl_lstm_t *self, const s_step_t *a, int backward)
{
    int avx2 = self->avx2, avx512 = self->rowdot;
#pragma omp parallel for if (a->B * a->h >= S_PARALLEL_MIN) schedule(static)
    for (size_t b = 0; b < a->B; b++) {
#if S_HAVE_AVX2
        if (avx512) {
            s_row_avx512(a, b, backward);
            continue;
        }
        if (avx2) {
            s_row_avx2(a, b, backward);
            continue;
        }
#endif
        s_row_plain(a, b, backward);
    }
    (void)avx2, (void)avx512;
}

/* Writes the state step t of every sequence starts from into h_prev and
   c_prev: the initial state at t = 0, else the previous step's; zero at a
   reset. */
static void s_state_in(vl_lstm_t *self, uint32_t t, const float *h0, const float *c0,
                       const float *y)
{
    size_t h = self->hidden, T = self->T;
    for (size_t b = 0; b < self->B; b++) {
        size_t row = b * T + t;
        float *hp = self->h_prev + row * h, *cp = self->c_prev + row * h;
        if (self->reset[row] || (t == 0 && !h0))
            memset(hp, 0, h * sizeof(float));
        else
            memcpy(hp, t == 0 ? h0 + b * h : y + (row - 1) * h, h * sizeof(float));
        if (self->reset[row] || (t == 0 && !c0))
            memset(cp, 0, h * sizeof(float));
        else
            memcpy(cp, t == 0 ? c0 + b * h : self->c + (row - 1) * h, h * sizeof(float));
    }
}

/* G[., t] += H_prev[., t] W_hh^T: the recurrent input of step t. */
static int s_recurrent(vl_lstm_t *self, uint32_t t)
{
    size_t h = self->hidden, T = self->T;
    if (self->rowdot) {
        vl_rowdot_part_t p = {self->h_prev + t * h, T * h, s_w_hh(self, self->params), h};
        vl_rowdot_run(self->B, 4 * h, &p, 1, NULL, 1, self->gates + t * 4 * h, T * 4 * h);
        return 0;
    }
    vl_matmul_shape_t s = {.m = self->B,
                           .k = (int64_t)h,
                           .n = 4 * (int64_t)h,
                           .a_rs = (int64_t)(T * h),
                           .a_cs = 1,
                           .b_rs = 1,
                           .b_cs = (int64_t)h,
                           .c_rs = (int64_t)(T * 4 * h),
                           .accumulate = 1};
    return vl_matmul_run(self->mm, &s, self->h_prev + t * h, s_w_hh(self, self->params), NULL,
                         self->gates + t * 4 * h);
}

/* bias = b_ih + b_hh. */
static void s_bias(vl_lstm_t *self)
{
    size_t h4 = 4 * (size_t)self->hidden;
    const float *b_ih = s_b_ih(self, self->params), *b_hh = s_b_hh(self, self->params);
    for (size_t j = 0; j < h4; j++)
        self->bias[j] = b_ih[j] + b_hh[j];
}

/* G = X W^T + H_prev W_hh^T + bias for a one-step call (T = 1) as one sum,
   X [B][k] against W [4H][k]; the recurrent side only when there is a
   state to start from. */
static void s_step_product(vl_lstm_t *self, const float *x, size_t k, const float *w,
                           const float *bias, int has_state)
{
    size_t h = self->hidden;
    vl_rowdot_part_t p[2] = {{x, k, w, k}, {self->h_prev, h, s_w_hh(self, self->params), h}};
    vl_rowdot_run(self->B, 4 * h, p, has_state ? 2 : 1, bias, 0, self->gates, 4 * h);
}

/* G = X W_ih^T + H_prev W_hh^T + b_ih + b_hh for a one-step call. */
static void s_whole_step(vl_lstm_t *self, int has_state)
{
    s_bias(self);
    s_step_product(self, self->x, self->in, s_w_ih(self, self->params), self->bias, has_state);
}

/* G = X W_ih^T + b_ih + b_hh over every row. */
static int s_input_side(vl_lstm_t *self)
{
    size_t h4 = 4 * (size_t)self->hidden, rows = (size_t)self->B * self->T;
    s_bias(self);
    vl_matmul_shape_t s = {.m = (int64_t)rows,
                           .k = self->in,
                           .n = (int64_t)h4,
                           .a_rs = self->in,
                           .a_cs = 1,
                           .b_rs = 1,
                           .b_cs = self->in,
                           .c_rs = (int64_t)h4,
                           .bias = 1};
    return vl_matmul_run(self->mm, &s, self->x, s_w_ih(self, self->params), self->bias,
                         self->gates);
}

/* The forward cells of step t over the gates its products wrote. */
static void s_cells_forward(const vl_lstm_t *self, uint32_t t, float *y)
{
    s_step_t step = {.B = self->B,
                     .T = self->T,
                     .t = t,
                     .h = self->hidden,
                     .gates = self->gates,
                     .c_prev = self->c_prev,
                     .c = self->c,
                     .y = y};
    s_cells(self, &step, 0);
}

/* Copies each sequence's last h (from y) and c into hT and cT (either may
   be NULL). */
static void s_state_out(const vl_lstm_t *self, const float *y, float *hT, float *cT)
{
    size_t h = self->hidden, T = self->T;
    for (size_t b = 0; b < self->B; b++) {
        size_t last = b * T + T - 1;
        if (hT)
            memcpy(hT + b * h, y + last * h, h * sizeof(float));
        if (cT)
            memcpy(cT + b * h, self->c + last * h, h * sizeof(float));
    }
}

int vl_lstm_forward(vl_lstm_t *self, uint32_t B, uint32_t T, const float *x, const float *h0,
                    const float *c0, const uint8_t *reset, float *y, float *hT, float *cT)
{
    self->ready = 0;
    self->B = B, self->T = T;
    if (B == 0 || T == 0)
        return self->ready = 1, 0;
    if (s_reserve(self, B, T) != 0)
        return -1;
    size_t rows = (size_t)B * T;
    memcpy(self->x, x, rows * self->in * sizeof(float));
    for (size_t r = 0; r < rows; r++)
        self->reset[r] = reset && reset[r];
    int whole = self->rowdot && T == 1 && rows <= S_ROWDOT_ROWS;
    if (!whole && s_input_side(self) != 0)
        goto fail;
    for (uint32_t t = 0; t < T; t++) {
        s_state_in(self, t, h0, c0, y);
        if (whole)
            s_whole_step(self, h0 != NULL);
        else if ((t > 0 || h0) && s_recurrent(self, t) != 0)
            goto fail;
        s_cells_forward(self, t, y);
    }
    s_state_out(self, y, hT, cT);
    self->ready = 1;
    return 0;
fail:
    return -1;
}

int vl_lstm_step_folded(vl_lstm_t *self, uint32_t B, const float *x, uint32_t k, const float *w,
                        const float *bias, const float *h0, const float *c0, const uint8_t *reset,
                        float *y, float *hT, float *cT)
{
    self->ready = 0; // nothing is kept for a backward pass
    if (!self->rowdot || B > S_ROWDOT_ROWS)
        return -1;
    self->B = B, self->T = 1;
    if (B == 0)
        return 0;
    if (s_reserve(self, B, 1) != 0)
        return -1;
    for (uint32_t b = 0; b < B; b++)
        self->reset[b] = reset && reset[b];
    s_state_in(self, 0, h0, c0, y);
    s_step_product(self, x, k, w, bias, h0 != NULL);
    s_cells_forward(self, 0, y);
    s_state_out(self, y, hT, cT);
    return 0;
}

/* dh = dG[., t] W_hh: the gradient step t sends to the h it started from. */
static int s_recurrent_backward(vl_lstm_t *self, uint32_t t)
{
    size_t h = self->hidden, T = self->T;
    vl_matmul_shape_t s = {.m = self->B,
                           .k = 4 * (int64_t)h,
                           .n = (int64_t)h,
                           .a_rs = (int64_t)(T * 4 * h),
                           .a_cs = 1,
                           .b_rs = (int64_t)h,
                           .b_cs = 1,
                           .c_rs = (int64_t)h};
    return vl_matmul_run(self->mm, &s, self->dgates + t * 4 * h, s_w_hh(self, self->params), NULL,
                         self->dh);
}

/* Runs the steps in reverse, writing dG. Returns 0 or -1. */
static int s_steps_backward(vl_lstm_t *self, const float *dy)
{
    size_t h = self->hidden, T = self->T, B = self->B;
    memset(self->dh, 0, B * h * sizeof(float));
    memset(self->dc, 0, B * h * sizeof(float));
    for (uint32_t t = self->T; t-- > 0;) {
        s_step_t step = {.B = B,
                         .T = T,
                         .t = t,
                         .h = h,
                         .gates = self->gates,
                         .c_prev = self->c_prev,
                         .c = self->c,
                         .dy = dy,
                         .dh = self->dh,
                         .dc = self->dc,
                         .dgates = self->dgates,
                         .reset = self->reset};
        s_cells(self, &step, 1);
        if (t == 0)
            break;
        if (s_recurrent_backward(self, t) != 0)
            return -1;
        for (size_t b = 0; b < B; b++)
            if (self->reset[b * T + t])
                memset(self->dh + b * h, 0, h * sizeof(float));
    }
    return 0;
}

/* The gates are two linear layers' outputs, X W_ih^T + b_ih and H_prev W_hh^T + b_hh, so
   their backward is vl_matmul's for each: dW_ih, db_ih and (when dx is not NULL) dx from the
   input side, dW_hh and db_hh from the recurrent side. */
static int s_weights_backward(vl_lstm_t *self, float *dx)
{
    int64_t h = self->hidden, h4 = 4 * h, rows = (int64_t)self->B * self->T;
    float *p = self->params, *g = self->grads;
    if (vl_matmul_linear_backward(self->mm, rows, self->in, h4, self->x, s_w_ih(self, p),
                                  self->dgates, s_w_ih(self, g), s_b_ih(self, g), dx, 0) != 0)
        return -1;
    return vl_matmul_linear_backward(self->mm, rows, h, h4, self->h_prev, s_w_hh(self, p),
                                     self->dgates, s_w_hh(self, g), s_b_hh(self, g), NULL, 0);
}

int vl_lstm_backward(vl_lstm_t *self, const float *dy, float *dx)
{
    if (!self->ready)
        return -1;
    if (self->B == 0 || self->T == 0)
        return 0;
    if (s_steps_backward(self, dy) != 0)
        return -1;
    return s_weights_backward(self, dx);
}
