/*  vl_net: a model spec's conv torso, linear layers and two heads on
    oneDNN; see vl_net.h.

    The parameters live flat in PyTorch's layout; each batch size n gets a
    primitive set (kept for the last S_SETS sizes) holding its own copies
    of the weights in the layouts its primitives chose (format_tag_any:
    blocked, e.g. nChw16c), refreshed by a reorder at the first forward
    after vl_net_params_changed. A forward:
      obs field (a strided view, no copy) --reorder x scale--> conv src
      conv, activation, ... --reorder--> its slice of feats [n][features]
      vector fields copied into feats; linear layers on feats (nc);
      heads (pi and v, plain loops: A+1 rows) on the last output.
    A backward runs it in reverse; diff weights are reordered back to
    PyTorch's layout by reorders with a sum post-op, which add them into
    the flat gradients, and diff biases are added by a loop.

    Threads: when threads > 0 the calling thread's OpenMP thread count
    (omp_set_num_threads, a per-thread setting) is set for each call that
    builds or runs primitives and restored after it. */
#include "vl_net.h"

#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_init.h"

#define S_SETS        3           // batch sizes kept built: the learner's, the actors', one more
#define S_HIDDEN_GAIN 1.41421356f // sqrt(2) on conv and torso layers, as CleanRL's Atari PPO
#define S_PI_GAIN     0.01f       // a near-uniform initial policy
#define S_V_GAIN      1.0f
#define S_TENSORS_MAX (2 * (VL_OBS_FIELDS_MAX * VL_MODEL_LAYERS_MAX + VL_MODEL_LAYERS_MAX) + 4)

