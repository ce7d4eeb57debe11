/*  vl_conv_dnnl_blocked: vl_conv_net on oneDNN with the layouts oneDNN
    chooses (format_tag_any: blocked, e.g. nChw16c), as PyTorch's own CPU
    path and oneDNN's examples/cpu_cnn_training_f32.c run it. The weights
    are reordered from PyTorch's layout once, when the engine is made (a
    model engine would keep them, and Adam's state, in the chosen layout and
    reorder only to publish them); every forward reorders the frames, every
    backward whatever layout a backward primitive wants that the forward's
    is not. Grads and the first layer's output are reordered back to
    PyTorch's layout only when read, outside the timed calls. */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_conv_net.h"

#define S_REORDERS 4 // per layer, run in the timed calls

struct vl_conv_engine_s {
    const vl_conv_net_t *net;
    int n;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    float *x;             // frames / 255, nchw
    dnnl_memory_t x_user; // on x
    dnnl_memory_t src0;   // the first layer's src in its chosen layout (may be x_user)
    dnnl_memory_t w[VL_CONV_NET_LAYERS], w_bwd[VL_CONV_NET_LAYERS]; // forward's, backward data's
    dnnl_memory_t b[VL_CONV_NET_LAYERS], y[VL_CONV_NET_LAYERS], dy[VL_CONV_NET_LAYERS];
    dnnl_memory_t dw[VL_CONV_NET_LAYERS], db[VL_CONV_NET_LAYERS];
    dnnl_primitive_t fwd[VL_CONV_NET_LAYERS], relu[VL_CONV_NET_LAYERS];
    dnnl_primitive_t relu_bwd[VL_CONV_NET_LAYERS], bwd_w[VL_CONV_NET_LAYERS];
    dnnl_primitive_t bwd_d[VL_CONV_NET_LAYERS];
    dnnl_primitive_t in_reorder, w_reorder[VL_CONV_NET_LAYERS]; // timed: frames, bwd weights
    // backward weights' src and diff dst, where it wants other layouts (timed reorders)
    dnnl_memory_t src_bw[VL_CONV_NET_LAYERS], dy_bw[VL_CONV_NET_LAYERS];
    dnnl_primitive_t src_reorder[VL_CONV_NET_LAYERS], dy_reorder[VL_CONV_NET_LAYERS];
    float *out_user, *conv1_user; // plain copies, when read
    float *dw_user[VL_CONV_NET_LAYERS], *db_user[VL_CONV_NET_LAYERS];
};

