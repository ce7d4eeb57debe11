/*  vl_conv_dnnl: vl_conv_net on oneDNN's C API, the pattern of oneDNN's
    examples/cpu_cnn_training_f32.c: per layer a convolution or inner
    product primitive, an eltwise relu (relu_use_dst_for_bwd, in place) and,
    for training, the relu's backward, backward weights and (but for the
    first layer) backward data, each created from the forward's descriptor
    as its hint. Memory is in PyTorch's plain layouts (nchw, oihw, nc, oi),
    on the engine's own buffers, so no reorder runs: the layout the model
    engine must keep. oneDNN's threads are OpenMP's (Debian's build). */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_conv_net.h"

enum { S_FWD, S_RELU, S_RELU_BWD, S_BWD_W, S_BWD_D, S_PRIMS };

struct vl_conv_engine_s {
    const vl_conv_net_t *net;
    int n;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    float *x;                      // frames / 255
    float *y[VL_CONV_NET_LAYERS];  // layer outputs (relu in place)
    float *dy[VL_CONV_NET_LAYERS]; // grads of the layer outputs (relu backward in place)
    float *dw[VL_CONV_NET_LAYERS], *db[VL_CONV_NET_LAYERS];
    dnnl_memory_t mem[VL_CONV_NET_LAYERS][8];
    dnnl_primitive_t prim[VL_CONV_NET_LAYERS][S_PRIMS];
    dnnl_exec_arg_t args[VL_CONV_NET_LAYERS][S_PRIMS][5];
    int nargs[VL_CONV_NET_LAYERS][S_PRIMS];
    char impl[VL_CONV_NET_LAYERS][64]; // the forward's implementation, for the report
};

enum { M_SRC, M_W, M_B, M_Y, M_DY, M_DW, M_DB, M_DX };

