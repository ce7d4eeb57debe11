/*  vl_matmul: strided float products on oneDNN or portable loops; see
    vl_matmul.h.

    oneDNN: matmul takes any strides for its three operands, so a transposed
    weight or every T-th row of a sequence array is a memory descriptor, not
    a copy; accumulation is its sum post-op. Each shape's primitive and
    memory objects are kept, and a call only points them at its arrays.

    Portable: every output is bias (or 0), then a[i][k] b[k][j] added in
    increasing k, four k at a time as (p0 + p1) + (p2 + p3), then added to C
    when accumulating: one fixed order, plain float operations, so the bits
    depend on nothing but the inputs. The k loop runs in tiles of S_KTILE
    rows of B, which stay in cache while every output row passes by. A
    narrow output (n < S_LANES) whose operands both run along k in
    contiguous floats (y = W x for a head's few outputs) is instead bias (or
    0) plus one dot product: S_LANES partial sums over k, the tail added to
    zero first, then the partial sums in order. */
#include "vl_matmul.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_dnnl.h"

#define S_LANES 8  // floats per chunk: gcc -O2 vectorizes a loop of known multiple trip count
#define S_KTILE 64 // rows of B per pass of the portable loop

/* One cached shape: its primitive and the memory objects it runs on. */
typedef struct {
    vl_matmul_shape_t shape;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, bias, c;
    uint64_t used; // the call count at its last use, for eviction
} s_entry_t;

struct vl_matmul_s {
    vl_dnnl_t *dnnl;
    int owns_dnnl; // made by vl_matmul_new, not lent by vl_matmul_new_on
    s_entry_t cache[VL_MATMUL_CACHE];
    uint64_t calls;
    int portable;
    float *packed; // portable: B as [k][n]
    float *out;    // portable: C's sums before they reach C
    size_t packed_cap, out_cap;
};

vl_matmul_t *vl_matmul_new_on(vl_dnnl_t *dnnl)
{
    vl_matmul_t *self = dnnl ? calloc(1, sizeof *self) : NULL;
    if (self)
        self->dnnl = dnnl;
    return self;
}

vl_matmul_t *vl_matmul_new(void)
{
    vl_dnnl_t *dnnl = vl_dnnl_new();
    vl_matmul_t *self = vl_matmul_new_on(dnnl);
    if (!self)
        vl_dnnl_destroy(&dnnl);
    else
        self->owns_dnnl = 1;
    return self;
}

/* Frees one cache entry's oneDNN objects and empties it. */
static void s_entry_free(s_entry_t *e)
{
    dnnl_memory_t *mems[] = {&e->a, &e->b, &e->bias, &e->c};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        vl_dnnl_mem_free(mems[i]);
    vl_dnnl_prim_free(&e->prim);
    memset(e, 0, sizeof *e);
}

void vl_matmul_destroy(vl_matmul_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_matmul_t *self = *self_p;
    for (size_t i = 0; i < VL_MATMUL_CACHE; i++)
        s_entry_free(&self->cache[i]);
    if (self->owns_dnnl)
        vl_dnnl_destroy(&self->dnnl);
    free(self->packed);
    free(self->out);
    free(self);
    *self_p = NULL;
}

void vl_matmul_set_portable(vl_matmul_t *self)
{
    self->portable = 1;
}

/* Describes a rows x cols float matrix of the given strides. */
static int s_md(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    dnnl_dims_t dims = {rows, cols}, strides = {rs, cs};
    return vl_dnnl_md(md, 2, dims, strides, dnnl_format_tag_undef);
}