#define S_CHECK(call)                                                                              \
    do {                                                                                           \
        dnnl_status_t s_st = (call);                                                               \
        if (s_st != dnnl_success) {                                                                \
            fprintf(stderr, "vl_conv_bench: onednn-blocked: %s failed (status %d)\n", #call,       \
                    (int)s_st);                                                                    \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Creates *mem of md on handle (NULL: oneDNN allocates). */
static int s_mem(vl_conv_engine_t *e, dnnl_memory_t *mem, const dnnl_memory_desc_t *md,
                 void *handle)
{
    S_CHECK(dnnl_memory_create(mem, md, e->engine, handle ? handle : DNNL_MEMORY_ALLOCATE));
    return 0;
}

/* Creates a reorder from -> to into *prim. */
static int s_reorder_prim(vl_conv_engine_t *e, dnnl_memory_t from, dnnl_memory_t to,
                          dnnl_primitive_t *prim)
{
    const dnnl_memory_desc_t *fmd, *tmd;
    dnnl_primitive_desc_t pd;
    S_CHECK(dnnl_memory_get_memory_desc(from, &fmd));
    S_CHECK(dnnl_memory_get_memory_desc(to, &tmd));
    S_CHECK(dnnl_reorder_primitive_desc_create(&pd, fmd, e->engine, tmd, e->engine, NULL));
    dnnl_status_t st = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return st == dnnl_success ? 0 : -1;
}

/* Runs reorder prim from -> to. */
static void s_reorder_run(vl_conv_engine_t *e, dnnl_primitive_t prim, dnnl_memory_t from,
                          dnnl_memory_t to)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    dnnl_primitive_execute(prim, e->stream, 2, args);
}

/* Copies from into to (other layouts) once, now. Returns 0 or -1. */
static int s_reorder_once(vl_conv_engine_t *e, dnnl_memory_t from, dnnl_memory_t to)
{
    dnnl_primitive_t prim;
    if (s_reorder_prim(e, from, to, &prim) != 0)
        return -1;
    s_reorder_run(e, prim, from, to);
    dnnl_stream_wait(e->stream);
    dnnl_primitive_destroy(prim);
    return 0;
}

/* Makes layer i's op descriptor for kind (forward, backward weights or
   data) with the given mds into cd or id; returns it. */
static const void *s_op(const vl_conv_layer_t *l, int kind, dnnl_convolution_desc_t *cd,
                        dnnl_inner_product_desc_t *id, const dnnl_memory_desc_t *src,
                        const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *b,
                        const dnnl_memory_desc_t *dst)
{
    dnnl_dims_t st = {l->stride, l->stride}, pad = {l->pad, l->pad};
    dnnl_alg_kind_t alg = dnnl_convolution_direct;
    dnnl_status_t s = dnnl_success;
    if (l->conv && kind == 0)
        s = dnnl_convolution_forward_desc_init(cd, dnnl_forward_training, alg, src, w, b, dst, st,
                                               pad, pad);
    else if (l->conv && kind == 1)
        s = dnnl_convolution_backward_weights_desc_init(cd, alg, src, w, b, dst, st, pad, pad);
    else if (l->conv)
        s = dnnl_convolution_backward_data_desc_init(cd, alg, src, w, dst, st, pad, pad);
    else if (kind == 0)
        s = dnnl_inner_product_forward_desc_init(id, dnnl_forward_training, src, w, b, dst);
    else if (kind == 1)
        s = dnnl_inner_product_backward_weights_desc_init(id, src, w, b, dst);
    else
        s = dnnl_inner_product_backward_data_desc_init(id, src, w, dst);
    if (s != dnnl_success)
        return NULL;
    return l->conv ? (const void *)cd : (const void *)id;
}

/* The user's (PyTorch's) mds of layer i: src (i == 0 only), weights, bias. */
static int s_user_mds(const vl_conv_engine_t *e, int i, dnnl_memory_desc_t *src,
                      dnnl_memory_desc_t *w, dnnl_memory_desc_t *b, dnnl_memory_desc_t *dst_any)
{
    const vl_conv_layer_t *l = &e->net->layer[i], *p = i > 0 ? &e->net->layer[i - 1] : l;
    int four = l->conv || (i > 0 && p->conv);
    dnnl_dims_t sd = {e->n, l->cin, l->hin, l->win}, wd = {l->cout, l->cin, l->k, l->k};
    dnnl_dims_t bd = {l->cout}, dd = {e->n, l->cout, l->hout, l->wout};
    if (!l->conv && four)
        sd[1] = wd[1] = p->cout, sd[2] = wd[2] = p->hout, sd[3] = wd[3] = p->wout;
    else if (!l->conv)
        wd[1] = l->cin;
    int nd = four ? 4 : 2;
    S_CHECK(dnnl_memory_desc_init_by_tag(src, nd, sd, dnnl_f32, four ? dnnl_nchw : dnnl_nc));
    S_CHECK(dnnl_memory_desc_init_by_tag(w, nd, wd, dnnl_f32, four ? dnnl_oihw : dnnl_oi));
    S_CHECK(dnnl_memory_desc_init_by_tag(b, 1, bd, dnnl_f32, dnnl_x));
    S_CHECK(
        dnnl_memory_desc_init_by_tag(dst_any, l->conv ? 4 : 2, dd, dnnl_f32, dnnl_format_tag_any));
    return 0;
}

/* Points *mem at what backward-weights pd wants for `what`: fwd itself
   when the layouts agree, else a new memory that *reorder fills from fwd. */
static int s_bw_mem(vl_conv_engine_t *e, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
                    dnnl_memory_t fwd, dnnl_memory_t *mem, dnnl_primitive_t *reorder)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, what, 0), *have;
    S_CHECK(dnnl_memory_get_memory_desc(fwd, &have));
    if (dnnl_memory_desc_equal(want, have)) {
        *mem = fwd;
        return 0;
    }
    if (s_mem(e, mem, want, NULL) != 0)
        return -1;
    return s_reorder_prim(e, fwd, *mem, reorder);
}

/* Builds layer i: forward (src: the frames' chosen layout or the previous
   layer's output, weights any), relu, backward weights and data. */
