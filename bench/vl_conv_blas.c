/*  vl_conv_blas: vl_conv_net on OpenBLAS: each conv an im2col of the whole
    batch into one matrix, rows (sample, output position), columns (input
    channel, ky, kx), times the weight by one cblas_sgemm; a linear layer one
    sgemm. Backward: the weight grad is one sgemm of the output grad against
    the kept im2col matrix, the data grad one sgemm into a column matrix
    that col2im adds back into the input's shape. OpenBLAS threads each
    sgemm; the loops around it run on the calling thread. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_conv_net.h"

struct vl_conv_engine_s {
    const vl_conv_net_t *net;
    int n;                          // batch
    float *x;                       // frames / 255, [n][c][h][w]
    float *act[VL_CONV_NET_LAYERS]; // layer l's output, NCHW, after its relu
    float *col[VL_CONV_NET_LAYERS]; // conv l's im2col matrix [n*hout*wout][cin*k*k]
    float *rows;                    // scratch [n*hout*wout][cout]: sgemm output / grad
    float *dcol;                    // scratch: a column matrix's grad
    float *dact[2];                 // grads of activations, ping-pong
    float *dw[VL_CONV_NET_LAYERS], *db[VL_CONV_NET_LAYERS];
};

/* Fills col from x (one sample-major im2col of the batch; zero padding).
   A window inside the input copies its k-float rows whole, without the
   bounds checks the border needs. */
static void s_im2col(const vl_conv_layer_t *l, int n, const float *x, float *col)
{
    int K = l->cin * l->k * l->k, k = l->k;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < l->hout; oy++)
            for (int ox = 0; ox < l->wout; ox++) {
                float *row = col + ((size_t)(b * l->hout + oy) * l->wout + ox) * K;
                int y0 = oy * l->stride - l->pad, x0 = ox * l->stride - l->pad;
                int inside = y0 >= 0 && x0 >= 0 && y0 + k <= l->hin && x0 + k <= l->win;
                for (int c = 0; c < l->cin; c++) {
                    const float *plane = x + ((size_t)b * l->cin + c) * l->hin * l->win;
                    for (int ky = 0; ky < k; ky++, row += k) {
                        int iy = y0 + ky;
                        if (inside) {
                            memcpy(row, plane + iy * l->win + x0, k * sizeof *row);
                            continue;
                        }
                        for (int kx = 0; kx < k; kx++) {
                            int ix = x0 + kx;
                            int in = iy >= 0 && iy < l->hin && ix >= 0 && ix < l->win;
                            row[kx] = in ? plane[iy * l->win + ix] : 0.0f;
                        }
                    }
                }
            }
}

/* Adds the column matrix dcol back into dx's shape (dx zeroed first). */
static void s_col2im(const vl_conv_layer_t *l, int n, const float *dcol, float *dx)
{
    memset(dx, 0, (size_t)n * vl_conv_in_size(l) * sizeof *dx);
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < l->hout; oy++)
            for (int ox = 0; ox < l->wout; ox++)
                for (int c = 0; c < l->cin; c++) {
                    float *plane = dx + ((size_t)b * l->cin + c) * l->hin * l->win;
                    for (int ky = 0; ky < l->k; ky++) {
                        int iy = oy * l->stride - l->pad + ky;
                        for (int kx = 0; kx < l->k; kx++, dcol++) {
                            int ix = ox * l->stride - l->pad + kx;
                            if (iy >= 0 && iy < l->hin && ix >= 0 && ix < l->win)
                                plane[iy * l->win + ix] += *dcol;
                        }
                    }
                }
}

/* rows [n*hw][cout] (+ bias, relu) into y NCHW. */
static void s_rows_to_nchw(const vl_conv_layer_t *l, int n, const float *rows, const float *bias,
                           float *y)
{
    int hw = l->hout * l->wout;
    for (int b = 0; b < n; b++)
        for (int p = 0; p < hw; p++) {
            const float *r = rows + ((size_t)b * hw + p) * l->cout;
            for (int c = 0; c < l->cout; c++) {
                float v = r[c] + bias[c];
                y[((size_t)b * l->cout + c) * hw + p] = l->relu && v < 0 ? 0.0f : v;
            }
        }
}

/* Runs layer i forward from in into e->act[i]. */
static void s_layer_forward(vl_conv_engine_t *e, int i, const float *in)
{
    const vl_conv_layer_t *l = &e->net->layer[i];
    const float *w = e->net->w[i], *bias = e->net->b[i];
    if (l->conv) {
        int M = e->n * l->hout * l->wout, K = l->cin * l->k * l->k;
        s_im2col(l, e->n, in, e->col[i]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, l->cout, K, 1.0f, e->col[i], K, w,
                    K, 0.0f, e->rows, l->cout);
        s_rows_to_nchw(l, e->n, e->rows, bias, e->act[i]);
        return;
    }
    float *y = e->act[i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, e->n, l->cout, l->cin, 1.0f, in, l->cin, w,
                l->cin, 0.0f, y, l->cout);
    for (size_t j = 0; j < (size_t)e->n * l->cout; j++) {
        float v = y[j] + bias[j % l->cout];
        y[j] = l->relu && v < 0 ? 0.0f : v;
    }
}

static void s_forward(vl_conv_engine_t *e)
{
    const vl_conv_net_t *net = e->net;
    vl_conv_scale_frames(net, e->x);
    for (int i = 0; i < net->n_layers; i++)
        s_layer_forward(e, i, i == 0 ? e->x : e->act[i - 1]);
}