/* Creates e's primitive and memory objects for e->shape. Returns 0 or -1. */
static int s_entry_build(vl_matmul_t *self, s_entry_t *e)
{
    const vl_matmul_shape_t *s = &e->shape;
    dnnl_memory_desc_t a, b, bias, c;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    if (s_md(&a, s->m, s->k, s->a_rs, s->a_cs) || s_md(&b, s->k, s->n, s->b_rs, s->b_cs) ||
        s_md(&bias, 1, s->n, s->n, 1) || s_md(&c, s->m, s->n, s->c_rs, 1) ||
        vl_dnnl_ok(dnnl_matmul_desc_init(&desc, &a, &b, s->bias ? &bias : NULL, &c), "matmul"))
        return -1;
    if (vl_dnnl_pd(self->dnnl, &pd, &desc, 1.0f, s->accumulate, NULL) != 0)
        return -1;
    int rc = vl_dnnl_prim(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    vl_dnnl_t *d = self->dnnl;
    return rc || vl_dnnl_mem(d, &e->a, &a, DNNL_MEMORY_NONE) ||
                   vl_dnnl_mem(d, &e->b, &b, DNNL_MEMORY_NONE) ||
                   vl_dnnl_mem(d, &e->bias, &bias, DNNL_MEMORY_NONE) ||
                   vl_dnnl_mem(d, &e->c, &c, DNNL_MEMORY_NONE)
               ? -1
               : 0;
}

/* Returns the cache entry of shape, built now when missing (replacing the
   least recently used), or NULL on failure. */
static s_entry_t *s_entry(vl_matmul_t *self, const vl_matmul_shape_t *shape)
{
    s_entry_t *oldest = &self->cache[0];
    for (size_t i = 0; i < VL_MATMUL_CACHE; i++) {
        s_entry_t *e = &self->cache[i];
        if (e->prim && memcmp(&e->shape, shape, sizeof *shape) == 0)
            return e;
        if (e->used < oldest->used)
            oldest = e;
    }
    s_entry_free(oldest);
    oldest->shape = *shape;
    if (s_entry_build(self, oldest) != 0) {
        s_entry_free(oldest);
        return NULL;
    }
    return oldest;
}

/* Runs the product on oneDNN. */
static int s_run_dnnl(vl_matmul_t *self, const vl_matmul_shape_t *shape, const float *a,
                      const float *b, const float *bias, float *c)
{
    s_entry_t *e = s_entry(self, shape);
    if (!e)
        return -1;
    e->used = ++self->calls;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a},
                               {DNNL_ARG_WEIGHTS, e->b},
                               {DNNL_ARG_DST, e->c},
                               {DNNL_ARG_BIAS, e->bias}};
    // oneDNN only reads a, b and bias: the casts are what its API takes.
    if (vl_dnnl_ok(dnnl_memory_set_data_handle(e->a, (void *)a), "a's handle") ||
        vl_dnnl_ok(dnnl_memory_set_data_handle(e->b, (void *)b), "b's handle") ||
        vl_dnnl_ok(dnnl_memory_set_data_handle(e->c, c), "c's handle") ||
        (shape->bias && vl_dnnl_ok(dnnl_memory_set_data_handle(e->bias, (void *)bias), "bias")))
        return -1;
    if (vl_dnnl_exec(self->dnnl, e->prim, shape->bias ? 4 : 3, args) != 0)
        return -1;
    return vl_dnnl_wait(self->dnnl);
}

/* Grows *buf to count floats. Returns 0, or -1 on no memory. */
static int s_grow(float **buf, size_t *cap, size_t count)
{
    if (count <= *cap)
        return 0;
    float *grown = realloc(*buf, count * sizeof(float));
    if (!grown)
        return -1;
    *buf = grown, *cap = count;
    return 0;
}

/* y[j] += (a0 x0[j] + a1 x1[j]) + (a2 x2[j] + a3 x3[j]) for j < n. */
static void s_axpy4(size_t n, const float a[4], const float *restrict x0, const float *restrict x1,
                    const float *restrict x2, const float *restrict x3, float *restrict y)
{
    const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    size_t j = 0;
    for (; j + S_LANES <= n; j += S_LANES)
        for (size_t l = 0; l < S_LANES; l++)
            y[j + l] += (a0 * x0[j + l] + a1 * x1[j + l]) + (a2 * x2[j + l] + a3 * x3[j + l]);
    for (; j < n; j++)
        y[j] += (a0 * x0[j] + a1 * x1[j]) + (a2 * x2[j] + a3 * x3[j]);
}

/* y[j] += a x[j] for j < n. */
static void s_axpy(size_t n, float a, const float *restrict x, float *restrict y)
{
    size_t j = 0;
    for (; j + S_LANES <= n; j += S_LANES)
        for (size_t l = 0; l < S_LANES; l++)
            y[j + l] += a * x[j + l];
    for (; j < n; j++)
        y[j] += a * x[j];
}

/* Returns sum a[k] * b[k] over k < n in the order the header gives. */
static float s_dot(size_t n, const float *restrict a, const float *restrict b)
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

/* out[i] += sum over k in [k0, k1) of a[i][k] bp[k], bp rows of n floats. */
static void s_tile(const vl_matmul_shape_t *s, const float *a, const float *bp, size_t k0,
                   size_t k1, float *out)
{
    size_t n = (size_t)s->n;
    for (size_t i = 0; i < (size_t)s->m; i++) {
        const float *ai = a + i * s->a_rs;
        float *oi = out + i * n;
        size_t k = k0;
        for (; k + 4 <= k1; k += 4) {
            const float c[4] = {ai[k * s->a_cs], ai[(k + 1) * s->a_cs], ai[(k + 2) * s->a_cs],
                                ai[(k + 3) * s->a_cs]};
            const float *bk = bp + k * n;
            s_axpy4(n, c, bk, bk + n, bk + 2 * n, bk + 3 * n, oi);
        }
        for (; k < k1; k++)
            s_axpy(n, ai[k * s->a_cs], bp + k * n, oi);
    }
}