static int s_layer(vl_conv_engine_t *e, int i)
{
    const vl_conv_layer_t *l = &e->net->layer[i];
    dnnl_memory_desc_t src_u, w_u, b_md, dst_any, w_any, src_any;
    if (s_user_mds(e, i, &src_u, &w_u, &b_md, &dst_any) != 0)
        return -1;
    w_any = w_u;
    w_any.format_kind = dnnl_format_kind_any;
    src_any = src_u;
    src_any.format_kind = dnnl_format_kind_any;
    const dnnl_memory_desc_t *src = &src_any;
    if (i > 0)
        S_CHECK(dnnl_memory_get_memory_desc(e->y[i - 1], &src));
    dnnl_convolution_desc_t cd;
    dnnl_inner_product_desc_t id;
    dnnl_primitive_desc_t fpd, pd;
    const void *op = s_op(l, 0, &cd, &id, src, &w_any, &b_md, &dst_any);
    if (!op)
        return -1;
    S_CHECK(dnnl_primitive_desc_create(&fpd, op, NULL, e->engine, NULL));
    S_CHECK(dnnl_primitive_create(&e->fwd[i], fpd));
    const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *y_md = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
    dnnl_memory_t w_user;
    if (i == 0) {
        if (s_mem(e, &e->x_user, &src_u, e->x) != 0)
            return -1;
        if (dnnl_memory_desc_equal(src_md, &src_u)) {
            e->src0 = e->x_user;
        } else if (s_mem(e, &e->src0, src_md, NULL) != 0 ||
                   s_reorder_prim(e, e->x_user, e->src0, &e->in_reorder) != 0) {
            return -1;
        }
    }
    if (s_mem(e, &e->w[i], w_md, NULL) != 0 || s_mem(e, &e->b[i], &b_md, e->net->b[i]) != 0 ||
        s_mem(e, &e->y[i], y_md, NULL) != 0 || s_mem(e, &e->dy[i], y_md, NULL) != 0 ||
        s_mem(e, &w_user, &w_u, e->net->w[i]) != 0 || s_mem(e, &e->db[i], &b_md, NULL) != 0)
        return -1;
    int rc = s_reorder_once(e, w_user, e->w[i]);
    dnnl_memory_destroy(w_user);
    if (rc != 0)
        return -1;
    if (l->relu) {
        dnnl_eltwise_desc_t ed;
        dnnl_primitive_desc_t rpd;
        S_CHECK(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training,
                                               dnnl_eltwise_relu_use_dst_for_bwd, y_md, 0, 0));
        S_CHECK(dnnl_primitive_desc_create(&rpd, &ed, NULL, e->engine, NULL));
        S_CHECK(dnnl_primitive_create(&e->relu[i], rpd));
        S_CHECK(dnnl_eltwise_backward_desc_init(&ed, dnnl_eltwise_relu_use_dst_for_bwd, y_md, y_md,
                                                0, 0));
        S_CHECK(dnnl_primitive_desc_create(&pd, &ed, NULL, e->engine, rpd));
        S_CHECK(dnnl_primitive_create(&e->relu_bwd[i], pd));
        dnnl_primitive_desc_destroy(pd);
        dnnl_primitive_desc_destroy(rpd);
    }
    // Backward weights: every layout where oneDNN likes it (with the forward's,
    // the first layer's gets only the reference implementation).
    dnnl_memory_desc_t y_any = *y_md;
    y_any.format_kind = dnnl_format_kind_any;
    if (!(op = s_op(l, 1, &cd, &id, &src_any, &w_any, &b_md, &y_any)))
        return -1;
    S_CHECK(dnnl_primitive_desc_create(&pd, op, NULL, e->engine, fpd));
    S_CHECK(dnnl_primitive_create(&e->bwd_w[i], pd));
    if (s_bw_mem(e, pd, dnnl_query_src_md, i == 0 ? e->src0 : e->y[i - 1], &e->src_bw[i],
                 &e->src_reorder[i]) != 0 ||
        s_bw_mem(e, pd, dnnl_query_diff_dst_md, e->dy[i], &e->dy_bw[i], &e->dy_reorder[i]) != 0)
        return -1;
    const dnnl_memory_desc_t *dw_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
    rc = s_mem(e, &e->dw[i], dw_md, NULL);
    dnnl_primitive_desc_destroy(pd);
    if (rc != 0)
        return -1;
    if (i > 0) { // backward data into the previous layer's dy, weights where it wants them
        if (!(op = s_op(l, 2, &cd, &id, src_md, &w_any, NULL, y_md)))
            return -1;
        S_CHECK(dnnl_primitive_desc_create(&pd, op, NULL, e->engine, fpd));
        S_CHECK(dnnl_primitive_create(&e->bwd_d[i], pd));
        const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        if (dnnl_memory_desc_equal(wb, w_md))
            e->w_bwd[i] = e->w[i];
        else if (s_mem(e, &e->w_bwd[i], wb, NULL) != 0 ||
                 s_reorder_prim(e, e->w[i], e->w_bwd[i], &e->w_reorder[i]) != 0)
            return -1;
        dnnl_primitive_desc_destroy(pd);
    }
    dnnl_primitive_desc_destroy(fpd);
    return 0;
}

