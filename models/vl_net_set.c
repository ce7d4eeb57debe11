/*  vl_net_set: one batch size's primitives for vl_net; see vl_net_set.h. */
#include "vl_net_set.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"

static void s_layer_free(vl_net_prims_t *p)
{
    dnnl_primitive_t *prims[] = {&p->fwd,  &p->act,      &p->act_bwd,   &p->bwd_w,    &p->bwd_d,
                                 &p->w_in, &p->w_bwd_in, &p->src_bw_in, &p->dy_bw_in, &p->dw_out};
    dnnl_memory_t *mems[] = {&p->w_user, &p->dw_user, &p->w,  &p->w_bwd,  &p->b,    &p->y,
                             &p->dy,     &p->dw,      &p->db, &p->src_bw, &p->dy_bw};
    for (size_t k = 0; k < sizeof prims / sizeof prims[0]; k++)
        vl_dnnl_prim_free(prims[k]);
    for (size_t k = 0; k < sizeof mems / sizeof mems[0]; k++)
        vl_dnnl_mem_free(mems[k]);
}

void vl_net_set_destroy(vl_net_set_t **set_p)
{
    vl_net_set_t *set = *set_p;
    if (!set)
        return;
    for (uint32_t i = 0; i < VL_OBS_FIELDS_MAX; i++) {
        for (uint32_t j = 0; j < VL_MODEL_LAYERS_MAX; j++)
            s_layer_free(&set->conv[i][j]);
        vl_dnnl_mem_free(&set->in_view[i]);
        vl_dnnl_mem_free(&set->src0[i]);
        vl_dnnl_mem_free(&set->feat_view[i]);
        vl_dnnl_mem_free(&set->dfeat_view[i]);
        vl_dnnl_prim_free(&set->in_scale[i]);
        vl_dnnl_prim_free(&set->to_feats[i]);
        vl_dnnl_prim_free(&set->from_dfeats[i]);
    }
    for (uint32_t j = 0; j < VL_MODEL_LAYERS_MAX; j++)
        s_layer_free(&set->lin[j]);
    vl_dnnl_mem_free(&set->feats);
    vl_dnnl_mem_free(&set->dfeats);
    free(set->feats_p);
    free(set->dfeats_p);
    free(set);
    *set_p = NULL;
}

/* Makes conv g's op descriptor: kind 0 forward, 1 backward weights, 2
   backward data. Returns oneDNN's status. */
static dnnl_status_t s_op(const vl_net_geom_t *g, int kind, dnnl_convolution_desc_t *cd,
                          const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *w,
                          const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *dst)
{
    dnnl_dims_t st = {g->stride, g->stride}, pad = {g->pad, g->pad};
    dnnl_alg_kind_t alg = dnnl_convolution_direct;
    if (kind == 0)
        return dnnl_convolution_forward_desc_init(cd, dnnl_forward_training, alg, src, w, b, dst,
                                                  st, pad, pad);
    if (kind == 1)
        return dnnl_convolution_backward_weights_desc_init(cd, alg, src, w, b, dst, st, pad, pad);
    return dnnl_convolution_backward_data_desc_init(cd, alg, src, w, dst, st, pad, pad);
}

/* Creates *pd for conv g's op of kind with the given mds and hint. */
static int s_pd(vl_net_t *self, const vl_net_geom_t *g, int kind, const dnnl_memory_desc_t *src,
                const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *b,
                const dnnl_memory_desc_t *dst, const_dnnl_primitive_desc_t hint,
                dnnl_primitive_desc_t *pd)
{
    dnnl_convolution_desc_t cd;
    if (vl_dnnl_ok(s_op(g, kind, &cd, src, w, b, dst), "a conv's op descriptor") != 0)
        return -1;
    return vl_dnnl_pd(self->dnnl, pd, &cd, 1.0f, 0, hint);
}

/* Points *mem at a new memory of what pd wants for `what` when it differs
   from have's layout, with *reorder filling it from have; else leaves both
   NULL (have is used as it is). */
