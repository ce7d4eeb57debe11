/*  vl_rnet: volley's recurrent actor-critic network; see vl_rnet.h.

    Four flat parameter arrays, each with its own gradient: the torso (a
    vl_mlp whose last layer's activation is applied here, as vl_mlp keeps
    its output layer linear), the LSTM (vl_lstm, bound to arrays this net
    owns), and the two heads (one-layer vl_mlps). */
#include "vl_rnet.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_init.h"
#include "vl_lstm.h"
#include "vl_mlp.h"
#include "vl_net.h"
#include "vl_rowdot.h"

#define S_HIDDEN_GAIN 1.41421356f // sqrt(2), CleanRL's torso gain
#define S_PI_GAIN     0.01f
#define S_V_GAIN      1.0f

struct vl_rnet_s {
    uint32_t obs_dim, outputs, hidden; // D, A, H
    uint32_t features;                 // F: what the LSTM reads (torso output, or D)
    vl_mlp_t *torso;                   // NULL when the spec has no linear layer
    vl_net_t *conv;                    // a spec with conv layers: its torso (torso NULL)
    int torso_act;                     // VL_MLP_ACT_* after the torso's last layer
    uint32_t torso_n;                  // the torso's linear layers
    vl_lstm_t *lstm;
    float *lstm_params, *lstm_grads;
    vl_mlp_t *pi, *v;
    uint32_t cap, bcap;       // rows and sequences the scratch holds
    float *feat, *dfeat;      // [cap][F]
    float *y, *dy, *dy2;      // [cap][H]
    float *h0, *c0, *h1, *c1; // [bcap][H]
    uint32_t rows;            // B*T of the last forward
    int threads;              // OpenMP threads of the LSTM's products (0: the caller's setting)
    /* an actor's (no backward follows): one linear layer of D < F inputs
       before the lstm, with no activation, is folded into its input side */
    int infer, portable;    // portable: no fold (its products run on vl_rowdot)
    float *fold_w, *fold_b; // [4H][D]: W_ih W_torso; [4H]: W_ih b_torso + b_ih + b_hh
    int fold_fresh;         // fold_w and fold_b are of the current parameters
};

/* Sets the calling thread's OpenMP thread count to the net's for a call
   (a per-thread setting, as vl_net does). Returns the count to restore. */
static int s_threads_enter(const vl_rnet_t *self)
{
    int prev = omp_get_max_threads();
    if (self->threads > 0)
        omp_set_num_threads(self->threads);
    return prev;
}

static void s_threads_leave(const vl_rnet_t *self, int prev)
{
    if (self->threads > 0)
        omp_set_num_threads(prev);
}

/* Reads the spec: its linear layers (widths and activations) before the
   lstm, and the lstm's size. Returns 0, or -1 with err. */
static int s_read_spec(const vl_model_spec_t *spec, uint32_t *widths, int *acts, uint32_t *n,
                       uint32_t *hidden, char *err, size_t errlen)
{
    *n = 0, *hidden = 0;
    for (uint32_t i = 0; i < vl_model_spec_count(spec); i++) {
        const vl_model_layer_t *l = vl_model_spec_layer(spec, i);
        if (l->kind == VL_LAYER_CONV)
            continue; // a conv torso is vl_net's to read
        if (l->kind == VL_LAYER_LINEAR && *n >= VL_MLP_MAX_LAYERS) {
            snprintf(err, errlen, "more than %d linear layers before the lstm", VL_MLP_MAX_LAYERS);
            return -1;
        }
        if (l->kind == VL_LAYER_LINEAR) {
            widths[*n] = l->out;
            acts[(*n)++] = VL_MLP_ACT_NONE;
        } else if (l->kind == VL_LAYER_LSTM) {
            *hidden = l->out;
        } else if (*n > 0) {
            acts[*n - 1] = l->kind == VL_LAYER_RELU ? VL_MLP_ACT_RELU : VL_MLP_ACT_TANH;
        }
    }
    if (!*hidden) {
        snprintf(err, errlen, "no lstm layer");
        return -1;
    }
    return 0;
}