/* Executes prim with n (arg, memory) pairs. */
static void s_exec(vl_conv_engine_t *e, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *a)
{
    if (prim)
        dnnl_primitive_execute(prim, e->stream, n, a);
}

/* Runs layer i's forward and relu. */
static void s_layer_forward(vl_conv_engine_t *e, int i)
{
    dnnl_memory_t src = i == 0 ? e->src0 : e->y[i - 1];
    dnnl_exec_arg_t f[4] = {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, e->w[i]},
                            {DNNL_ARG_BIAS, e->b[i]},
                            {DNNL_ARG_DST, e->y[i]}};
    s_exec(e, e->fwd[i], 4, f);
    dnnl_exec_arg_t r[2] = {{DNNL_ARG_SRC, e->y[i]}, {DNNL_ARG_DST, e->y[i]}};
    s_exec(e, e->relu[i], 2, r);
}

static void s_forward(vl_conv_engine_t *e)
{
    vl_conv_scale_frames(e->net, e->x);
    if (e->in_reorder)
        s_reorder_run(e, e->in_reorder, e->x_user, e->src0);
    for (int i = 0; i < e->net->n_layers; i++)
        s_layer_forward(e, i);
    dnnl_stream_wait(e->stream);
}

static void s_conv1(vl_conv_engine_t *e)
{
    if (e->in_reorder)
        s_reorder_run(e, e->in_reorder, e->x_user, e->src0);
    s_layer_forward(e, 0);
    dnnl_stream_wait(e->stream);
}

static void s_backward(vl_conv_engine_t *e)
{
    int last = e->net->n_layers - 1;
    void *dy;
    dnnl_memory_get_data_handle(e->dy[last], &dy); // the last layer's dst is plain (nc)
    memcpy(dy, e->net->dy, (size_t)e->n * vl_conv_out_size(&e->net->layer[last]) * sizeof(float));
    for (int i = last; i >= 0; i--) {
        dnnl_memory_t src = i == 0 ? e->src0 : e->y[i - 1];
        dnnl_exec_arg_t r[3] = {
            {DNNL_ARG_DST, e->y[i]}, {DNNL_ARG_DIFF_DST, e->dy[i]}, {DNNL_ARG_DIFF_SRC, e->dy[i]}};
        s_exec(e, e->relu_bwd[i], 3, r);
        if (e->src_reorder[i])
            s_reorder_run(e, e->src_reorder[i], src, e->src_bw[i]);
        if (e->dy_reorder[i])
            s_reorder_run(e, e->dy_reorder[i], e->dy[i], e->dy_bw[i]);
        dnnl_exec_arg_t w[4] = {{DNNL_ARG_SRC, e->src_bw[i]},
                                {DNNL_ARG_DIFF_DST, e->dy_bw[i]},
                                {DNNL_ARG_DIFF_WEIGHTS, e->dw[i]},
                                {DNNL_ARG_DIFF_BIAS, e->db[i]}};
        s_exec(e, e->bwd_w[i], 4, w);
        if (i == 0)
            continue;
        if (e->w_reorder[i])
            s_reorder_run(e, e->w_reorder[i], e->w[i], e->w_bwd[i]);
        dnnl_exec_arg_t d[3] = {{DNNL_ARG_DIFF_DST, e->dy[i]},
                                {DNNL_ARG_WEIGHTS, e->w_bwd[i]},
                                {DNNL_ARG_DIFF_SRC, e->dy[i - 1]}};
        s_exec(e, e->bwd_d[i], 3, d);
    }
    dnnl_stream_wait(e->stream);
}

/* Reorders mem into PyTorch's layout in out (md as mem's, plain tag). */
static const float *s_plain(vl_conv_engine_t *e, dnnl_memory_t mem, float *out, int nd,
                            const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    dnnl_memory_t to;
    if (dnnl_memory_desc_init_by_tag(&md, nd, dims, dnnl_f32, tag) != dnnl_success ||
        s_mem(e, &to, &md, out) != 0)
        return NULL;
    int rc = s_reorder_once(e, mem, to);
    dnnl_memory_destroy(to);
    return rc == 0 ? out : NULL;
}

static const float *s_output(vl_conv_engine_t *e)
{
    const vl_conv_layer_t *l = &e->net->layer[e->net->n_layers - 1];
    dnnl_dims_t d = {e->n, l->cout, l->hout, l->wout};
    return s_plain(e, e->y[e->net->n_layers - 1], e->out_user, l->conv ? 4 : 2, d,
                   l->conv ? dnnl_nchw : dnnl_nc);
}

