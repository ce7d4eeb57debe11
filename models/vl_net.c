/*  vl_net: a model spec's conv torso, linear layers and two heads on
    oneDNN; see vl_net.h.

    The parameters live flat in PyTorch's layout. Each batch size n gets a
    primitive set (vl_net_set.h; the last VL_NET_SETS sizes are kept) with
    its own copies of the weights in the layouts its primitives chose,
    refreshed at the first forward after vl_net_params_changed. The heads
    (pi and v), like the torso's linear layers, are vl_matmul_linear over a
    copy of the parameters refreshed the same way.

    Threads: when threads > 0 the calling thread's OpenMP thread count
    (omp_set_num_threads, a per-thread setting) is set for each call that
    builds or runs primitives and restored after it. */
#include "vl_net.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_init.h"
#include "vl_net_set.h"

#define S_HIDDEN_GAIN 1.41421356f // sqrt(2) on conv and torso layers, as CleanRL's Atari PPO
#define S_PI_GAIN     0.01f       // a near-uniform initial policy
#define S_V_GAIN      1.0f

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
    vl_net_tensor_info_t *t = &self->tensors[self->n_tensors++];
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
static void s_add_layer(vl_net_t *self, vl_net_geom_t *g, const char *prefix)
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
            vl_net_geom_t *g = &self->conv[i][j];
            *g = (vl_net_geom_t){.conv = 1,
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
        vl_net_geom_t *g = &self->lin[self->n_linears];
        *g = (vl_net_geom_t){.act = s_act(spec, l),
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
    if (!self->num_actions) // a torso alone: the caller's layers read its features
        return;
    uint32_t pw[2] = {self->num_actions, in}, vw[2] = {1, in};
    self->pi_w = s_add_tensor(self, "pi.weight", 2, pw);
    self->pi_b = s_add_tensor(self, "pi.bias", 1, pw);
    self->v_w = s_add_tensor(self, "v.weight", 2, vw);
    self->v_b = s_add_tensor(self, "v.bias", 1, vw);
}

/* Refuses what this engine cannot run: an lstm (but for a torso alone,
   which stops before it), or no conv layer. */
static int s_supported(const vl_model_spec_t *spec, int torso, char *err, size_t errlen)
{
    uint32_t convs = 0;
    for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
        const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
        if (ly->kind == VL_LAYER_LSTM && !torso)
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
    if (s_supported(spec, num_actions == 0, err, errlen) != 0 ||
        vl_model_spec_shapes(spec, obs, &shapes, err, errlen) != 0)
        return NULL;
    if (num_actions > VL_MODEL_WIDTH_MAX) {
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
    self->weights = calloc(self->n_params, sizeof(float));
    if (!self->params || !self->grads || !self->weights) {
        vl_why(err, errlen, "no memory for %zu parameters", self->n_params);
        vl_net_destroy(&self);
        return NULL;
    }
    if (!(self->dnnl = vl_dnnl_new()) || !(self->mm = vl_matmul_new_on(self->dnnl))) {
        vl_why(err, errlen, "no oneDNN CPU engine");
        vl_net_destroy(&self);
        return NULL;
    }
    self->version = 1;
    return self;
}

/* ---------------------------------------------------------------- sets */

/* Returns the set for batch size n, built now if it is not kept (the least
   recently used one making room), or NULL (logged). */
static vl_net_set_t *s_set_for(vl_net_t *self, uint32_t n)
{
    uint32_t victim = 0;
    for (uint32_t k = 0; k < VL_NET_SETS; k++) {
        vl_net_set_t *set = self->sets[k];
        if (set && set->n == n) {
            set->used = ++self->clock;
            return set;
        }
        if (!set || (self->sets[victim] && set->used < self->sets[victim]->used))
            victim = k;
    }
    if (self->sets[victim] == self->fwd_set)
        self->fwd_set = NULL;
    vl_net_set_destroy(&self->sets[victim]);
    self->sets[victim] = vl_net_set_new(self, n);
    if (self->sets[victim])
        self->sets[victim]->used = ++self->clock;
    return self->sets[victim];
}

/* --------------------------------------------------------------- running */

/* Brings the copy of the parameters the linear layers and heads read to
   the parameters' version. They are the layout's tail, after the convs,
   whose weights the sets reorder from the parameters themselves. */
static void s_weights_refresh(vl_net_t *self)
{
    if (self->weights_version == self->version)
        return;
    size_t from = self->n_linears     ? self->lin[0].w_off
                  : self->num_actions ? self->pi_w
                                      : self->n_params;
    memcpy(self->weights + from, self->params + from, (self->n_params - from) * sizeof(float));
    self->weights_version = self->version;
}

/* The heads over the last output: logits and values, either skipped when
   NULL. */
static int s_heads_forward(vl_net_t *self, const vl_net_set_t *set, float *logits, float *values)
{
    int64_t n = set->n, a = self->num_actions, w = self->width;
    const float *p = self->weights;
    if (logits &&
        vl_matmul_linear(self->mm, n, w, a, set->last, p + self->pi_w, p + self->pi_b, logits))
        return -1;
    return values ? vl_matmul_linear(self->mm, n, w, 1, set->last, p + self->v_w, p + self->v_b,
                                     values)
                  : 0;
}

/* The heads' backward: their grads added, the last output's written. */
static int s_heads_backward(vl_net_t *self, const vl_net_set_t *set, const float *dlogits,
                            const float *dvalues)
{
    int64_t n = set->n, a = self->num_actions, w = self->width;
    const float *p = self->weights;
    float *g = self->grads;
    if (!dlogits && !dvalues)
        memset(set->dlast, 0, (size_t)(n * w) * sizeof(float));
    if (dlogits && vl_matmul_linear_backward(self->mm, n, w, a, set->last, p + self->pi_w, dlogits,
                                             g + self->pi_w, g + self->pi_b, set->dlast, 0) != 0)
        return -1;
    return dvalues ? vl_matmul_linear_backward(self->mm, n, w, 1, set->last, p + self->v_w, dvalues,
                                               g + self->v_w, g + self->v_b, set->dlast,
                                               dlogits != NULL)
                   : 0;
}

/* Runs the torso on n observations, on the set of batch n with weights of
   the parameters' version. Returns the set, or NULL (logged). */
static vl_net_set_t *s_torso_forward(vl_net_t *self, uint32_t n, const float *obs)
{
    vl_net_set_t *set = s_set_for(self, n);
    s_weights_refresh(self);
    if (!set || vl_net_set_refresh(self, set) != 0 || vl_net_set_forward(self, set, obs) != 0)
        return NULL;
    return set;
}

int vl_net_forward(vl_net_t *self, uint32_t n, const float *obs, float *logits, float *values)
{
    self->fwd_set = NULL;
    if (n == 0)
        return 0;
    int prev = s_threads_enter(self), rc = -1;
    vl_net_set_t *set = s_torso_forward(self, n, obs);
    if (set && s_heads_forward(self, set, logits, values) == 0) {
        self->fwd_set = set;
        rc = 0;
    }
    s_threads_leave(self, prev);
    return rc;
}

uint32_t vl_net_width(const vl_net_t *self)
{
    return self->width;
}

int vl_net_features(vl_net_t *self, uint32_t n, const float *obs, float *features)
{
    self->fwd_set = NULL;
    if (n == 0)
        return 0;
    int prev = s_threads_enter(self), rc = -1;
    vl_net_set_t *set = s_torso_forward(self, n, obs);
    if (set) {
        memcpy(features, set->last, (size_t)n * self->width * sizeof(float));
        self->fwd_set = set;
        rc = 0;
    }
    s_threads_leave(self, prev);
    return rc;
}

int vl_net_backward_features(vl_net_t *self, uint32_t n, const float *dfeatures)
{
    vl_net_set_t *set = self->fwd_set;
    if (n == 0)
        return 0;
    if (!set || set->n != n) {
        vl_error("vl_net: backward over %u observations; the last forward was over %u", n,
                 set ? set->n : 0);
        return -1;
    }
    int prev = s_threads_enter(self);
    memcpy(set->dlast, dfeatures, (size_t)n * self->width * sizeof(float));
    int rc = vl_net_set_backward(self, set);
    s_threads_leave(self, prev);
    return rc;
}

int vl_net_backward(vl_net_t *self, uint32_t n, const float *dlogits, const float *dvalues)
{
    if (n == 0)
        return 0;
    vl_net_set_t *set = self->fwd_set;
    if (!set || set->n != n) {
        vl_error("vl_net: backward over %u observations; the last forward was over %u", n,
                 set ? set->n : 0);
        return -1;
    }
    int prev = s_threads_enter(self);
    int rc =
        s_heads_backward(self, set, dlogits, dvalues) == 0 ? vl_net_set_backward(self, set) : -1;
    s_threads_leave(self, prev);
    return rc;
}

/* ------------------------------------------------------------ accessors */

void vl_net_destroy(vl_net_t **self_p)
{
    vl_net_t *self = *self_p;
    if (!self)
        return;
    for (uint32_t k = 0; k < VL_NET_SETS; k++)
        vl_net_set_destroy(&self->sets[k]);
    vl_matmul_destroy(&self->mm);
    vl_dnnl_destroy(&self->dnnl);
    free(self->weights);
    free(self->params);
    free(self->grads);
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
        const vl_net_tensor_info_t *t = &self->tensors[i];
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
    const vl_net_tensor_info_t *s = &self->tensors[i];
    memset(t, 0, sizeof *t);
    memcpy(t->name, s->name, sizeof t->name);
    t->ndim = s->ndim;
    t->rows = s->shape[0];
    t->cols = (uint32_t)(s->size / s->shape[0]);
    for (uint32_t d = 0; s->ndim >= 3 && d < s->ndim; d++) // ranks 1, 2: rows x cols alone
        t->shape[d] = s->shape[d];
    t->data = (grads ? self->grads : self->params) + s->off;
}