#define S_CHECK(call)                                                                              \
    do {                                                                                           \
        dnnl_status_t s_st = (call);                                                               \
        if (s_st != dnnl_success) {                                                                \
            fprintf(stderr, "vl_conv_bench: onednn: %s failed (status %d)\n", #call, (int)s_st);   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Makes the memory descriptors of layer i: src, weights, bias, dst. */
static int s_descs(const vl_conv_engine_t *e, int i, dnnl_memory_desc_t md[4])
{
    const vl_conv_layer_t *l = &e->net->layer[i];
    int n = e->n;
    int four = l->conv || (i > 0 && e->net->layer[i - 1].conv); // an ip after a conv reads nchw
    const vl_conv_layer_t *p = i > 0 ? &e->net->layer[i - 1] : l;
    dnnl_dims_t src = {n, l->cin, l->hin, l->win}, w = {l->cout, l->cin, l->k, l->k};
    dnnl_dims_t bias = {l->cout}, dst = {n, l->cout, l->hout, l->wout};
    if (!l->conv && four) {
        src[1] = p->cout, src[2] = p->hout, src[3] = p->wout;
        w[1] = p->cout, w[2] = p->hout, w[3] = p->wout;
    } else if (!l->conv) {
        w[1] = l->cin;
        dst[1] = l->cout;
    }
    dnnl_format_tag_t st = four ? dnnl_nchw : dnnl_nc, wt = four ? dnnl_oihw : dnnl_oi;
    S_CHECK(dnnl_memory_desc_init_by_tag(&md[0], four ? 4 : 2, src, dnnl_f32, st));
    S_CHECK(dnnl_memory_desc_init_by_tag(&md[1], four ? 4 : 2, w, dnnl_f32, wt));
    S_CHECK(dnnl_memory_desc_init_by_tag(&md[2], 1, bias, dnnl_f32, dnnl_x));
    if (l->conv)
        S_CHECK(dnnl_memory_desc_init_by_tag(&md[3], 4, dst, dnnl_f32, dnnl_nchw));
    else
        S_CHECK(dnnl_memory_desc_init_by_tag(&md[3], 2, dst, dnnl_f32, dnnl_nc));
    return 0;
}

/* Creates the primitive of op_desc (hint: the forward's pd) into *prim. */
static int s_prim(vl_conv_engine_t *e, const void *op_desc, const_dnnl_primitive_desc_t hint,
                  dnnl_primitive_desc_t *pd_out, dnnl_primitive_t *prim)
{
    dnnl_primitive_desc_t pd;
    S_CHECK(dnnl_primitive_desc_create(&pd, op_desc, NULL, e->engine, hint));
    S_CHECK(dnnl_primitive_create(prim, pd));
    if (pd_out)
        *pd_out = pd;
    else
        dnnl_primitive_desc_destroy(pd);
    return 0;
}

/* Sets the args of primitive k of layer i. */
static void s_args(vl_conv_engine_t *e, int i, int k, int n, const int *what, const int *mem)
{
    for (int j = 0; j < n; j++)
        e->args[i][k][j] = (dnnl_exec_arg_t){what[j], e->mem[i][mem[j]]};
    e->nargs[i][k] = n;
}

/* Builds layer i's memories and primitives. */
static int s_layer(vl_conv_engine_t *e, int i)
{
    const vl_conv_layer_t *l = &e->net->layer[i];
    dnnl_memory_desc_t md[4];
    if (s_descs(e, i, md) != 0)
        return -1;
    float *src = i == 0 ? e->x : e->y[i - 1];
    void *handle[8] = {src,      e->net->w[i], e->net->b[i], e->y[i],
                       e->dy[i], e->dw[i],     e->db[i],     i > 0 ? e->dy[i - 1] : NULL};
    int mdi[8] = {0, 1, 2, 3, 3, 1, 2, 0};
    for (int m = 0; m < 8; m++)
        if (handle[m])
            S_CHECK(dnnl_memory_create(&e->mem[i][m], &md[mdi[m]], e->engine, handle[m]));
    dnnl_dims_t strides = {l->stride, l->stride}, pad = {l->pad, l->pad};
    dnnl_convolution_desc_t cd;
    dnnl_inner_product_desc_t id;
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t fwd_pd;
    const void *op = l->conv ? (const void *)&cd : (const void *)&id;
    if (l->conv)
        S_CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
                                                   dnnl_convolution_direct, &md[0], &md[1], &md[2],
                                                   &md[3], strides, pad, pad));
    else
        S_CHECK(dnnl_inner_product_forward_desc_init(&id, dnnl_forward_training, &md[0], &md[1],
                                                     &md[2], &md[3]));
    if (s_prim(e, op, NULL, &fwd_pd, &e->prim[i][S_FWD]) != 0)
        return -1;
    const char *impl = "";
    dnnl_primitive_desc_query(fwd_pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(e->impl[i], sizeof e->impl[i], "%s", impl);
    s_args(e, i, S_FWD, 4, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST},
           (int[]){M_SRC, M_W, M_B, M_Y});
    if (l->conv)
        S_CHECK(dnnl_convolution_backward_weights_desc_init(
            &cd, dnnl_convolution_direct, &md[0], &md[1], &md[2], &md[3], strides, pad, pad));
    else
        S_CHECK(dnnl_inner_product_backward_weights_desc_init(&id, &md[0], &md[1], &md[2], &md[3]));
    if (s_prim(e, op, fwd_pd, NULL, &e->prim[i][S_BWD_W]) != 0)
        return -1;
    s_args(e, i, S_BWD_W, 4,
           (int[]){DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS},
           (int[]){M_SRC, M_DY, M_DW, M_DB});
    if (i > 0) {
        if (l->conv)
            S_CHECK(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &md[0],
                                                             &md[1], &md[3], strides, pad, pad));
        else
            S_CHECK(dnnl_inner_product_backward_data_desc_init(&id, &md[0], &md[1], &md[3]));
        if (s_prim(e, op, fwd_pd, NULL, &e->prim[i][S_BWD_D]) != 0)
            return -1;
        s_args(e, i, S_BWD_D, 3, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
               (int[]){M_DY, M_W, M_DX});
    }
    if (l->relu) {
        dnnl_primitive_desc_t relu_pd;
        S_CHECK(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training,
                                               dnnl_eltwise_relu_use_dst_for_bwd, &md[3], 0, 0));
        if (s_prim(e, &ed, NULL, &relu_pd, &e->prim[i][S_RELU]) != 0)
            return -1;
        s_args(e, i, S_RELU, 2, (int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, (int[]){M_Y, M_Y});
        S_CHECK(dnnl_eltwise_backward_desc_init(&ed, dnnl_eltwise_relu_use_dst_for_bwd, &md[3],
                                                &md[3], 0, 0));
        int rc = s_prim(e, &ed, relu_pd, NULL, &e->prim[i][S_RELU_BWD]);
        dnnl_primitive_desc_destroy(relu_pd);
        if (rc != 0)
            return -1;
        s_args(e, i, S_RELU_BWD, 3, (int[]){DNNL_ARG_DST, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC},
               (int[]){M_Y, M_DY, M_DY});
    }
    dnnl_primitive_desc_destroy(fwd_pd);
    return 0;
}