static void s_conv1(vl_conv_engine_t *e)
{
    s_layer_forward(e, 0, e->x);
}

/* Layer i backward: dy (grad of its output, relu'd output in act[i]) into
   dw, db and, when dx is not NULL, the grad of its input. dy is overwritten. */
static void s_layer_backward(vl_conv_engine_t *e, int i, float *dy, const float *in, float *dx)
{
    const vl_conv_layer_t *l = &e->net->layer[i];
    const float *w = e->net->w[i], *y = e->act[i];
    int hw = l->hout * l->wout, M = e->n * hw;
    int K = l->conv ? l->cin * l->k * l->k : l->cin;
    float *dz = l->conv ? e->rows : dy; // [M][cout], rows (sample, position)
    for (int b = 0; b < e->n; b++)
        for (int c = 0; c < l->cout; c++)
            for (int p = 0; p < hw; p++) {
                size_t at = ((size_t)b * l->cout + c) * hw + p;
                float g = l->relu && y[at] <= 0 ? 0.0f : dy[at];
                dz[((size_t)b * hw + p) * l->cout + c] = g;
            }
    float *db = e->db[i];
    memset(db, 0, l->cout * sizeof *db);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < l->cout; c++)
            db[c] += dz[(size_t)r * l->cout + c];
    const float *a = l->conv ? e->col[i] : in;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l->cout, K, M, 1.0f, dz, l->cout, a, K,
                0.0f, e->dw[i], K);
    if (!dx)
        return;
    float *dcol = l->conv ? e->dcol : dx;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, l->cout, 1.0f, dz, l->cout, w, K,
                0.0f, dcol, K);
    if (l->conv)
        s_col2im(l, e->n, dcol, dx);
}

static void s_backward(vl_conv_engine_t *e)
{
    const vl_conv_net_t *net = e->net;
    int last = net->n_layers - 1;
    float *dy = e->dact[0];
    memcpy(dy, net->dy, (size_t)e->n * vl_conv_out_size(&net->layer[last]) * sizeof *dy);
    for (int i = last; i >= 0; i--) {
        float *dx = i > 0 ? e->dact[(last - i + 1) % 2] : NULL;
        s_layer_backward(e, i, dy, i == 0 ? e->x : e->act[i - 1], dx);
        dy = dx;
    }
}

static const float *s_output(vl_conv_engine_t *e)
{
    return e->act[e->net->n_layers - 1];
}

static const float *s_conv1_out(vl_conv_engine_t *e)
{
    return e->act[0];
}

static const float *s_dw(vl_conv_engine_t *e, int l)
{
    return e->dw[l];
}

static const float *s_db(vl_conv_engine_t *e, int l)
{
    return e->db[l];
}

static void s_destroy(vl_conv_engine_t **e_p)
{
    vl_conv_engine_t *e = *e_p;
    if (!e)
        return;
    for (int i = 0; i < VL_CONV_NET_LAYERS; i++) {
        free(e->act[i]);
        free(e->col[i]);
        free(e->dw[i]);
        free(e->db[i]);
    }
    free(e->x);
    free(e->rows);
    free(e->dcol);
    free(e->dact[0]);
    free(e->dact[1]);
    free(e);
    *e_p = NULL;
}

static vl_conv_engine_t *s_create(const vl_conv_net_t *net, int threads)
{
    openblas_set_num_threads(threads);
    vl_conv_engine_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->net = net;
    e->n = net->batch;
    size_t n = (size_t)net->batch, rows = 0, col = 0, act = vl_conv_in_size(&net->layer[0]);
    e->x = malloc(n * act * sizeof(float));
    int ok = e->x != NULL;
    for (int i = 0; i < net->n_layers; i++) {
        const vl_conv_layer_t *l = &net->layer[i];
        size_t m = n * l->hout * l->wout, K = l->conv ? (size_t)l->cin * l->k * l->k : 0;
        e->act[i] = malloc(n * vl_conv_out_size(l) * sizeof(float));
        e->dw[i] = malloc(vl_conv_w_size(l) * sizeof(float));
        e->db[i] = malloc(l->cout * sizeof(float));
        ok = ok && e->act[i] && e->dw[i] && e->db[i];
        if (l->conv) {
            e->col[i] = malloc(m * K * sizeof(float));
            ok = ok && e->col[i];
            rows = rows > m * l->cout ? rows : m * l->cout;
            col = col > m * K ? col : m * K;
        }
        act = act > vl_conv_out_size(l) ? act : vl_conv_out_size(l);
    }
    e->rows = malloc((rows ? rows : 1) * sizeof(float));
    e->dcol = malloc((col ? col : 1) * sizeof(float));
    e->dact[0] = malloc(n * act * sizeof(float));
    e->dact[1] = malloc(n * act * sizeof(float));
    if (!ok || !e->rows || !e->dcol || !e->dact[0] || !e->dact[1]) {
        fprintf(stderr, "vl_conv_bench: openblas: out of memory\n");
        s_destroy(&e);
        return NULL;
    }
    vl_conv_scale_frames(net, e->x);
    return e;
}

/* Returns the kernel set OpenBLAS chose for this CPU at load time. */
const char *vl_conv_blas_core(void)
{
    return openblas_get_corename();
}

const vl_conv_engine_ops_t vl_conv_blas_ops = {
    .name = "openblas",
    .create = s_create,
    .forward = s_forward,
    .backward = s_backward,
    .conv1 = s_conv1,
    .output = s_output,
    .conv1_out = s_conv1_out,
    .dw = s_dw,
    .db = s_db,
    .destroy = s_destroy,
};