/* Logs a failed oneDNN call in one line and returns -1 from the caller. */
#define S_CHECK(call)                                                                              \
    do {                                                                                           \
        dnnl_status_t s_st_ = (call);                                                              \
        if (s_st_ != dnnl_success) {                                                               \
            vl_error("vl_net: %s failed: %s", #call, dnnl_status2str(s_st_));                      \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* One conv or linear layer's geometry, activation and tensors. */
typedef struct {
    int conv;                                   // 1: conv, 0: linear
    dnnl_alg_kind_t act;                        // eltwise after it, or dnnl_alg_kind_undef
    dnnl_dim_t cin, hin, win, cout, hout, wout; // linear: hin = win = hout = wout = 1
    dnnl_dim_t k, stride, pad;                  // conv only
    size_t w_off, b_off;                        // in the flat parameters
} s_geom_t;

/* One layer's primitives and memories for one batch size. A NULL
   optional memory means "the same as the one it would be reordered from". */
typedef struct {
    dnnl_primitive_t fwd, act, act_bwd, bwd_w, bwd_d;
    dnnl_primitive_t w_in;     // params -> w (at a refresh)
    dnnl_primitive_t w_bwd_in; // w -> w_bwd (at a refresh), when backward data wants another layout
    dnnl_primitive_t src_bw_in, dy_bw_in; // to backward weights' layouts, when they differ
    dnnl_primitive_t dw_out;              // dw -> grads, adding
    dnnl_memory_t w_user, dw_user;        // PyTorch's layout, on params and grads
    dnnl_memory_t w, w_bwd, b, y, dy, dw, db, src_bw, dy_bw;
    dnnl_memory_t src; // what the layer reads: not owned
} s_prim_t;

/* Everything built for one batch size n. */
typedef struct {
    uint32_t n;
    uint64_t version; // of the parameters its weight copies hold (0: none yet)
    uint64_t used;    // the net's clock at its last use
    s_prim_t conv[VL_OBS_FIELDS_MAX][VL_MODEL_LAYERS_MAX]; // [image][layer]
    s_prim_t lin[VL_MODEL_LAYERS_MAX];
    dnnl_memory_t in_view[VL_OBS_FIELDS_MAX]; // the image field in obs (handle set per call)
    dnnl_memory_t src0[VL_OBS_FIELDS_MAX];    // it scaled, in the first conv's layout
    dnnl_primitive_t in_scale[VL_OBS_FIELDS_MAX];
    dnnl_memory_t feat_view[VL_OBS_FIELDS_MAX], dfeat_view[VL_OBS_FIELDS_MAX];
    dnnl_primitive_t to_feats[VL_OBS_FIELDS_MAX], from_dfeats[VL_OBS_FIELDS_MAX];
    dnnl_memory_t feats, dfeats; // [n][features], on feats_p and dfeats_p
    float *feats_p, *dfeats_p;
    float *last, *dlast; // [n][width] the heads read and the gradient they write
} s_set_t;

typedef struct {
    char name[VL_TENSOR_NAME_MAX];
    uint32_t ndim, shape[VL_TENSOR_NDIM_MAX];
    size_t off, size; // in floats
} s_tensor_t;

struct vl_net_s {
    vl_obs_spec_t obs;
    vl_model_shapes_t shapes;
    uint32_t n_linears;
    s_geom_t conv[VL_OBS_FIELDS_MAX][VL_MODEL_LAYERS_MAX];
    s_geom_t lin[VL_MODEL_LAYERS_MAX];
    uint32_t obs_off[VL_OBS_FIELDS_MAX];  // where each field starts in an observation
    float scale[VL_OBS_FIELDS_MAX];       // what an image field is multiplied by
    uint32_t obs_dim, num_actions, width; // width: what the heads read
    int threads;
    uint32_t n_tensors;
    s_tensor_t tensors[S_TENSORS_MAX];
    size_t n_params, pi_w, pi_b, v_w, v_b; // offsets of the heads' tensors
    float *params, *grads;
    float *head_w, *head_b; // the heads' copies: pi's rows then v's [A+1][width], [A+1]
    uint64_t version, heads_version, clock;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    s_set_t *sets[S_SETS];
    s_set_t *fwd_set; // the last forward's set, what backward runs on
};

/* ---------------------------------------------------------------- build */

/* Returns the values of an observation field. */
static uint64_t s_field_values(const vl_obs_field_t *f)
{
    uint64_t v = 1;
    for (uint32_t d = 0; d < f->ndim; d++)
        v *= f->shape[d];
    return v;
}

/* Returns what an image field's encoding is scaled by to reach [0, 1]. */
static float s_encoding_scale(uint32_t encoding)
{
    return encoding == VL_OBS_U8 ? 1.0f / 255.0f : encoding == VL_OBS_U2 ? 1.0f / 3.0f : 1.0f;
}

/* Appends a tensor of ndim dims at the end of the parameters. */
static size_t s_add_tensor(vl_net_t *self, const char *name, uint32_t ndim, const uint32_t *dims)
{
    s_tensor_t *t = &self->tensors[self->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->size = 1;
    for (uint32_t d = 0; d < ndim; d++)
        t->shape[d] = dims[d], t->size *= dims[d];
    t->off = self->n_params;
    self->n_params += t->size;
    return t->off;
}

/* Adds a layer's weight and bias tensors named prefix.weight/.bias. */
static void s_add_layer(vl_net_t *self, s_geom_t *g, const char *prefix)
{
    char name[VL_TENSOR_NAME_MAX];
    uint32_t w[4] = {(uint32_t)g->cout, (uint32_t)g->cin, (uint32_t)g->k, (uint32_t)g->k};
    snprintf(name, sizeof name, "%s.weight", prefix);
    g->w_off = s_add_tensor(self, name, g->conv ? 4 : 2, w);
    snprintf(name, sizeof name, "%s.bias", prefix);
    g->b_off = s_add_tensor(self, name, 1, w);
}

/* Returns the eltwise kind of the spec's layer after l, or undef. */
static dnnl_alg_kind_t s_act(const vl_model_spec_t *spec, uint32_t l)
{
    if (l + 1 >= vl_model_spec_count(spec))
        return dnnl_alg_kind_undef;
    uint32_t kind = vl_model_spec_layer(spec, l + 1)->kind;
    return kind == VL_LAYER_RELU   ? dnnl_eltwise_relu_use_dst_for_bwd
           : kind == VL_LAYER_TANH ? dnnl_eltwise_tanh_use_dst_for_bwd
                                   : dnnl_alg_kind_undef;
}

/* Fills the layers' geometry and the tensor table in the header's order. */
static void s_layout(vl_net_t *self, const vl_model_spec_t *spec)
{
    const vl_model_shapes_t *sh = &self->shapes;
    char prefix[VL_TENSOR_NAME_MAX];
    for (uint32_t i = 0; i < sh->n_images; i++) {
        const vl_obs_field_t *f = &self->obs.fields[sh->image_field[i]];
        uint32_t c = f->shape[0], h = f->shape[1], w = f->shape[2], j = 0;
        for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
            const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
            if (ly->kind != VL_LAYER_CONV)
                continue;
            s_geom_t *g = &self->conv[i][j];
            *g = (s_geom_t){.conv = 1,
                            .act = s_act(spec, l),
                            .cin = c,
                            .hin = h,
                            .win = w,
                            .cout = ly->out,
                            .hout = sh->conv_out[i][j][1],
                            .wout = sh->conv_out[i][j][2],
                            .k = ly->kernel,
                            .stride = ly->stride,
                            .pad = ly->pad};
            snprintf(prefix, sizeof prefix, "conv.%u.%u", i, j);
            s_add_layer(self, g, prefix);
            c = ly->out, h = sh->conv_out[i][j][1], w = sh->conv_out[i][j][2], j++;
        }
    }
    uint32_t in = sh->features;
    for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
        const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
        if (ly->kind != VL_LAYER_LINEAR)
            continue;
        s_geom_t *g = &self->lin[self->n_linears];
        *g = (s_geom_t){.act = s_act(spec, l),
                        .cin = in,
                        .hin = 1,
                        .win = 1,
                        .cout = ly->out,
                        .hout = 1,
                        .wout = 1};
        snprintf(prefix, sizeof prefix, "torso.%u", self->n_linears++);
        s_add_layer(self, g, prefix);
        in = ly->out;
    }
    self->width = in;
    uint32_t pw[2] = {self->num_actions, in}, vw[2] = {1, in};
    self->pi_w = s_add_tensor(self, "pi.weight", 2, pw);
    self->pi_b = s_add_tensor(self, "pi.bias", 1, pw);
    self->v_w = s_add_tensor(self, "v.weight", 2, vw);
    self->v_b = s_add_tensor(self, "v.bias", 1, vw);
}

/* Refuses what this engine cannot run: an lstm, or no conv layer. */
static int s_supported(const vl_model_spec_t *spec, char *err, size_t errlen)
{
    uint32_t convs = 0;
    for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
        const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
        if (ly->kind == VL_LAYER_LSTM)
            return vl_why(err, errlen, "lstm(%u): not supported by this engine yet", ly->out);
        convs += ly->kind == VL_LAYER_CONV;
    }
    if (convs == 0)
        return vl_why(err, errlen,
                      "the spec has no conv layer: this engine runs conv torsos; expected at "
                      "least one conv(out,k,stride[,pad])");
    return 0;
}

/* Sets the calling thread's OpenMP thread count to the net's; returns the
   one to restore. */
static int s_threads_enter(const vl_net_t *self)
{
    int prev = omp_get_max_threads();
    if (self->threads > 0)
        omp_set_num_threads(self->threads);
    return prev;
}

static void s_threads_leave(const vl_net_t *self, int prev)
{
    if (self->threads > 0)
        omp_set_num_threads(prev);
}

vl_net_t *vl_net_new(const vl_model_spec_t *spec, const vl_obs_spec_t *obs, uint32_t num_actions,
                     int threads, char *err, size_t errlen)
{
    vl_model_shapes_t shapes;
    if (s_supported(spec, err, errlen) != 0 ||
        vl_model_spec_shapes(spec, obs, &shapes, err, errlen) != 0)
        return NULL;
    if (num_actions == 0 || num_actions > VL_MODEL_WIDTH_MAX) {
        vl_why(err, errlen, "%u actions; expected 1..%u", num_actions, VL_MODEL_WIDTH_MAX);
        return NULL;
    }
    vl_net_t *self = calloc(1, sizeof *self);
    if (!self) {
        vl_why(err, errlen, "no memory for the net");
        return NULL;
    }
    self->obs = *obs;
    self->shapes = shapes;
    self->num_actions = num_actions;
    self->threads = threads;
    for (uint32_t f = 0; f < obs->n_fields; f++) {
        self->obs_off[f] = self->obs_dim;
        self->obs_dim += (uint32_t)s_field_values(&obs->fields[f]);
        self->scale[f] = s_encoding_scale(obs->fields[f].encoding);
    }
    s_layout(self, spec);
    self->params = calloc(self->n_params, sizeof(float));
    self->grads = calloc(self->n_params, sizeof(float));
    self->head_w = calloc((size_t)(num_actions + 1) * self->width, sizeof(float));
    self->head_b = calloc(num_actions + 1, sizeof(float));
    if (!self->params || !self->grads || !self->head_w || !self->head_b) {
        vl_why(err, errlen, "no memory for %zu parameters", self->n_params);
        vl_net_destroy(&self);
        return NULL;
    }
    if (dnnl_engine_get_count(dnnl_cpu) == 0 ||
        dnnl_engine_create(&self->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&self->stream, self->engine, dnnl_stream_default_flags) !=
            dnnl_success) {
        vl_why(err, errlen, "no oneDNN CPU engine");
        vl_net_destroy(&self);
        return NULL;
    }
    self->version = 1;
    return self;
}

/* ------------------------------------------------------- primitive sets */

static void s_mem_free(dnnl_memory_t *m)
{
    if (*m)
        dnnl_memory_destroy(*m);
    *m = NULL;
}

static void s_prim_free(dnnl_primitive_t *p)
{
    if (*p)
        dnnl_primitive_destroy(*p);
    *p = NULL;
}

static void s_layer_free(s_prim_t *p)
{
    dnnl_primitive_t *prims[] = {&p->fwd,  &p->act,      &p->act_bwd,   &p->bwd_w,    &p->bwd_d,
                                 &p->w_in, &p->w_bwd_in, &p->src_bw_in, &p->dy_bw_in, &p->dw_out};
    dnnl_memory_t *mems[] = {&p->w_user, &p->dw_user, &p->w,  &p->w_bwd,  &p->b,    &p->y,
                             &p->dy,     &p->dw,      &p->db, &p->src_bw, &p->dy_bw};
    for (size_t k = 0; k < sizeof prims / sizeof prims[0]; k++)
        s_prim_free(prims[k]);
    for (size_t k = 0; k < sizeof mems / sizeof mems[0]; k++)
        s_mem_free(mems[k]);
}

static void s_set_destroy(s_set_t **set_p)
{
    s_set_t *set = *set_p;
    if (!set)
        return;
    for (uint32_t i = 0; i < VL_OBS_FIELDS_MAX; i++) {
        for (uint32_t j = 0; j < VL_MODEL_LAYERS_MAX; j++)
            s_layer_free(&set->conv[i][j]);
        s_mem_free(&set->in_view[i]);
        s_mem_free(&set->src0[i]);
        s_mem_free(&set->feat_view[i]);
        s_mem_free(&set->dfeat_view[i]);
        s_prim_free(&set->in_scale[i]);
        s_prim_free(&set->to_feats[i]);
        s_prim_free(&set->from_dfeats[i]);
    }
    for (uint32_t j = 0; j < VL_MODEL_LAYERS_MAX; j++)
        s_layer_free(&set->lin[j]);
    s_mem_free(&set->feats);
    s_mem_free(&set->dfeats);
    free(set->feats_p);
    free(set->dfeats_p);
    free(set);
    *set_p = NULL;
}

/* Logs a failed oneDNN step in one line; returns -1 on failure, else 0. */
static int s_ok(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success)
        return 0;
    vl_error("vl_net: %s failed: %s", what, dnnl_status2str(st));
    return -1;
}