/* Writes out [m][n] (bias, or 0, plus the product) for a narrow output whose
   rows of A and columns of B are contiguous. */
static void s_dots(const vl_matmul_shape_t *s, const float *a, const float *b, const float *bias,
                   float *out)
{
    size_t n = (size_t)s->n;
    for (size_t i = 0; i < (size_t)s->m; i++)
        for (size_t j = 0; j < n; j++)
            out[i * n + j] =
                (s->bias ? bias[j] : 0.0f) + s_dot((size_t)s->k, b + j * s->b_cs, a + i * s->a_rs);
}

/* Writes out [m][n] (bias, or 0, plus the product) by tiles of B's rows. */
static void s_tiles(vl_matmul_t *self, const vl_matmul_shape_t *s, const float *a, const float *b,
                    const float *bias, float *out)
{
    size_t m = (size_t)s->m, k = (size_t)s->k, n = (size_t)s->n;
    for (size_t r = 0; r < k; r++)
        for (size_t j = 0; j < n; j++)
            self->packed[r * n + j] = b[r * s->b_rs + j * s->b_cs];
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            out[i * n + j] = s->bias ? bias[j] : 0.0f;
    for (size_t k0 = 0; k0 < k; k0 += S_KTILE)
        s_tile(s, a, self->packed, k0, k - k0 < S_KTILE ? k : k0 + S_KTILE, out);
}

/* Runs the product on the portable loops. */
static int s_run_portable(vl_matmul_t *self, const vl_matmul_shape_t *s, const float *a,
                          const float *b, const float *bias, float *c)
{
    size_t m = (size_t)s->m, k = (size_t)s->k, n = (size_t)s->n;
    if (s_grow(&self->packed, &self->packed_cap, k * n) != 0 ||
        s_grow(&self->out, &self->out_cap, m * n) != 0) {
        vl_error("vl_matmul: no memory for a %zu x %zu x %zu product", m, k, n);
        return -1;
    }
    if (s->n < S_LANES && s->a_cs == 1 && s->b_rs == 1)
        s_dots(s, a, b, bias, self->out);
    else
        s_tiles(self, s, a, b, bias, self->out);
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * s->c_rs;
        const float *oi = self->out + i * n;
        if (s->accumulate)
            s_axpy(n, 1.0f, oi, ci);
        else
            memcpy(ci, oi, n * sizeof(float));
    }
    return 0;
}

int vl_matmul_run(vl_matmul_t *self, const vl_matmul_shape_t *shape, const float *a, const float *b,
                  const float *bias, float *c)
{
    if (self->portable)
        return s_run_portable(self, shape, a, b, bias, c);
    return s_run_dnnl(self, shape, a, b, bias, c);
}

int vl_matmul_linear(vl_matmul_t *self, int64_t n, int64_t in, int64_t out, const float *x,
                     const float *w, const float *b, float *y)
{
    vl_matmul_shape_t s = {
        .m = n, .k = in, .n = out, .a_rs = in, .a_cs = 1, .b_rs = 1, .b_cs = in, .c_rs = out};
    s.bias = b != NULL;
    return vl_matmul_run(self, &s, x, w, b, y);
}

int vl_matmul_linear_backward(vl_matmul_t *self, int64_t n, int64_t in, int64_t out, const float *x,
                              const float *w, const float *dy, float *dw, float *db, float *dx,
                              int add_dx)
{
    vl_matmul_shape_t dws = {
        .m = out, .k = n, .n = in, .a_rs = 1, .a_cs = out, .b_rs = in, .b_cs = 1, .c_rs = in};
    vl_matmul_shape_t dxs = {
        .m = n, .k = out, .n = in, .a_rs = out, .a_cs = 1, .b_rs = in, .b_cs = 1, .c_rs = in};
    dws.accumulate = 1, dxs.accumulate = add_dx;
    if (vl_matmul_run(self, &dws, dy, x, NULL, dw) != 0)
        return -1;
    for (int64_t i = 0; i < n; i++)
        s_axpy((size_t)out, 1.0f, dy + i * out, db);
    return dx ? vl_matmul_run(self, &dxs, dy, w, NULL, dx) : 0;
}