static int s_bw_mem(vl_net_t *self, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
                    dnnl_memory_t have, dnnl_memory_t *mem, dnnl_primitive_t *reorder)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, what, 0);
    if (dnnl_memory_desc_equal(want, vl_dnnl_md_of(have)))
        return 0;
    if (vl_dnnl_mem(self->dnnl, mem, want, DNNL_MEMORY_ALLOCATE) != 0)
        return -1;
    return vl_dnnl_reorder(self->dnnl, vl_dnnl_md_of(have), want, 1.0f, 0, reorder);
}

/* Creates the eltwise forward and backward (on dst) of g's activation. */
static int s_act_build(vl_net_t *self, const vl_net_geom_t *g, vl_net_prims_t *p)
{
    if (g->act == dnnl_alg_kind_undef)
        return 0;
    const dnnl_memory_desc_t *y = vl_dnnl_md_of(p->y);
    dnnl_eltwise_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    int rc = vl_dnnl_ok(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, g->act, y, 0, 0),
                        "an eltwise") ||
             vl_dnnl_ok(dnnl_eltwise_backward_desc_init(&bd, g->act, y, y, 0, 0), "an eltwise") ||
             vl_dnnl_pd(self->dnnl, &fpd, &fd, 1.0f, 0, NULL) ||
             vl_dnnl_pd(self->dnnl, &bpd, &bd, 1.0f, 0, fpd) || vl_dnnl_prim(&p->act, fpd) ||
             vl_dnnl_prim(&p->act_bwd, bpd);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    return rc ? -1 : 0;
}

/* Creates g's weight and bias memories (the chosen layout w_md, and
   PyTorch's on params and grads) and the reorders between them. */
static int s_weights_build(vl_net_t *self, const vl_net_geom_t *g, vl_net_prims_t *p,
                           const dnnl_memory_desc_t *w_md, const dnnl_memory_desc_t *dw_md)
{
    dnnl_dims_t wd = {g->cout, g->cin, g->k, g->k}, bd = {g->cout};
    dnnl_memory_desc_t w_u, b_md;
    if (vl_dnnl_md(&w_u, 4, wd, NULL, dnnl_oihw) != 0 ||
        vl_dnnl_md(&b_md, 1, bd, NULL, dnnl_x) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->w, w_md, DNNL_MEMORY_ALLOCATE) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->w_user, &w_u, self->params + g->w_off) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->dw, dw_md, DNNL_MEMORY_ALLOCATE) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->dw_user, &w_u, self->grads + g->w_off) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->b, &b_md, DNNL_MEMORY_ALLOCATE) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->db, &b_md, DNNL_MEMORY_ALLOCATE) != 0)
        return -1;
    if (vl_dnnl_reorder(self->dnnl, &w_u, w_md, 1.0f, 0, &p->w_in) != 0 ||
        vl_dnnl_reorder(self->dnnl, dw_md, &w_u, 1.0f, 1, &p->dw_out) != 0)
        return -1;
    return 0;
}

/* Builds conv g on src (a concrete md, or NULL for the first conv, which
   then picks its own and creates *src0 with it): forward with its
   activation, backward weights, and backward data unless bwd_data is 0,
   each output in the layout oneDNN picks. */