/* Builds the torso over obs_dim of n linear layers. Returns 0, or -1. */
static int s_torso_new(vl_rnet_t *self, const uint32_t *widths, const int *acts, uint32_t n)
{
    if (self->conv)
        return 0;
    self->features = self->obs_dim;
    if (n == 0)
        return 0;
    uint32_t sizes[VL_MLP_MAX_LAYERS + 1] = {self->obs_dim};
    for (uint32_t j = 0; j < n; j++)
        sizes[j + 1] = widths[j];
    if (!(self->torso = vl_mlp_new(n, sizes)))
        return -1;
    for (uint32_t j = 0; j + 1 < n; j++)
        vl_mlp_set_activation(self->torso, j, acts[j]);
    self->torso_act = acts[n - 1];
    self->torso_n = n;
    self->features = widths[n - 1];
    return 0;
}

vl_rnet_t *vl_rnet_new(const vl_model_spec_t *spec, const vl_obs_spec_t *obs, uint32_t obs_dim,
                       uint32_t outputs, int threads, char *err, size_t errlen)
{
    uint32_t widths[VL_MLP_MAX_LAYERS], n, hidden;
    int acts[VL_MLP_MAX_LAYERS];
    if (s_read_spec(spec, widths, acts, &n, &hidden, err, errlen) != 0)
        return NULL;
    vl_rnet_t *self = calloc(1, sizeof *self);
    if (!self)
        goto nomem;
    self->obs_dim = obs_dim, self->outputs = outputs, self->hidden = hidden;
    self->threads = threads;
    uint32_t pi_sizes[2] = {hidden, outputs}, v_sizes[2] = {hidden, 1};
    if (vl_model_spec_has_conv(spec)) { // conv and linear layers on oneDNN, then the lstm
        if (!(self->conv = vl_net_new(spec, obs, 0, threads, err, errlen))) {
            vl_rnet_destroy(&self);
            return NULL;
        }
        self->features = vl_net_width(self->conv);
        n = 0;
    }
    if (s_torso_new(self, widths, acts, n) != 0 ||
        !(self->lstm = vl_lstm_new(self->features, hidden)) ||
        !(self->pi = vl_mlp_new(1, pi_sizes)) || !(self->v = vl_mlp_new(1, v_sizes)))
        goto nomem;
    size_t count = vl_lstm_param_count(self->lstm);
    self->lstm_params = calloc(count, sizeof(float));
    self->lstm_grads = calloc(count, sizeof(float));
    if (!self->lstm_params || !self->lstm_grads)
        goto nomem;
    vl_lstm_bind(self->lstm, self->lstm_params, self->lstm_grads);
    return self;
nomem:
    snprintf(err, errlen, "no memory for the network");
    vl_rnet_destroy(&self);
    return NULL;
}

void vl_rnet_destroy(vl_rnet_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_rnet_t *self = *self_p;
    vl_mlp_destroy(&self->torso);
    vl_net_destroy(&self->conv);
    vl_lstm_destroy(&self->lstm);
    vl_mlp_destroy(&self->pi);
    vl_mlp_destroy(&self->v);
    float *bufs[] = {self->lstm_params, self->lstm_grads, self->feat,  self->dfeat, self->y,
                     self->dy,          self->dy2,        self->h0,    self->c0,    self->h1,
                     self->c1,          self->fold_w,     self->fold_b};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(self);
    *self_p = NULL;
}

int vl_rnet_init(vl_rnet_t *self, vl_rng_t *rng)
{
    uint32_t H = self->hidden, F = self->features;
    double *q = malloc((size_t)4 * H * (F > H ? F : H) * sizeof(double));
    if (!q)
        return -1;
    memset(self->lstm_params, 0, vl_lstm_param_count(self->lstm) * sizeof(float));
    vl_orthogonal(self->lstm_params, 4 * H, F, 1.0f, q, rng);
    vl_orthogonal(self->lstm_params + (size_t)4 * H * F, 4 * H, H, 1.0f, q, rng);
    free(q);
    if ((self->conv && vl_net_init(self->conv, rng) != 0) ||
        (self->torso && vl_mlp_init(self->torso, rng, S_HIDDEN_GAIN, S_HIDDEN_GAIN) != 0) ||
        vl_mlp_init(self->pi, rng, S_PI_GAIN, S_PI_GAIN) != 0 ||
        vl_mlp_init(self->v, rng, S_V_GAIN, S_V_GAIN) != 0)
        return -1;
    return 0;
}