/* Creates *prim from pd. Returns 0, or -1 (logged). */
static int s_prim(dnnl_primitive_t *prim, const_dnnl_primitive_desc_t pd)
{
    return s_ok(dnnl_primitive_create(prim, pd), "dnnl_primitive_create");
}

/* Creates *mem of md on handle (NULL: oneDNN allocates it). */
static int s_mem(vl_net_t *self, dnnl_memory_t *mem, const dnnl_memory_desc_t *md, void *handle)
{
    S_CHECK(dnnl_memory_create(mem, md, self->engine, handle ? handle : DNNL_MEMORY_ALLOCATE));
    return 0;
}

/* Creates a reorder from -> to into *prim, scaling by scale, or adding
   into to's contents when add is not 0. */
static int s_reorder(vl_net_t *self, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                     float scale, int add, dnnl_primitive_t *prim)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success && scale != 1.0f)
        st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
    if (st == dnnl_success && add) {
        st = dnnl_post_ops_create(&po);
        if (st == dnnl_success)
            st = dnnl_post_ops_append_sum(po, 1.0f);
        if (st == dnnl_success)
            st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success)
        st = dnnl_reorder_primitive_desc_create(&pd, from, self->engine, to, self->engine, attr);
    if (st == dnnl_success)
        st = dnnl_primitive_create(prim, pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s_ok(st, "a reorder's creation");
}