static int s_conv_build(vl_net_t *self, const vl_net_geom_t *g, vl_net_prims_t *p,
                        dnnl_memory_t src, uint32_t n, dnnl_memory_t *src0, int bwd_data)
{
    dnnl_dims_t sd = {n, g->cin, g->hin, g->win}, wd = {g->cout, g->cin, g->k, g->k};
    dnnl_dims_t bd = {g->cout}, dd = {n, g->cout, g->hout, g->wout};
    dnnl_memory_desc_t src_any, w_any, b_md, dst_any;
    if (vl_dnnl_md(&src_any, 4, sd, NULL, dnnl_format_tag_any) != 0 ||
        vl_dnnl_md(&w_any, 4, wd, NULL, dnnl_format_tag_any) != 0 ||
        vl_dnnl_md(&b_md, 1, bd, NULL, dnnl_x) != 0 ||
        vl_dnnl_md(&dst_any, 4, dd, NULL, dnnl_format_tag_any) != 0)
        return -1;
    dnnl_primitive_desc_t fpd = NULL, wpd = NULL, dpd = NULL;
    int rc = -1;
    if (s_pd(self, g, 0, src ? vl_dnnl_md_of(src) : &src_any, &w_any, &b_md, &dst_any, NULL,
             &fpd) != 0)
        goto done;
    const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
    if (!src) {
        if (vl_dnnl_mem(self->dnnl, src0, src_md, DNNL_MEMORY_ALLOCATE) != 0)
            goto done;
        src = *src0;
    }
    p->src = src;
    if (vl_dnnl_prim(&p->fwd, fpd) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->y, dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0),
                    DNNL_MEMORY_ALLOCATE) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->dy, vl_dnnl_md_of(p->y), DNNL_MEMORY_ALLOCATE) != 0 ||
        s_act_build(self, g, p) != 0)
        goto done;
    // Backward weights in whatever layouts oneDNN likes best (with the forward's
    // own, a first conv on few channels gets only the reference implementation).
    if (s_pd(self, g, 1, &src_any, &w_any, &b_md, &dst_any, fpd, &wpd) != 0 ||
        vl_dnnl_prim(&p->bwd_w, wpd) != 0 ||
        s_bw_mem(self, wpd, dnnl_query_src_md, src, &p->src_bw, &p->src_bw_in) != 0 ||
        s_bw_mem(self, wpd, dnnl_query_diff_dst_md, p->dy, &p->dy_bw, &p->dy_bw_in) != 0 ||
        s_weights_build(self, g, p, dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0),
                        dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0)) != 0)
        goto done;
    if (bwd_data) {
        if (s_pd(self, g, 2, src_md, &w_any, NULL, vl_dnnl_md_of(p->y), fpd, &dpd) != 0 ||
            vl_dnnl_prim(&p->bwd_d, dpd) != 0 ||
            s_bw_mem(self, dpd, dnnl_query_weights_md, p->w, &p->w_bwd, &p->w_bwd_in) != 0)
            goto done;
    }
    rc = 0;
done:
    if (rc != 0)
        vl_error("vl_net: the conv layer %ldx%ldx%ld -> %ld cannot be built at batch %u",
                 (long)g->cin, (long)g->hin, (long)g->win, (long)g->cout, n);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (wpd)
        dnnl_primitive_desc_destroy(wpd);
    if (dpd)
        dnnl_primitive_desc_destroy(dpd);
    return rc;
}

/* Builds linear layer g at batch n: its output and that output's gradient
   [n][cout] and its activation on them. Its products are
   vl_matmul_linear's. */
static int s_linear_build(vl_net_t *self, const vl_net_geom_t *g, vl_net_prims_t *p, uint32_t n)
{
    dnnl_dims_t dims = {n, g->cout};
    dnnl_memory_desc_t md;
    if (vl_dnnl_md(&md, 2, dims, NULL, dnnl_nc) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->y, &md, DNNL_MEMORY_ALLOCATE) != 0 ||
        vl_dnnl_mem(self->dnnl, &p->dy, &md, DNNL_MEMORY_ALLOCATE) != 0 ||
        s_act_build(self, g, p) != 0) {
        vl_error("vl_net: the linear layer %ld -> %ld cannot be built at batch %u", (long)g->cin,
                 (long)g->cout, n);
        return -1;
    }
    return 0;
}

/* Builds image field i's input view, its conv chain and the reorders of
   its output into the features and back. */