uint32_t vl_rnet_hidden(const vl_rnet_t *self)
{
    return self->hidden;
}

/* Grows buf to count floats. Returns 0, or -1 (buf unchanged). */
static int s_grow(float **buf, size_t count)
{
    float *grown = realloc(*buf, count * sizeof(float));
    if (!grown)
        return -1;
    *buf = grown;
    return 0;
}

/* Makes the scratch hold rows rows of B sequences. Returns 0, or -1. */
static int s_reserve(vl_rnet_t *self, uint32_t rows, uint32_t B)
{
    size_t F = self->features, H = self->hidden;
    if (rows > self->cap) {
        if (s_grow(&self->feat, rows * F) || s_grow(&self->dfeat, rows * F) ||
            s_grow(&self->y, rows * H) || s_grow(&self->dy, rows * H) ||
            s_grow(&self->dy2, rows * H))
            return -1;
        self->cap = rows;
    }
    if (B > self->bcap) {
        if (s_grow(&self->h0, B * H) || s_grow(&self->c0, B * H) || s_grow(&self->h1, B * H) ||
            s_grow(&self->c1, B * H))
            return -1;
        self->bcap = B;
    }
    return 0;
}

/* Applies the torso's last activation to n values in place. */
static void s_act(int act, float *x, size_t n)
{
    for (size_t i = 0; act == VL_MLP_ACT_TANH && i < n; i++)
        x[i] = tanhf(x[i]);
    for (size_t i = 0; act == VL_MLP_ACT_RELU && i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* Multiplies dx by the derivative of the activation that gave y. */
static void s_act_backward(int act, const float *y, float *dx, size_t n)
{
    for (size_t i = 0; act == VL_MLP_ACT_TANH && i < n; i++)
        dx[i] *= 1.0f - y[i] * y[i];
    for (size_t i = 0; act == VL_MLP_ACT_RELU && i < n; i++)
        dx[i] = y[i] > 0.0f ? dx[i] : 0.0f;
}

/* Returns 1 when a step of T rows may run folded: an actor's, one step,
   one linear layer before the lstm with no activation after it, fewer
   inputs than it has outputs (the fold then has less work), and the
   lstm's step products on vl_rowdot. */
static int s_folds(const vl_rnet_t *self, uint32_t T)
{
    return self->infer && T == 1 && !self->conv && self->torso_n == 1 &&
           self->torso_act == VL_MLP_ACT_NONE && self->obs_dim < self->features &&
           !self->portable && vl_rowdot_available();
}

/* Multiplies the torso's layer into the lstm's input side: fold_w = W_ih
   W_torso, fold_b = W_ih b_torso + b_ih + b_hh, each sum in one fixed
   order. It runs at the first act after each change of the weights, so it
   stays a small part of an actor's time (4H x D x F multiply-adds).
   Returns 0, or -1 on no memory. */
static int s_fold(vl_rnet_t *self)
{
    size_t D = self->obs_dim, F = self->features, G = 4 * (size_t)self->hidden;
    if ((!self->fold_w && !(self->fold_w = malloc(G * D * sizeof(float)))) ||
        (!self->fold_b && !(self->fold_b = malloc(G * sizeof(float)))))
        return -1;
    const float *wt = vl_mlp_params(self->torso) + vl_mlp_weight_offset(self->torso, 0); // [F][D]
    const float *bt = wt + F * D;
    const float *w_ih = self->lstm_params, *b_ih = w_ih + G * F + G * self->hidden;
    for (size_t j = 0; j < G; j++) { // rows of W_torso added in k order: vectorizes over D
        const float *row = w_ih + j * F;
        float *out = self->fold_w + j * D, b = b_ih[j] + b_ih[G + j];
        memset(out, 0, D * sizeof(float));
        for (size_t k = 0; k < F; k++) {
            const float a = row[k], *src = wt + k * D;
            for (size_t i = 0; i < D; i++)
                out[i] += a * src[i];
            b += a * bt[k];
        }
        self->fold_b[j] = b;
    }
    self->fold_fresh = 1;
    return 0;
}

/* The torso and the lstm over B sequences of T steps, from h0/c0 when
   has_state: a step of an actor's on the folded input side where it runs,
   else the torso then the lstm, kept for backward. Returns 0 or -1. */
static int s_core(vl_rnet_t *self, uint32_t B, uint32_t T, const float *obs, int has_state,
                  const uint8_t *reset)
{
    const float *h0 = has_state ? self->h0 : NULL, *c0 = has_state ? self->c0 : NULL;
    if (s_folds(self, T) && (self->fold_fresh || s_fold(self) == 0)) {
        int prev = s_threads_enter(self);
        int rc = vl_lstm_step_folded(self->lstm, B, obs, self->obs_dim, self->fold_w, self->fold_b,
                                     h0, c0, reset, self->y, self->h1, self->c1);
        s_threads_leave(self, prev);
        if (rc == 0)
            return 0;
    }
    uint32_t rows = B * T;
    const float *feat = obs;
    if (self->conv) {
        if (vl_net_features(self->conv, rows, obs, self->feat) != 0)
            return -1;
        feat = self->feat;
    } else if (self->torso) {
        if (vl_mlp_forward(self->torso, rows, obs, self->feat) != 0)
            return -1;
        s_act(self->torso_act, self->feat, (size_t)rows * self->features);
        feat = self->feat;
    }
    int prev = s_threads_enter(self);
    int rc = vl_lstm_forward(self->lstm, B, T, feat, h0, c0, reset, self->y, self->h1, self->c1);
    s_threads_leave(self, prev);
    return rc;
}

int vl_rnet_forward(vl_rnet_t *self, uint32_t B, uint32_t T, const float *obs, const float *state0,
                    const uint8_t *reset, float *out, float *values, float *state1)
{
    uint32_t rows = B * T, H = self->hidden;
    if (s_reserve(self, rows, B) != 0)
        return -1;
    for (uint32_t b = 0; state0 && b < B; b++) {
        memcpy(self->h0 + (size_t)b * H, state0 + (size_t)b * 2 * H, H * sizeof(float));
        memcpy(self->c0 + (size_t)b * H, state0 + (size_t)b * 2 * H + H, H * sizeof(float));
    }
    if (s_core(self, B, T, obs, state0 != NULL, reset) != 0)
        return -1;
    for (uint32_t b = 0; state1 && b < B; b++) {
        memcpy(state1 + (size_t)b * 2 * H, self->h1 + (size_t)b * H, H * sizeof(float));
        memcpy(state1 + (size_t)b * 2 * H + H, self->c1 + (size_t)b * H, H * sizeof(float));
    }
    self->rows = rows;
    if (out && vl_mlp_forward(self->pi, rows, self->y, out) != 0)
        return -1;
    if (values && vl_mlp_forward(self->v, rows, self->y, values) != 0)
        return -1;
    return 0;
}

int vl_rnet_backward(vl_rnet_t *self, const float *dout, const float *dvalues)
{
    size_t rows = self->rows, H = self->hidden, n = rows * H;
    memset(self->dy, 0, n * sizeof(float));
    if (dout) {
        if (vl_mlp_backward(self->pi, (uint32_t)rows, dout, self->dy2) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            self->dy[i] += self->dy2[i];
    }
    if (dvalues) {
        if (vl_mlp_backward(self->v, (uint32_t)rows, dvalues, self->dy2) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            self->dy[i] += self->dy2[i];
    }
    int prev = s_threads_enter(self);
    int rc = vl_lstm_backward(self->lstm, self->dy, self->torso || self->conv ? self->dfeat : NULL);
    s_threads_leave(self, prev);
    if (rc != 0)
        return -1;
    if (self->conv)
        return vl_net_backward_features(self->conv, (uint32_t)rows, self->dfeat);
    if (self->torso) {
        s_act_backward(self->torso_act, self->feat, self->dfeat, rows * self->features);
        return vl_mlp_backward(self->torso, (uint32_t)rows, self->dfeat, NULL);
    }
    return 0;
}

void vl_rnet_zero_grad(vl_rnet_t *self)
{
    if (self->torso)
        vl_mlp_zero_grad(self->torso);
    if (self->conv)
        vl_net_zero_grad(self->conv);
    memset(self->lstm_grads, 0, vl_lstm_param_count(self->lstm) * sizeof(float));
    vl_mlp_zero_grad(self->pi);
    vl_mlp_zero_grad(self->v);
}

void vl_rnet_set_inference(vl_rnet_t *self, int on)
{
    self->infer = on != 0;
}

void vl_rnet_params_changed(vl_rnet_t *self)
{
    self->fold_fresh = 0;
    if (self->conv)
        vl_net_params_changed(self->conv);
}

int vl_rnet_arrays(vl_rnet_t *self, float **params, float **grads, size_t *counts)
{
    vl_mlp_t *mlps[3] = {self->torso, self->pi, self->v};
    int k = 0;
    if (self->conv) {
        params[k] = vl_net_params(self->conv);
        grads[k] = vl_net_grads(self->conv);
        counts[k++] = vl_net_param_count(self->conv);
    }
    for (int m = 0; m < 3; m++) {
        if (m == 1) {
            params[k] = self->lstm_params;
            grads[k] = self->lstm_grads;
            counts[k++] = vl_lstm_param_count(self->lstm);
        }
        if (!mlps[m])
            continue;
        params[k] = vl_mlp_params(mlps[m]);
        grads[k] = vl_mlp_grads(mlps[m]);
        counts[k++] = vl_mlp_param_count(mlps[m]);
    }
    return k;
}

/* Returns the torso's tensors: the conv net's, or the MLP's two a layer. */
static uint32_t s_torso_tensors(const vl_rnet_t *self)
{
    return self->conv    ? vl_net_tensor_count(self->conv)
           : self->torso ? 2 * vl_mlp_layers(self->torso)
                         : 0;
}

uint32_t vl_rnet_tensor_count(const vl_rnet_t *self)
{
    return s_torso_tensors(self) + 4 + 4;
}

/* Fills t with layer l's weight or bias of net, named prefix[.l].weight. */
static void s_mlp_tensor(vl_mlp_t *net, uint32_t l, int bias, int grads, const char *prefix,
                         int numbered, vl_tensor_t *t)
{
    uint32_t in = vl_mlp_size(net, l), out = vl_mlp_size(net, l + 1);
    float *base = grads ? vl_mlp_grads(net) : vl_mlp_params(net);
    if (numbered)
        snprintf(t->name, sizeof t->name, "%s.%u.%s", prefix, l, bias ? "bias" : "weight");
    else
        snprintf(t->name, sizeof t->name, "%s.%s", prefix, bias ? "bias" : "weight");
    t->rows = out;
    t->cols = bias ? 1 : in;
    t->ndim = bias ? 1 : 2;
    t->data = base + vl_mlp_weight_offset(net, l) + (bias ? (size_t)out * in : 0);
}

void vl_rnet_tensor(vl_rnet_t *self, uint32_t i, int grads, vl_tensor_t *t)
{
    static const char *const lstm_names[4] = {"lstm.weight_ih", "lstm.weight_hh", "lstm.bias_ih",
                                              "lstm.bias_hh"};
    memset(t, 0, sizeof *t);
    uint32_t torso = s_torso_tensors(self);
    if (i < torso && self->conv) {
        vl_net_tensor(self->conv, i, grads, t);
        return;
    }
    if (i < torso) {
        s_mlp_tensor(self->torso, i / 2, i % 2, grads, "torso", 1, t);
        return;
    }
    i -= torso;
    if (i >= 4) {
        s_mlp_tensor(i < 6 ? self->pi : self->v, 0, i % 2, grads, i < 6 ? "pi" : "v", 0, t);
        return;
    }
    size_t H = self->hidden, F = self->features;
    size_t offsets[4] = {0, 4 * H * F, 4 * H * F + 4 * H * H, 4 * H * F + 4 * H * H + 4 * H};
    snprintf(t->name, sizeof t->name, "%s", lstm_names[i]);
    t->rows = (uint32_t)(4 * H);
    t->cols = i == 0 ? (uint32_t)F : i == 1 ? (uint32_t)H : 1;
    t->ndim = i < 2 ? 2 : 1;
    t->data = (grads ? self->lstm_grads : self->lstm_params) + offsets[i];
}

void vl_rnet_set_portable(vl_rnet_t *self)
{
    vl_mlp_t *mlps[3] = {self->torso, self->pi, self->v};
    for (int m = 0; m < 3; m++)
        if (mlps[m])
            vl_mlp_set_kernels(mlps[m], VL_MLP_KERNELS_PORTABLE);
    vl_lstm_set_portable(self->lstm);
    self->portable = 1;
}