static const float *s_conv1_out(vl_conv_engine_t *e)
{
    const vl_conv_layer_t *l = &e->net->layer[0];
    dnnl_dims_t d = {e->n, l->cout, l->hout, l->wout};
    return s_plain(e, e->y[0], e->conv1_user, l->conv ? 4 : 2, d, l->conv ? dnnl_nchw : dnnl_nc);
}

static const float *s_dw(vl_conv_engine_t *e, int i)
{
    const dnnl_memory_desc_t *md;
    dnnl_memory_get_memory_desc(e->w[i], &md);
    return s_plain(e, e->dw[i], e->dw_user[i], md->ndims, md->dims,
                   md->ndims == 4 ? dnnl_oihw : dnnl_oi);
}

static const float *s_db(vl_conv_engine_t *e, int i)
{
    void *p;
    dnnl_memory_get_data_handle(e->db[i], &p);
    return p;
}

static void s_destroy(vl_conv_engine_t **e_p)
{
    vl_conv_engine_t *e = *e_p;
    if (!e)
        return;
    dnnl_primitive_t *prims[] = {e->fwd, e->relu, e->relu_bwd, e->bwd_w, e->bwd_d, e->w_reorder};
    dnnl_memory_t *mems[] = {e->b, e->y, e->dy, e->dw, e->db};
    for (int i = 0; i < VL_CONV_NET_LAYERS; i++) {
        for (size_t k = 0; k < sizeof prims / sizeof prims[0]; k++)
            if (prims[k][i])
                dnnl_primitive_destroy(prims[k][i]);
        for (size_t k = 0; k < sizeof mems / sizeof mems[0]; k++)
            if (mems[k][i])
                dnnl_memory_destroy(mems[k][i]);
        if (e->w_bwd[i] && e->w_bwd[i] != e->w[i])
            dnnl_memory_destroy(e->w_bwd[i]);
        if (e->src_bw[i] && e->src_bw[i] != (i == 0 ? e->src0 : e->y[i - 1]))
            dnnl_memory_destroy(e->src_bw[i]);
        if (e->dy_bw[i] && e->dy_bw[i] != e->dy[i])
            dnnl_memory_destroy(e->dy_bw[i]);
        if (e->src_reorder[i])
            dnnl_primitive_destroy(e->src_reorder[i]);
        if (e->dy_reorder[i])
            dnnl_primitive_destroy(e->dy_reorder[i]);
        if (e->w[i])
            dnnl_memory_destroy(e->w[i]);
        free(e->dw_user[i]);
    }
    if (e->in_reorder)
        dnnl_primitive_destroy(e->in_reorder);
    if (e->src0 && e->src0 != e->x_user)
        dnnl_memory_destroy(e->src0);
    if (e->x_user)
        dnnl_memory_destroy(e->x_user);
    if (e->stream)
        dnnl_stream_destroy(e->stream);
    if (e->engine)
        dnnl_engine_destroy(e->engine);
    free(e->x);
    free(e->out_user);
    free(e->conv1_user);
    free(e);
    *e_p = NULL;
}

static vl_conv_engine_t *s_create(const vl_conv_net_t *net, int threads)
{
    omp_set_num_threads(threads);
    vl_conv_engine_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->net = net;
    e->n = net->batch;
    size_t n = (size_t)net->batch;
    e->x = malloc(n * vl_conv_in_size(&net->layer[0]) * sizeof(float));
    e->out_user = malloc(n * vl_conv_out_size(&net->layer[net->n_layers - 1]) * sizeof(float));
    e->conv1_user = malloc(n * vl_conv_out_size(&net->layer[0]) * sizeof(float));
    int ok = e->x && e->out_user && e->conv1_user;
    for (int i = 0; i < net->n_layers; i++)
        ok = ok && (e->dw_user[i] = malloc(vl_conv_w_size(&net->layer[i]) * sizeof(float)));
    if (!ok || dnnl_engine_create(&e->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&e->stream, e->engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "vl_conv_bench: onednn-blocked: no memory or no CPU engine\n");
        s_destroy(&e);
        return NULL;
    }
    for (int i = 0; i < net->n_layers; i++)
        if (s_layer(e, i) != 0) {
            s_destroy(&e);
            return NULL;
        }
    vl_conv_scale_frames(net, e->x);
    return e;
}

const vl_conv_engine_ops_t vl_conv_dnnl_blocked_ops = {
    .name = "onednn-blocked",
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