static int s_image_build(vl_net_t *self, vl_net_set_t *set, uint32_t i)
{
    uint32_t field = self->shapes.image_field[i], nc = self->shapes.n_convs;
    const vl_net_geom_t *g0 = &self->conv[i][0], *gl = &self->conv[i][nc - 1];
    dnnl_dims_t in = {set->n, g0->cin, g0->hin, g0->win};
    dnnl_dims_t in_st = {self->obs_dim, g0->hin * g0->win, g0->win, 1};
    dnnl_dims_t out = {set->n, gl->cout, gl->hout, gl->wout};
    dnnl_dims_t out_st = {self->shapes.features, gl->hout * gl->wout, gl->wout, 1};
    dnnl_memory_desc_t in_md, out_md;
    if (vl_dnnl_md(&in_md, 4, in, in_st, dnnl_format_tag_undef) != 0 ||
        vl_dnnl_md(&out_md, 4, out, out_st, dnnl_format_tag_undef) != 0 ||
        vl_dnnl_mem(self->dnnl, &set->in_view[i], &in_md, DNNL_MEMORY_NONE) != 0)
        return -1;
    for (uint32_t j = 0; j < nc; j++)
        if (s_conv_build(self, &self->conv[i][j], &set->conv[i][j],
                         j ? set->conv[i][j - 1].y : NULL, set->n, &set->src0[i], j > 0) != 0)
            return -1;
    float *fp = set->feats_p + self->shapes.field_offset[field];
    float *dfp = set->dfeats_p + self->shapes.field_offset[field];
    const vl_net_prims_t *last = &set->conv[i][nc - 1];
    if (vl_dnnl_reorder(self->dnnl, &in_md, vl_dnnl_md_of(set->src0[i]), self->scale[field], 0,
                        &set->in_scale[i]) ||
        vl_dnnl_mem(self->dnnl, &set->feat_view[i], &out_md, fp) != 0 ||
        vl_dnnl_mem(self->dnnl, &set->dfeat_view[i], &out_md, dfp) != 0 ||
        vl_dnnl_reorder(self->dnnl, vl_dnnl_md_of(last->y), &out_md, 1.0f, 0, &set->to_feats[i]) !=
            0 ||
        vl_dnnl_reorder(self->dnnl, &out_md, vl_dnnl_md_of(last->dy), 1.0f, 0,
                        &set->from_dfeats[i]) != 0)
        return -1;
    return 0;
}

/* Builds everything batch size n needs. Returns the set, or NULL (logged). */
vl_net_set_t *vl_net_set_new(vl_net_t *self, uint32_t n)
{
    vl_net_set_t *set = calloc(1, sizeof *set);
    size_t nf = (size_t)n * self->shapes.features;
    if (!set || !(set->feats_p = calloc(nf, sizeof(float))) ||
        !(set->dfeats_p = calloc(nf, sizeof(float)))) {
        vl_error("vl_net: no memory for batch %u (%zu features)", n, nf);
        vl_net_set_destroy(&set);
        return NULL;
    }
    set->n = n;
    dnnl_dims_t fd = {n, self->shapes.features};
    dnnl_memory_desc_t f_md;
    int ok = vl_dnnl_md(&f_md, 2, fd, NULL, dnnl_nc) == 0 &&
             vl_dnnl_mem(self->dnnl, &set->feats, &f_md, set->feats_p) == 0 &&
             vl_dnnl_mem(self->dnnl, &set->dfeats, &f_md, set->dfeats_p) == 0;
    for (uint32_t i = 0; ok && i < self->shapes.n_images; i++)
        ok = s_image_build(self, set, i) == 0;
    for (uint32_t j = 0; ok && j < self->n_linears; j++)
        ok = s_linear_build(self, &self->lin[j], &set->lin[j], n) == 0;
    if (!ok) {
        vl_net_set_destroy(&set);
        return NULL;
    }
    set->last = set->feats_p, set->dlast = set->dfeats_p;
    if (self->n_linears) {
        set->last = vl_dnnl_data(set->lin[self->n_linears - 1].y);
        set->dlast = vl_dnnl_data(set->lin[self->n_linears - 1].dy);
    }
    return set;
}

/* Copies a layer's weights and bias from the parameters into its memories. */
static int s_layer_refresh(vl_net_t *self, const vl_net_geom_t *g, vl_net_prims_t *p)
{
    void *b = NULL;
    if (vl_dnnl_ok(dnnl_memory_get_data_handle(p->b, &b), "a bias's handle") != 0)
        return -1;
    memcpy(b, self->params + g->b_off, (size_t)g->cout * sizeof(float));
    if (vl_dnnl_run_reorder(self->dnnl, p->w_in, p->w_user, p->w) != 0)
        return -1;
    return vl_dnnl_run_reorder(self->dnnl, p->w_bwd_in, p->w, p->w_bwd);
}