/* Runs primitive k of layer i, if the layer has one. */
static void s_run(vl_conv_engine_t *e, int i, int k)
{
    if (e->prim[i][k])
        dnnl_primitive_execute(e->prim[i][k], e->stream, e->nargs[i][k], e->args[i][k]);
}

static void s_forward(vl_conv_engine_t *e)
{
    vl_conv_scale_frames(e->net, e->x);
    for (int i = 0; i < e->net->n_layers; i++) {
        s_run(e, i, S_FWD);
        s_run(e, i, S_RELU);
    }
    dnnl_stream_wait(e->stream);
}

static void s_conv1(vl_conv_engine_t *e)
{
    s_run(e, 0, S_FWD);
    s_run(e, 0, S_RELU);
    dnnl_stream_wait(e->stream);
}

static void s_backward(vl_conv_engine_t *e)
{
    int last = e->net->n_layers - 1;
    memcpy(e->dy[last], e->net->dy,
           (size_t)e->n * vl_conv_out_size(&e->net->layer[last]) * sizeof(float));
    for (int i = last; i >= 0; i--) {
        s_run(e, i, S_RELU_BWD);
        s_run(e, i, S_BWD_W);
        s_run(e, i, S_BWD_D);
    }
    dnnl_stream_wait(e->stream);
}

static const float *s_output(vl_conv_engine_t *e)
{
    return e->y[e->net->n_layers - 1];
}

static const float *s_conv1_out(vl_conv_engine_t *e)
{
    return e->y[0];
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
        for (int k = 0; k < S_PRIMS; k++)
            if (e->prim[i][k])
                dnnl_primitive_destroy(e->prim[i][k]);
        for (int m = 0; m < 8; m++)
            if (e->mem[i][m])
                dnnl_memory_destroy(e->mem[i][m]);
        free(e->y[i]);
        free(e->dy[i]);
        free(e->dw[i]);
        free(e->db[i]);
    }
    if (e->stream)
        dnnl_stream_destroy(e->stream);
    if (e->engine)
        dnnl_engine_destroy(e->engine);
    free(e->x);
    free(e);
    *e_p = NULL;
}

/* Returns the implementation oneDNN chose for layer l's forward. */
const char *vl_conv_dnnl_impl(const vl_conv_engine_t *e, int l)
{
    return e->impl[l];
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
    int ok = e->x != NULL;
    for (int i = 0; i < net->n_layers; i++) {
        const vl_conv_layer_t *l = &net->layer[i];
        e->y[i] = malloc(n * vl_conv_out_size(l) * sizeof(float));
        e->dy[i] = malloc(n * vl_conv_out_size(l) * sizeof(float));
        e->dw[i] = malloc(vl_conv_w_size(l) * sizeof(float));
        e->db[i] = malloc(l->cout * sizeof(float));
        ok = ok && e->y[i] && e->dy[i] && e->dw[i] && e->db[i];
    }
    if (!ok || dnnl_engine_create(&e->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&e->stream, e->engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "vl_conv_bench: onednn: no memory or no CPU engine\n");
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

const vl_conv_engine_ops_t vl_conv_dnnl_ops = {
    .name = "onednn",
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