/* Returns the md of mem. */
static const dnnl_memory_desc_t *s_md(dnnl_memory_t mem)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(mem, &md);
    return md;
}

/* Initializes md as a plain f32 tensor of nd dims with tag (or any). */
static int s_md_init(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, dnnl_format_tag_t tag)
{
    S_CHECK(dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, tag));
    return 0;
}

/* Makes g's op descriptor: kind 0 forward, 1 backward weights, 2 backward
   data, in cd or id. Returns 0, or -1 (logged). */
static int s_op(const s_geom_t *g, int kind, dnnl_convolution_desc_t *cd,
                dnnl_inner_product_desc_t *id, const dnnl_memory_desc_t *src,
                const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *b,
                const dnnl_memory_desc_t *dst)
{
    dnnl_dims_t st = {g->stride, g->stride}, pad = {g->pad, g->pad};
    dnnl_alg_kind_t alg = dnnl_convolution_direct;
    if (g->conv && kind == 0)
        S_CHECK(dnnl_convolution_forward_desc_init(cd, dnnl_forward_training, alg, src, w, b, dst,
                                                   st, pad, pad));
    else if (g->conv && kind == 1)
        S_CHECK(dnnl_convolution_backward_weights_desc_init(cd, alg, src, w, b, dst, st, pad, pad));
    else if (g->conv)
        S_CHECK(dnnl_convolution_backward_data_desc_init(cd, alg, src, w, dst, st, pad, pad));
    else if (kind == 0)
        S_CHECK(dnnl_inner_product_forward_desc_init(id, dnnl_forward_training, src, w, b, dst));
    else if (kind == 1)
        S_CHECK(dnnl_inner_product_backward_weights_desc_init(id, src, w, b, dst));
    else
        S_CHECK(dnnl_inner_product_backward_data_desc_init(id, src, w, dst));
    return 0;
}

/* Creates *pd for g's op of kind with the given mds and hint. */
static int s_pd(vl_net_t *self, const s_geom_t *g, int kind, const dnnl_memory_desc_t *src,
                const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *b,
                const dnnl_memory_desc_t *dst, const_dnnl_primitive_desc_t hint,
                dnnl_primitive_desc_t *pd)
{
    dnnl_convolution_desc_t cd;
    dnnl_inner_product_desc_t id;
    if (s_op(g, kind, &cd, &id, src, w, b, dst) != 0)
        return -1;
    const void *op = g->conv ? (const void *)&cd : (const void *)&id;
    S_CHECK(dnnl_primitive_desc_create(pd, op, NULL, self->engine, hint));
    return 0;
}

/* Points *mem at a new memory of what pd wants for `what` when it differs
   from have's layout, with *reorder filling it from have; else leaves both
   NULL (have is used as it is). */
static int s_bw_mem(vl_net_t *self, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
                    dnnl_memory_t have, dnnl_memory_t *mem, dnnl_primitive_t *reorder)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, what, 0);
    if (dnnl_memory_desc_equal(want, s_md(have)))
        return 0;
    if (s_mem(self, mem, want, NULL) != 0)
        return -1;
    return s_reorder(self, s_md(have), want, 1.0f, 0, reorder);
}

/* Creates the eltwise forward and backward (on dst) of g's activation. */
static int s_act_build(vl_net_t *self, const s_geom_t *g, s_prim_t *p)
{
    if (g->act == dnnl_alg_kind_undef)
        return 0;
    const dnnl_memory_desc_t *y = s_md(p->y);
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t fpd, bpd;
    S_CHECK(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training, g->act, y, 0, 0));
    S_CHECK(dnnl_primitive_desc_create(&fpd, &ed, NULL, self->engine, NULL));
    dnnl_status_t st = dnnl_primitive_create(&p->act, fpd);
    if (st == dnnl_success)
        st = dnnl_eltwise_backward_desc_init(&ed, g->act, y, y, 0, 0);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&bpd, &ed, NULL, self->engine, fpd);
    dnnl_primitive_desc_destroy(fpd);
    if (s_ok(st, "an eltwise primitive's creation") != 0)
        return -1;
    st = dnnl_primitive_create(&p->act_bwd, bpd);
    dnnl_primitive_desc_destroy(bpd);
    return s_ok(st, "an eltwise backward's creation");
}

/* Creates g's weight and bias memories (the chosen layout w_md, and
   PyTorch's on params and grads) and the reorders between them. */