/* Brings the set's weight copies to the parameters' version. */
int vl_net_set_refresh(vl_net_t *self, vl_net_set_t *set)
{
    if (set->version == self->version)
        return 0;
    for (uint32_t i = 0; i < self->shapes.n_images; i++)
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            if (s_layer_refresh(self, &self->conv[i][j], &set->conv[i][j]) != 0)
                return -1;
    set->version = self->version;
    return 0;
}

/* Runs a layer's forward and activation. */
static int s_layer_forward(vl_net_t *self, vl_net_prims_t *p)
{
    dnnl_exec_arg_t f[4] = {{DNNL_ARG_SRC, p->src},
                            {DNNL_ARG_WEIGHTS, p->w},
                            {DNNL_ARG_BIAS, p->b},
                            {DNNL_ARG_DST, p->y}};
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_SRC, p->y}, {DNNL_ARG_DST, p->y}};
    if (vl_dnnl_exec(self->dnnl, p->fwd, 4, f) != 0)
        return -1;
    return vl_dnnl_exec(self->dnnl, p->act, 2, a);
}

/* Runs a layer's backward: activation, weights (added into the grads by
   dw_out), and data into dsrc unless the layer has no backward data. */
static int s_layer_backward(vl_net_t *self, vl_net_prims_t *p, dnnl_memory_t dsrc)
{
    dnnl_memory_t src_bw = p->src_bw ? p->src_bw : p->src, dy_bw = p->dy_bw ? p->dy_bw : p->dy;
    dnnl_exec_arg_t a[3] = {
        {DNNL_ARG_DST, p->y}, {DNNL_ARG_DIFF_DST, p->dy}, {DNNL_ARG_DIFF_SRC, p->dy}};
    dnnl_exec_arg_t w[4] = {{DNNL_ARG_SRC, src_bw},
                            {DNNL_ARG_DIFF_DST, dy_bw},
                            {DNNL_ARG_DIFF_WEIGHTS, p->dw},
                            {DNNL_ARG_DIFF_BIAS, p->db}};
    dnnl_exec_arg_t d[3] = {{DNNL_ARG_DIFF_DST, p->dy},
                            {DNNL_ARG_WEIGHTS, p->w_bwd ? p->w_bwd : p->w},
                            {DNNL_ARG_DIFF_SRC, dsrc}};
    if (vl_dnnl_exec(self->dnnl, p->act_bwd, 3, a) != 0 ||
        vl_dnnl_run_reorder(self->dnnl, p->src_bw_in, p->src, p->src_bw) != 0 ||
        vl_dnnl_run_reorder(self->dnnl, p->dy_bw_in, p->dy, p->dy_bw) != 0 ||
        vl_dnnl_exec(self->dnnl, p->bwd_w, 4, w) ||
        vl_dnnl_run_reorder(self->dnnl, p->dw_out, p->dw, p->dw_user) != 0)
        return -1;
    return vl_dnnl_exec(self->dnnl, p->bwd_d, 3, d);
}

/* Runs linear layer j on the previous one's output (the features for the
   first) and its activation: y = x W^T + b, W and b the net's copies. */
static int s_linear_forward(vl_net_t *self, vl_net_set_t *set, uint32_t j)
{
    const vl_net_geom_t *g = &self->lin[j];
    vl_net_prims_t *p = &set->lin[j];
    const float *x = j ? vl_dnnl_data(set->lin[j - 1].y) : set->feats_p;
    dnnl_exec_arg_t act[2] = {{DNNL_ARG_SRC, p->y}, {DNNL_ARG_DST, p->y}};
    if (vl_matmul_linear(self->mm, set->n, g->cin, g->cout, x, self->weights + g->w_off,
                         self->weights + g->b_off, vl_dnnl_data(p->y)) != 0)
        return -1;
    return vl_dnnl_exec(self->dnnl, p->act, 2, act);
}

/* Runs linear layer j's backward from its output's gradient: through its
   activation, its gradients added, the gradient of its input written (the
   previous layer's output, or the features). */
static int s_linear_backward(vl_net_t *self, vl_net_set_t *set, uint32_t j)
{
    const vl_net_geom_t *g = &self->lin[j];
    vl_net_prims_t *p = &set->lin[j];
    const float *x = j ? vl_dnnl_data(set->lin[j - 1].y) : set->feats_p;
    float *dx = j ? vl_dnnl_data(set->lin[j - 1].dy) : set->dfeats_p;
    dnnl_exec_arg_t act[3] = {
        {DNNL_ARG_DST, p->y}, {DNNL_ARG_DIFF_DST, p->dy}, {DNNL_ARG_DIFF_SRC, p->dy}};
    if (vl_dnnl_exec(self->dnnl, p->act_bwd, 3, act) != 0)
        return -1;
    return vl_matmul_linear_backward(self->mm, set->n, g->cin, g->cout, x, self->weights + g->w_off,
                                     vl_dnnl_data(p->dy), self->grads + g->w_off,
                                     self->grads + g->b_off, dx, 0);
}

/* Adds a conv's diff bias into the gradients. */
static void s_bias_add(vl_net_t *self, const vl_net_geom_t *g, const vl_net_prims_t *p)
{
    void *db = NULL;
    dnnl_memory_get_data_handle(p->db, &db);
    float *grad = self->grads + g->b_off;
    for (dnnl_dim_t o = 0; o < g->cout; o++)
        grad[o] += ((const float *)db)[o];
}

/* Copies the non-image fields of n observations into the features. */
static void s_vector_fields(const vl_net_t *self, vl_net_set_t *set, const float *obs)
{
    const vl_model_shapes_t *sh = &self->shapes;
    for (uint32_t f = 0; f < self->obs.n_fields; f++) {
        if (self->obs.fields[f].ndim == 3)
            continue;
        for (uint32_t s = 0; s < set->n; s++)
            memcpy(set->feats_p + (size_t)s * sh->features + sh->field_offset[f],
                   obs + (size_t)s * self->obs_dim + self->obs_off[f],
                   sh->field_features[f] * sizeof(float));
    }
}

/* Runs the torso of set on obs, up to the last output. */
int vl_net_set_forward(vl_net_t *self, vl_net_set_t *set, const float *obs)
{
    s_vector_fields(self, set, obs);
    for (uint32_t i = 0; i < self->shapes.n_images; i++) {
        uint32_t f = self->shapes.image_field[i];
        // The reorder only reads the view: the cast is what its API takes.
        if (vl_dnnl_ok(
                dnnl_memory_set_data_handle(set->in_view[i], (float *)obs + self->obs_off[f]),
                "an image's handle") != 0)
            return -1;
        if (vl_dnnl_run_reorder(self->dnnl, set->in_scale[i], set->in_view[i], set->src0[i]) != 0)
            return -1;
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            if (s_layer_forward(self, &set->conv[i][j]) != 0)
                return -1;
        vl_net_prims_t *last = &set->conv[i][self->shapes.n_convs - 1];
        if (vl_dnnl_run_reorder(self->dnnl, set->to_feats[i], last->y, set->feat_view[i]) != 0)
            return -1;
    }
    for (uint32_t j = 0; j < self->n_linears; j++)
        if (s_linear_forward(self, set, j) != 0)
            return -1;
    if (vl_dnnl_wait(self->dnnl) != 0)
        return -1;
    return 0;
}

/* Runs the torso's backward from set->dlast, adding into the grads. */
int vl_net_set_backward(vl_net_t *self, vl_net_set_t *set)
{
    for (uint32_t j = self->n_linears; j-- > 0;)
        if (s_linear_backward(self, set, j) != 0)
            return -1;
    for (uint32_t i = 0; i < self->shapes.n_images; i++) {
        uint32_t nc = self->shapes.n_convs;
        if (vl_dnnl_run_reorder(self->dnnl, set->from_dfeats[i], set->dfeat_view[i],
                                set->conv[i][nc - 1].dy) != 0)
            return -1;
        for (uint32_t j = nc; j-- > 0;)
            if (s_layer_backward(self, &set->conv[i][j], j ? set->conv[i][j - 1].dy : NULL) != 0)
                return -1;
    }
    if (vl_dnnl_wait(self->dnnl) != 0)
        return -1;
    for (uint32_t i = 0; i < self->shapes.n_images; i++)
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            s_bias_add(self, &self->conv[i][j], &set->conv[i][j]);
    return 0;
}