static int s_weights_build(vl_net_t *self, const s_geom_t *g, s_prim_t *p,
                           const dnnl_memory_desc_t *w_md, const dnnl_memory_desc_t *dw_md)
{
    dnnl_dims_t wd = {g->cout, g->cin, g->k, g->k}, bd = {g->cout};
    dnnl_memory_desc_t w_u, b_md;
    if (s_md_init(&w_u, g->conv ? 4 : 2, wd, g->conv ? dnnl_oihw : dnnl_oi) != 0 ||
        s_md_init(&b_md, 1, bd, dnnl_x) != 0 || s_mem(self, &p->w, w_md, NULL) != 0 ||
        s_mem(self, &p->w_user, &w_u, self->params + g->w_off) != 0 ||
        s_mem(self, &p->dw, dw_md, NULL) != 0 ||
        s_mem(self, &p->dw_user, &w_u, self->grads + g->w_off) != 0 ||
        s_mem(self, &p->b, &b_md, NULL) != 0 || s_mem(self, &p->db, &b_md, NULL) != 0)
        return -1;
    if (s_reorder(self, &w_u, w_md, 1.0f, 0, &p->w_in) != 0 ||
        s_reorder(self, dw_md, &w_u, 1.0f, 1, &p->dw_out) != 0)
        return -1;
    return 0;
}

/* Builds layer g on src (a concrete md, or NULL for the first conv, which
   then picks its own and creates *src0 with it): forward with its
   activation, backward weights, and backward data unless bwd_data is 0.
   dst_tag is the output's layout (any for convs). */
static int s_layer_build(vl_net_t *self, const s_geom_t *g, s_prim_t *p, dnnl_memory_t src,
                         uint32_t n, dnnl_memory_t *src0, int bwd_data)
{
    int nd = g->conv ? 4 : 2;
    dnnl_dims_t sd = {n, g->cin, g->hin, g->win}, wd = {g->cout, g->cin, g->k, g->k};
    dnnl_dims_t bd = {g->cout}, dd = {n, g->cout, g->hout, g->wout};
    dnnl_memory_desc_t src_any, w_any, b_md, dst_md, dst_any;
    if (s_md_init(&src_any, nd, sd, dnnl_format_tag_any) != 0 ||
        s_md_init(&w_any, nd, wd, dnnl_format_tag_any) != 0 ||
        s_md_init(&b_md, 1, bd, dnnl_x) != 0 ||
        s_md_init(&dst_md, nd, dd, g->conv ? dnnl_format_tag_any : dnnl_nc) != 0 ||
        s_md_init(&dst_any, nd, dd, dnnl_format_tag_any) != 0)
        return -1;
    dnnl_primitive_desc_t fpd = NULL, wpd = NULL, dpd = NULL;
    int rc = -1;
    if (s_pd(self, g, 0, src ? s_md(src) : &src_any, &w_any, &b_md, &dst_md, NULL, &fpd) != 0)
        goto done;
    const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
    if (!src) {
        if (s_mem(self, src0, src_md, NULL) != 0)
            goto done;
        src = *src0;
    }
    p->src = src;
    if (s_prim(&p->fwd, fpd) != 0 ||
        s_mem(self, &p->y, dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0), NULL) != 0 ||
        s_mem(self, &p->dy, s_md(p->y), NULL) != 0 || s_act_build(self, g, p) != 0)
        goto done;
    // Backward weights in whatever layouts oneDNN likes best (with the forward's
    // own, a first conv on few channels gets only the reference implementation).
    if (s_pd(self, g, 1, &src_any, &w_any, &b_md, &dst_any, fpd, &wpd) != 0 ||
        s_prim(&p->bwd_w, wpd) != 0 ||
        s_bw_mem(self, wpd, dnnl_query_src_md, src, &p->src_bw, &p->src_bw_in) != 0 ||
        s_bw_mem(self, wpd, dnnl_query_diff_dst_md, p->dy, &p->dy_bw, &p->dy_bw_in) != 0 ||
        s_weights_build(self, g, p, dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0),
                        dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0)) != 0)
        goto done;
    if (bwd_data) {
        if (s_pd(self, g, 2, src_md, &w_any, NULL, s_md(p->y), fpd, &dpd) != 0 ||
            s_prim(&p->bwd_d, dpd) != 0 ||
            s_bw_mem(self, dpd, dnnl_query_weights_md, p->w, &p->w_bwd, &p->w_bwd_in) != 0)
            goto done;
    }
    rc = 0;
done:
    if (rc != 0)
        vl_error("vl_net: the %s layer %ldx%ldx%ld -> %ld cannot be built at batch %u",
                 g->conv ? "conv" : "linear", (long)g->cin, (long)g->hin, (long)g->win,
                 (long)g->cout, n);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (wpd)
        dnnl_primitive_desc_destroy(wpd);
    if (dpd)
        dnnl_primitive_desc_destroy(dpd);
    return rc;
}

/* Builds image field i's input view, its conv chain and the reorders of
   its output into the features and back. */
static int s_image_build(vl_net_t *self, s_set_t *set, uint32_t i)
{
    uint32_t field = self->shapes.image_field[i], nc = self->shapes.n_convs;
    const s_geom_t *g0 = &self->conv[i][0], *gl = &self->conv[i][nc - 1];
    dnnl_dims_t in = {set->n, g0->cin, g0->hin, g0->win};
    dnnl_dims_t in_st = {self->obs_dim, g0->hin * g0->win, g0->win, 1};
    dnnl_dims_t out = {set->n, gl->cout, gl->hout, gl->wout};
    dnnl_dims_t out_st = {self->shapes.features, gl->hout * gl->wout, gl->wout, 1};
    dnnl_memory_desc_t in_md, out_md;
    S_CHECK(dnnl_memory_desc_init_by_strides(&in_md, 4, in, dnnl_f32, in_st));
    S_CHECK(dnnl_memory_desc_init_by_strides(&out_md, 4, out, dnnl_f32, out_st));
    S_CHECK(dnnl_memory_create(&set->in_view[i], &in_md, self->engine, DNNL_MEMORY_NONE));
    for (uint32_t j = 0; j < nc; j++)
        if (s_layer_build(self, &self->conv[i][j], &set->conv[i][j],
                          j ? set->conv[i][j - 1].y : NULL, set->n, &set->src0[i], j > 0) != 0)
            return -1;
    float *fp = set->feats_p + self->shapes.field_offset[field];
    float *dfp = set->dfeats_p + self->shapes.field_offset[field];
    const s_prim_t *last = &set->conv[i][nc - 1];
    if (s_reorder(self, &in_md, s_md(set->src0[i]), self->scale[field], 0, &set->in_scale[i]) ||
        s_mem(self, &set->feat_view[i], &out_md, fp) != 0 ||
        s_mem(self, &set->dfeat_view[i], &out_md, dfp) != 0 ||
        s_reorder(self, s_md(last->y), &out_md, 1.0f, 0, &set->to_feats[i]) != 0 ||
        s_reorder(self, &out_md, s_md(last->dy), 1.0f, 0, &set->from_dfeats[i]) != 0)
        return -1;
    return 0;
}

/* Builds everything batch size n needs. Returns the set, or NULL (logged). */
static s_set_t *s_set_new(vl_net_t *self, uint32_t n)
{
    s_set_t *set = calloc(1, sizeof *set);
    size_t nf = (size_t)n * self->shapes.features;
    if (!set || !(set->feats_p = calloc(nf, sizeof(float))) ||
        !(set->dfeats_p = calloc(nf, sizeof(float)))) {
        vl_error("vl_net: no memory for batch %u (%zu features)", n, nf);
        s_set_destroy(&set);
        return NULL;
    }
    set->n = n;
    dnnl_dims_t fd = {n, self->shapes.features};
    dnnl_memory_desc_t f_md;
    int ok = s_md_init(&f_md, 2, fd, dnnl_nc) == 0 &&
             s_mem(self, &set->feats, &f_md, set->feats_p) == 0 &&
             s_mem(self, &set->dfeats, &f_md, set->dfeats_p) == 0;
    for (uint32_t i = 0; ok && i < self->shapes.n_images; i++)
        ok = s_image_build(self, set, i) == 0;
    for (uint32_t j = 0; ok && j < self->n_linears; j++)
        ok = s_layer_build(self, &self->lin[j], &set->lin[j], j ? set->lin[j - 1].y : set->feats, n,
                           NULL, 1) == 0;
    if (!ok) {
        s_set_destroy(&set);
        return NULL;
    }
    set->last = set->feats_p, set->dlast = set->dfeats_p;
    if (self->n_linears) {
        void *y = NULL, *dy = NULL;
        dnnl_memory_get_data_handle(set->lin[self->n_linears - 1].y, &y);
        dnnl_memory_get_data_handle(set->lin[self->n_linears - 1].dy, &dy);
        set->last = y, set->dlast = dy;
    }
    return set;
}

/* Returns the set for batch size n, built now if it is not kept (the least
   recently used one making room), or NULL (logged). */
static s_set_t *s_set_for(vl_net_t *self, uint32_t n)
{
    uint32_t victim = 0;
    for (uint32_t k = 0; k < S_SETS; k++) {
        s_set_t *set = self->sets[k];
        if (set && set->n == n) {
            set->used = ++self->clock;
            return set;
        }
        if (!set || (self->sets[victim] && set->used < self->sets[victim]->used))
            victim = k;
    }
    if (self->sets[victim] == self->fwd_set)
        self->fwd_set = NULL;
    s_set_destroy(&self->sets[victim]);
    self->sets[victim] = s_set_new(self, n);
    if (self->sets[victim])
        self->sets[victim]->used = ++self->clock;
    return self->sets[victim];
}

/* --------------------------------------------------------------- running */

/* Executes prim (when it exists) with n (arg, memory) pairs. */
static int s_exec(vl_net_t *self, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args)
{
    if (prim)
        S_CHECK(dnnl_primitive_execute(prim, self->stream, n, args));
    return 0;
}

/* Runs reorder prim from -> to, when it exists. */
static int s_run_reorder(vl_net_t *self, dnnl_primitive_t prim, dnnl_memory_t from,
                         dnnl_memory_t to)
{
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return s_exec(self, prim, 2, a);
}

/* Copies a layer's weights and bias from the parameters into its memories. */
static int s_layer_refresh(vl_net_t *self, const s_geom_t *g, s_prim_t *p)
{
    void *b = NULL;
    S_CHECK(dnnl_memory_get_data_handle(p->b, &b));
    memcpy(b, self->params + g->b_off, (size_t)g->cout * sizeof(float));
    if (s_run_reorder(self, p->w_in, p->w_user, p->w) != 0)
        return -1;
    return s_run_reorder(self, p->w_bwd_in, p->w, p->w_bwd);
}

/* Brings the set's weight copies (and the heads') to the parameters' version. */
static int s_refresh(vl_net_t *self, s_set_t *set)
{
    if (self->heads_version != self->version) {
        size_t a = self->num_actions, w = self->width;
        memcpy(self->head_w, self->params + self->pi_w, a * w * sizeof(float));
        memcpy(self->head_w + a * w, self->params + self->v_w, w * sizeof(float));
        memcpy(self->head_b, self->params + self->pi_b, a * sizeof(float));
        self->head_b[a] = self->params[self->v_b];
        self->heads_version = self->version;
    }
    if (set->version == self->version)
        return 0;
    for (uint32_t i = 0; i < self->shapes.n_images; i++)
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            if (s_layer_refresh(self, &self->conv[i][j], &set->conv[i][j]) != 0)
                return -1;
    for (uint32_t j = 0; j < self->n_linears; j++)
        if (s_layer_refresh(self, &self->lin[j], &set->lin[j]) != 0)
            return -1;
    set->version = self->version;
    return 0;
}

/* Runs a layer's forward and activation. */
static int s_layer_forward(vl_net_t *self, s_prim_t *p)
{
    dnnl_exec_arg_t f[4] = {{DNNL_ARG_SRC, p->src},
                            {DNNL_ARG_WEIGHTS, p->w},
                            {DNNL_ARG_BIAS, p->b},
                            {DNNL_ARG_DST, p->y}};
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_SRC, p->y}, {DNNL_ARG_DST, p->y}};
    if (s_exec(self, p->fwd, 4, f) != 0)
        return -1;
    return s_exec(self, p->act, 2, a);
}

/* Runs a layer's backward: activation, weights (added into the grads by
   dw_out), and data into dsrc unless the layer has no backward data. */
static int s_layer_backward(vl_net_t *self, s_prim_t *p, dnnl_memory_t dsrc)
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
    if (s_exec(self, p->act_bwd, 3, a) != 0 ||
        s_run_reorder(self, p->src_bw_in, p->src, p->src_bw) != 0 ||
        s_run_reorder(self, p->dy_bw_in, p->dy, p->dy_bw) != 0 || s_exec(self, p->bwd_w, 4, w) ||
        s_run_reorder(self, p->dw_out, p->dw, p->dw_user) != 0)
        return -1;
    return s_exec(self, p->bwd_d, 3, d);
}

/* Adds a layer's diff bias into the gradients. */
static void s_bias_add(vl_net_t *self, const s_geom_t *g, const s_prim_t *p)
{
    void *db = NULL;
    dnnl_memory_get_data_handle(p->db, &db);
    float *grad = self->grads + g->b_off;
    for (dnnl_dim_t o = 0; o < g->cout; o++)
        grad[o] += ((const float *)db)[o];
}

/* Returns the dot product of a and b over n, in four sums (vectorizable). */
static float s_dot(const float *a, const float *b, uint32_t n)
{
    float s[4] = {0, 0, 0, 0};
    uint32_t k = 0;
    for (; k + 4 <= n; k += 4)
        for (uint32_t u = 0; u < 4; u++)
            s[u] += a[k + u] * b[k + u];
    for (; k < n; k++)
        s[0] += a[k] * b[k];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* The heads over the last output: logits and values. */
static void s_heads_forward(const vl_net_t *self, const s_set_t *set, float *logits, float *values)
{
    uint32_t a_n = self->num_actions, w = self->width;
    for (uint32_t s = 0; s < set->n; s++) {
        const float *h = set->last + (size_t)s * w;
        for (uint32_t a = 0; a <= a_n; a++) {
            float z = self->head_b[a] + s_dot(self->head_w + (size_t)a * w, h, w);
            if (a < a_n && logits)
                logits[(size_t)s * a_n + a] = z;
            else if (a == a_n && values)
                values[s] = z;
        }
    }
}

/* The heads' backward: their grads added, the last output's written. */
static void s_heads_backward(vl_net_t *self, const s_set_t *set, const float *dlogits,
                             const float *dvalues)
{
    uint32_t a_n = self->num_actions, w = self->width;
    memset(set->dlast, 0, (size_t)set->n * w * sizeof(float));
    for (uint32_t s = 0; s < set->n; s++) {
        const float *h = set->last + (size_t)s * w;
        float *dh = set->dlast + (size_t)s * w;
        for (uint32_t a = 0; a <= a_n; a++) {
            float g = a < a_n ? (dlogits ? dlogits[(size_t)s * a_n + a] : 0.0f)
                              : (dvalues ? dvalues[s] : 0.0f);
            if (g == 0.0f)
                continue;
            const float *hw = self->head_w + (size_t)a * w;
            float *gw = self->grads + (a < a_n ? self->pi_w + (size_t)a * w : self->v_w);
            for (uint32_t k = 0; k < w; k++)
                dh[k] += g * hw[k], gw[k] += g * h[k];
            self->grads[a < a_n ? self->pi_b + a : self->v_b] += g;
        }
    }
}

/* Copies the non-image fields of n observations into the features. */
static void s_vector_fields(const vl_net_t *self, s_set_t *set, const float *obs)
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
static int s_torso_forward(vl_net_t *self, s_set_t *set, const float *obs)
{
    s_vector_fields(self, set, obs);
    for (uint32_t i = 0; i < self->shapes.n_images; i++) {
        uint32_t f = self->shapes.image_field[i];
        // The reorder only reads the view: the cast is what its API takes.
        S_CHECK(dnnl_memory_set_data_handle(set->in_view[i], (float *)obs + self->obs_off[f]));
        if (s_run_reorder(self, set->in_scale[i], set->in_view[i], set->src0[i]) != 0)
            return -1;
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            if (s_layer_forward(self, &set->conv[i][j]) != 0)
                return -1;
        s_prim_t *last = &set->conv[i][self->shapes.n_convs - 1];
        if (s_run_reorder(self, set->to_feats[i], last->y, set->feat_view[i]) != 0)
            return -1;
    }
    for (uint32_t j = 0; j < self->n_linears; j++)
        if (s_layer_forward(self, &set->lin[j]) != 0)
            return -1;
    S_CHECK(dnnl_stream_wait(self->stream));
    return 0;
}

int vl_net_forward(vl_net_t *self, uint32_t n, const float *obs, float *logits, float *values)
{
    self->fwd_set = NULL;
    if (n == 0)
        return 0;
    int prev = s_threads_enter(self), rc = -1;
    s_set_t *set = s_set_for(self, n);
    if (set && s_refresh(self, set) == 0 && s_torso_forward(self, set, obs) == 0) {
        s_heads_forward(self, set, logits, values);
        self->fwd_set = set;
        rc = 0;
    }
    s_threads_leave(self, prev);
    return rc;
}

/* Runs the torso's backward from set->dlast, adding into the grads. */
static int s_torso_backward(vl_net_t *self, s_set_t *set)
{
    for (uint32_t j = self->n_linears; j-- > 0;)
        if (s_layer_backward(self, &set->lin[j], j ? set->lin[j - 1].dy : set->dfeats) != 0)
            return -1;
    for (uint32_t i = 0; i < self->shapes.n_images; i++) {
        uint32_t nc = self->shapes.n_convs;
        if (s_run_reorder(self, set->from_dfeats[i], set->dfeat_view[i], set->conv[i][nc - 1].dy) !=
            0)
            return -1;
        for (uint32_t j = nc; j-- > 0;)
            if (s_layer_backward(self, &set->conv[i][j], j ? set->conv[i][j - 1].dy : NULL) != 0)
                return -1;
    }
    S_CHECK(dnnl_stream_wait(self->stream));
    for (uint32_t i = 0; i < self->shapes.n_images; i++)
        for (uint32_t j = 0; j < self->shapes.n_convs; j++)
            s_bias_add(self, &self->conv[i][j], &set->conv[i][j]);
    for (uint32_t j = 0; j < self->n_linears; j++)
        s_bias_add(self, &self->lin[j], &set->lin[j]);
    return 0;
}

int vl_net_backward(vl_net_t *self, uint32_t n, const float *dlogits, const float *dvalues)
{
    if (n == 0)
        return 0;
    s_set_t *set = self->fwd_set;
    if (!set || set->n != n) {
        vl_error("vl_net: backward over %u observations; the last forward was over %u", n,
                 set ? set->n : 0);
        return -1;
    }
    int prev = s_threads_enter(self);
    s_heads_backward(self, set, dlogits, dvalues);
    int rc = s_torso_backward(self, set);
    s_threads_leave(self, prev);
    return rc;
}

/* ------------------------------------------------------------ accessors */

void vl_net_destroy(vl_net_t **self_p)
{
    vl_net_t *self = *self_p;
    if (!self)
        return;
    for (uint32_t k = 0; k < S_SETS; k++)
        s_set_destroy(&self->sets[k]);
    if (self->stream)
        dnnl_stream_destroy(self->stream);
    if (self->engine)
        dnnl_engine_destroy(self->engine);
    free(self->params);
    free(self->grads);
    free(self->head_w);
    free(self->head_b);
    free(self);
    *self_p = NULL;
}

int vl_net_init(vl_net_t *self, vl_rng_t *rng)
{
    size_t most = 0;
    for (uint32_t i = 0; i < self->n_tensors; i++)
        most = self->tensors[i].size > most ? self->tensors[i].size : most;
    double *q = malloc(most * sizeof(double));
    if (!q)
        return -1;
    for (uint32_t i = 0; i < self->n_tensors; i++) {
        const s_tensor_t *t = &self->tensors[i];
        float *w = self->params + t->off;
        if (t->ndim == 1) {
            memset(w, 0, t->size * sizeof(float));
            continue;
        }
        float gain = strncmp(t->name, "pi.", 3) == 0  ? S_PI_GAIN
                     : strncmp(t->name, "v.", 2) == 0 ? S_V_GAIN
                                                      : S_HIDDEN_GAIN;
        vl_orthogonal(w, t->shape[0], (uint32_t)(t->size / t->shape[0]), gain, q, rng);
    }
    free(q);
    vl_net_params_changed(self);
    return 0;
}

uint32_t vl_net_obs_dim(const vl_net_t *self)
{
    return self->obs_dim;
}

size_t vl_net_param_count(const vl_net_t *self)
{
    return self->n_params;
}

float *vl_net_params(vl_net_t *self)
{
    return self->params;
}

void vl_net_params_changed(vl_net_t *self)
{
    self->version++;
}

float *vl_net_grads(vl_net_t *self)
{
    return self->grads;
}

void vl_net_zero_grad(vl_net_t *self)
{
    memset(self->grads, 0, self->n_params * sizeof(float));
}

uint32_t vl_net_tensor_count(const vl_net_t *self)
{
    return self->n_tensors;
}

void vl_net_tensor(vl_net_t *self, uint32_t i, int grads, vl_tensor_t *t)
{
    const s_tensor_t *s = &self->tensors[i];
    memset(t, 0, sizeof *t);
    memcpy(t->name, s->name, sizeof t->name);
    t->ndim = s->ndim;
    t->rows = s->shape[0];
    t->cols = (uint32_t)(s->size / s->shape[0]);
    for (uint32_t d = 0; s->ndim >= 3 && d < s->ndim; d++) // ranks 1, 2: rows x cols alone
        t->shape[d] = s->shape[d];
    t->data = (grads ? self->grads : self->params) + s->off;
}
